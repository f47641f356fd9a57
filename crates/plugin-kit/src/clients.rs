//! State that belongs to one client: a plugin serving several MCP clients at
//! once (over HTTP) keeps each client's sessions apart, keyed by the id the
//! host gives the caller (`benchtop:host/caller.id`), and shares its caps
//! fairly. Another client's handle must answer exactly like an unknown one,
//! so a plugin only ever looks inside the caller's own [`PerClient`] entry.
//!
//! A client that leaves says nothing (an HTTP client just stops calling), so
//! its sessions would hold their part of the global cap until the plugin
//! restarts. [`PerClient`] therefore notes when each client last called, and
//! when a newcomer finds the global cap full, [`Room::admit`] frees the
//! sessions of the client idle longest, once it has been idle for
//! [`IDLE_AFTER`], and tells the caller so.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a client must have made no call before its sessions may be
/// freed to make room for another client under the global cap. Long enough
/// for a person reading a trace between calls; the host closes an idle
/// HTTP session after 5 minutes by default, so a client idle this long has
/// usually gone.
pub const IDLE_AFTER: Duration = Duration::from_secs(15 * 60);

/// The prefix of the caller id the host gives a client it cannot recognise
/// on its next call: an HTTP request with neither an MCP session nor a
/// `benchtop-owner` header (`benchtop:host/caller.id` says so). Each such
/// request is a new client, so whatever it creates is orphaned at once.
pub const ANONYMOUS_PREFIX: &str = "anon-";

/// Whether `caller` is an anonymous caller (see [`ANONYMOUS_PREFIX`]).
pub fn is_anonymous(caller: &str) -> bool {
    caller.starts_with(ANONYMOUS_PREFIX)
}

/// What to tell an anonymous caller that asked for lasting state.
pub const ANONYMOUS_HELP: &str = "this request names no client (neither an Mcp-Session-Id nor a benchtop-owner header), so what it created could never be found again and would only fill the plugin's caps; send `benchtop-owner: <a secret string of your own>` with every request (or use an MCP session) and call again";

/// What a client's state holds, for the caps: sessions, machines.
pub trait Holdings: Default {
    /// How many capped items this client holds.
    fn held(&self) -> usize;
    /// Bytes this client's items hold against a plugin-wide byte budget
    /// (console buffers, say); 0 when the plugin keeps none.
    fn weight(&self) -> usize {
        0
    }
    /// Where [`PerClient::with`] puts what the caller may know of the other
    /// clients for admission, and reads back what admission decided.
    fn room(&mut self) -> &mut Room;
}

struct Entry<T> {
    state: T,
    /// Monotonic (`wasi:clocks/monotonic-clock` in a component).
    last_use: Instant,
}

/// Each client's state `T`, created on first use and dropped when it holds
/// nothing, so idle clients cost nothing and the map stays bounded by the
/// global cap.
pub struct PerClient<T> {
    by_client: BTreeMap<String, Entry<T>>,
    idle_after: Duration,
}

impl<T> Default for PerClient<T> {
    fn default() -> Self {
        Self {
            by_client: BTreeMap::new(),
            idle_after: IDLE_AFTER,
        }
    }
}

impl<T: Holdings> PerClient<T> {
    /// Runs `f` on `caller`'s state, with its [`Holdings::room`] telling
    /// how many items all other clients hold (for the global cap) and which
    /// of them may be freed to make room.
    pub fn with<R>(&mut self, caller: &str, f: impl FnOnce(&mut T) -> R) -> R {
        self.with_at(caller, Instant::now(), f)
    }

    /// [`with`](Self::with) at a given time, for tests that move the clock
    /// instead of waiting for [`IDLE_AFTER`].
    pub fn with_at<R>(&mut self, caller: &str, now: Instant, f: impl FnOnce(&mut T) -> R) -> R {
        let mut mine = self
            .by_client
            .remove(caller)
            .map_or_else(T::default, |e| e.state);
        let others = self.by_client.values().map(|e| e.state.held()).sum();
        let others_weight = self.by_client.values().map(|e| e.state.weight()).sum();
        // The caller is out of the map, so its own idle time never counts.
        let idlest = self
            .by_client
            .iter()
            .map(|(c, e)| (c, e, now.saturating_duration_since(e.last_use)))
            .filter(|(_, _, idle)| *idle >= self.idle_after)
            // Among equally idle clients, the one holding most frees most.
            .max_by_key(|(_, e, idle)| (*idle, e.state.held()))
            .map(|(c, e, idle)| Idle {
                client: c.clone(),
                held: e.state.held(),
                idle,
            });
        *mine.room() = Room {
            others,
            others_weight,
            idlest,
            free_idlest: false,
            anonymous: is_anonymous(caller),
        };
        let before = mine.held();
        let out = f(&mut mine);
        let room = std::mem::take(mine.room());
        // Freed only when the admitted item was really added: a call that
        // failed after admission leaves the idle client alone, as its
        // answer (an error) does not say anything was freed.
        if room.free_idlest
            && mine.held() > before
            && let Some(idle) = room.idlest
        {
            self.by_client.remove(&idle.client);
        }
        if mine.held() > 0 {
            self.by_client.insert(
                caller.to_owned(),
                Entry {
                    state: mine,
                    last_use: now,
                },
            );
        }
        out
    }

    /// Items held by every client together.
    pub fn total(&self) -> usize {
        self.by_client.values().map(|e| e.state.held()).sum()
    }
}

/// The other clients, as far as one call may know them: how much they hold
/// and whether one has been idle long enough to be freed. Never their ids.
#[derive(Debug, Default, Clone)]
pub struct Room {
    others: usize,
    others_weight: usize,
    idlest: Option<Idle>,
    free_idlest: bool,
    anonymous: bool,
}

#[derive(Debug, Clone)]
struct Idle {
    client: String,
    held: usize,
    idle: Duration,
}

/// Why a client may not take one more item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Full {
    /// The client holds its share already.
    Mine {
        /// Items one client may hold.
        share: usize,
    },
    /// All clients together hold the global cap, and none has been idle
    /// for [`IDLE_AFTER`].
    Everyone {
        /// Items all clients together may hold.
        cap: usize,
    },
    /// The caller is anonymous ([`is_anonymous`]): it could never reach
    /// the item again. Answer with [`ANONYMOUS_HELP`].
    Anonymous,
}

/// Another client's items freed to admit the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freed {
    /// How many items (sessions, machines) were closed.
    pub items: usize,
    /// How long their client had made no call.
    pub idle: Duration,
}

impl Freed {
    /// The line for the caller's answer, e.g. "closed 3 sessions of another
    /// client, idle for 20 min, to make room"; `item` is the singular noun.
    pub fn note(&self, item: &str) -> String {
        let s = if self.items == 1 { "" } else { "s" };
        format!(
            "closed {} {item}{s} of another client, idle for {} min, to make room under the plugin's limit",
            self.items,
            self.idle.as_secs() / 60
        )
    }
}

impl Room {
    /// Items all other clients hold.
    pub fn others(&self) -> usize {
        self.others
    }

    /// Bytes all other clients' items hold ([`Holdings::weight`]), so a
    /// plugin-wide byte budget adds up over every client.
    pub fn others_weight(&self) -> usize {
        self.others_weight
    }

    /// Whether a client holding `mine` items may take one more: each client
    /// gets at most `share` (`share` below `cap` keeps one client from
    /// starving the rest), all together `cap`. When the others fill the
    /// cap, the client idle longest (past [`IDLE_AFTER`]) gives up its
    /// items, once the caller's state holds more than before the call; the
    /// caller must put the returned [`Freed::note`] in its answer. A
    /// client's own items never make room for itself.
    pub fn admit(&mut self, mine: usize, share: usize, cap: usize) -> Result<Option<Freed>, Full> {
        if self.anonymous {
            return Err(Full::Anonymous);
        }
        if mine >= share {
            return Err(Full::Mine { share });
        }
        if mine + self.others < cap {
            return Ok(None);
        }
        match &self.idlest {
            Some(idle) if !self.free_idlest && mine + self.others - idle.held < cap => {
                self.free_idlest = true;
                self.others -= idle.held;
                Ok(Some(Freed {
                    items: idle.held,
                    idle: idle.idle,
                }))
            }
            _ => Err(Full::Everyone { cap }),
        }
    }
}

/// A handle nobody can guess: 64 random bits from the system's source
/// (`wasi:random` in a component) shaped by `shape` (e.g. [`hex64`] or
/// [`json_int`]), drawn again while `taken` says the handle is in use.
pub fn mint<H>(shape: impl Fn(u64) -> H, taken: impl Fn(&H) -> bool) -> Result<H, String> {
    // A good source repeats a handle among a few dozen live ones with odds
    // of 2^-47 at worst; a source that keeps repeating is broken, and looping
    // on it would hang the call.
    for _ in 0..8 {
        let n = getrandom::u64().map_err(|e| format!("no randomness from the system: {e}"))?;
        let h = shape(n);
        if !taken(&h) {
            return Ok(h);
        }
    }
    Err("the system's random source keeps repeating itself".into())
}

/// 16 lowercase hex digits: all 64 bits, still short enough for an agent
/// to copy.
pub fn hex64(n: u64) -> String {
    format!("{n:016x}")
}

/// A positive integer of 53 random bits: the most a JSON number carries
/// exactly in every client (JavaScript's safe integers), for handles a spec
/// shows as integers.
pub fn json_int(n: u64) -> u64 {
    (n >> 11).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Bag(usize, Room);
    impl Holdings for Bag {
        fn held(&self) -> usize {
            self.0
        }
        fn room(&mut self) -> &mut Room {
            &mut self.1
        }
    }

    const SHARE: usize = 2;
    const CAP: usize = 5;

    /// Adds one item to the caller's bag if admitted.
    fn take(all: &mut PerClient<Bag>, who: &str, at: Instant) -> Result<Option<Freed>, Full> {
        all.with_at(who, at, |b| {
            let r = b.1.admit(b.0, SHARE, CAP);
            if r.is_ok() {
                b.0 += 1;
            }
            r
        })
    }

    fn mins(m: u64) -> Duration {
        Duration::from_secs(m * 60)
    }

    /// Hardening item 6: each request of a 2026-07-28 client without an
    /// owner header was a new client, so its sessions were orphaned at once
    /// and a few such calls filled the global cap for everyone.
    #[test]
    fn anonymous_callers_are_refused_lasting_items() {
        let mut all: PerClient<Bag> = PerClient::default();
        let now = Instant::now();
        for n in 0..10 {
            let who = format!("{ANONYMOUS_PREFIX}{n}");
            assert_eq!(take(&mut all, &who, now), Err(Full::Anonymous));
        }
        assert_eq!(all.total(), 0);
        assert_eq!(take(&mut all, "s-1", now), Ok(None));
        assert!(!is_anonymous("s-1") && !is_anonymous("stdio") && !is_anonymous("cli"));
    }

    #[test]
    fn clients_see_only_their_own_state_and_empty_ones_are_dropped() {
        let mut all: PerClient<Bag> = PerClient::default();
        all.with("a", |b| {
            assert_eq!(b.1.others(), 0);
            b.0 = 3;
        });
        all.with("b", |b| {
            assert_eq!((b.0, b.1.others()), (0, 3));
            b.0 = 2;
        });
        assert_eq!(all.total(), 5);
        all.with("a", |b| {
            assert_eq!((b.0, b.1.others()), (3, 2));
            b.0 = 0;
        });
        assert_eq!(
            all.by_client.len(),
            1,
            "a client holding nothing is forgotten"
        );
    }

    #[test]
    fn admission_gives_each_client_a_share_under_the_cap() {
        let t0 = Instant::now();
        let mut all: PerClient<Bag> = PerClient::default();
        assert_eq!(take(&mut all, "a", t0), Ok(None));
        assert_eq!(take(&mut all, "a", t0), Ok(None));
        assert_eq!(take(&mut all, "a", t0), Err(Full::Mine { share: 2 }));
        assert_eq!(take(&mut all, "b", t0), Ok(None));
        assert_eq!(take(&mut all, "b", t0), Ok(None));
        assert_eq!(take(&mut all, "c", t0), Ok(None));
        assert_eq!(take(&mut all, "d", t0), Err(Full::Everyone { cap: 5 }));
        assert_eq!(all.total(), 5);
    }

    #[test]
    fn a_full_cap_frees_the_longest_idle_client_and_says_so() {
        let t0 = Instant::now();
        let mut all: PerClient<Bag> = PerClient::default();
        take(&mut all, "a", t0).unwrap();
        take(&mut all, "a", t0).unwrap();
        take(&mut all, "b", t0 + mins(1)).unwrap();
        take(&mut all, "b", t0 + mins(1)).unwrap();
        take(&mut all, "c", t0 + mins(2)).unwrap();
        // Everyone active recently: the newcomer is refused.
        assert_eq!(
            take(&mut all, "d", t0 + mins(14)),
            Err(Full::Everyone { cap: CAP })
        );
        // "b" calls again (a list, say): its clock restarts.
        all.with_at("b", t0 + mins(10), |_| ());
        // 20 minutes on, "a" (idle 20) and "c" (18) qualify, "b" (10) not;
        // the idlest goes.
        let freed = take(&mut all, "d", t0 + mins(20)).unwrap().unwrap();
        assert_eq!(
            freed,
            Freed {
                items: 2,
                idle: mins(20)
            }
        );
        assert_eq!(
            freed.note("session"),
            "closed 2 sessions of another client, idle for 20 min, to make room under the plugin's limit"
        );
        assert!(!all.by_client.contains_key("a"));
        assert_eq!(all.total(), 4);
        // "a" comes back: its old handles are gone, it starts afresh.
        all.with_at("a", t0 + mins(21), |b| assert_eq!(b.0, 0));
    }

    #[test]
    fn own_idle_items_never_make_room_for_oneself() {
        let t0 = Instant::now();
        let mut all: PerClient<Bag> = PerClient::default();
        take(&mut all, "a", t0).unwrap();
        take(&mut all, "a", t0).unwrap();
        // Its own share is full however long it has idled.
        assert_eq!(
            take(&mut all, "a", t0 + mins(60)),
            Err(Full::Mine { share: SHARE })
        );
        take(&mut all, "b", t0 + mins(60)).unwrap();
        take(&mut all, "b", t0 + mins(60)).unwrap();
        take(&mut all, "c", t0 + mins(60)).unwrap();
        // "c" is at the global cap; "a" is idle 0 (it just called) so
        // nothing is freed for "c" either.
        assert_eq!(
            take(&mut all, "c", t0 + mins(61)),
            Err(Full::Everyone { cap: CAP })
        );
        assert_eq!(all.total(), 5);
    }

    #[test]
    fn nothing_is_freed_when_the_admitted_item_is_not_added() {
        let t0 = Instant::now();
        let mut all: PerClient<Bag> = PerClient::default();
        for (who, m) in [("a", 0), ("a", 0), ("b", 1), ("b", 1), ("c", 2)] {
            take(&mut all, who, t0 + mins(m)).unwrap();
        }
        // Admitted, but the creation failed afterwards (a bad path, say).
        let r = all.with_at("d", t0 + mins(30), |b| b.1.admit(b.0, SHARE, CAP));
        assert!(matches!(r, Ok(Some(_))));
        assert_eq!(all.total(), 5, "the idle client keeps its items");
        // The same call succeeding frees the idlest ("a", 2 items).
        let freed = take(&mut all, "d", t0 + mins(30)).unwrap().unwrap();
        assert_eq!(freed.items, 2);
        assert_eq!(all.total(), 4);
        assert!(!all.by_client.contains_key("a"));
    }

    #[test]
    fn minted_handles_are_random_shaped_and_free() {
        let a = mint(hex64, |_| false).unwrap();
        let b = mint(hex64, |_| false).unwrap();
        assert_eq!(a.len(), 16);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
        let n = mint(json_int, |_| false).unwrap();
        assert!((1..1u64 << 53).contains(&n), "{n}");
        assert_eq!(json_int(0), 1, "never 0");
        assert_eq!(json_int(u64::MAX), (1 << 53) - 1);
        // A handle in use is drawn again; a source that only repeats is an
        // error, not a hang.
        let first = mint(hex64, |_| false).unwrap();
        assert_ne!(mint(hex64, |h| *h == first).unwrap(), first);
        assert!(mint(|_| 7u8, |_| true).is_err());
    }
}
