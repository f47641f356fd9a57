//! State that belongs to one client: a plugin serving several MCP clients at
//! once (over HTTP) keeps each client's sessions apart, keyed by the id the
//! host gives the caller (`benchtop:host/caller.id`), and shares its caps
//! fairly. Another client's handle must answer exactly like an unknown one,
//! so a plugin only ever looks inside the caller's own [`PerClient`] entry.

use std::collections::BTreeMap;

/// What a client's state holds, for the caps: sessions, machines.
pub trait Holdings: Default {
    /// How many capped items this client holds.
    fn held(&self) -> usize;
}

/// Each client's state `T`, created on first use and dropped when it holds
/// nothing, so idle clients cost nothing and the map stays bounded by the
/// global cap.
#[derive(Debug)]
pub struct PerClient<T> {
    by_client: BTreeMap<String, T>,
}

impl<T> Default for PerClient<T> {
    fn default() -> Self {
        Self {
            by_client: BTreeMap::new(),
        }
    }
}

impl<T: Holdings> PerClient<T> {
    /// Runs `f` on `caller`'s state, passing how many items all other
    /// clients hold (for the global cap).
    pub fn with<R>(&mut self, caller: &str, f: impl FnOnce(&mut T, usize) -> R) -> R {
        let others: usize = self
            .by_client
            .iter()
            .filter(|(c, _)| c.as_str() != caller)
            .map(|(_, t)| t.held())
            .sum();
        let mut mine = self.by_client.remove(caller).unwrap_or_default();
        let out = f(&mut mine, others);
        if mine.held() > 0 {
            self.by_client.insert(caller.to_owned(), mine);
        }
        out
    }

    /// Items held by every client together.
    pub fn total(&self) -> usize {
        self.by_client.values().map(Holdings::held).sum()
    }
}

/// Why a client may not take one more item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Full {
    /// The client holds its share already.
    Mine { share: usize },
    /// All clients together hold the global cap.
    Everyone { cap: usize },
}

/// Whether a client holding `mine` items may take one more, when the others
/// hold `others`: each client gets at most `share`, all together `cap`.
/// `share` below `cap` keeps one client from starving the rest.
pub fn admit(mine: usize, others: usize, share: usize, cap: usize) -> Result<(), Full> {
    if mine >= share {
        Err(Full::Mine { share })
    } else if mine + others >= cap {
        Err(Full::Everyone { cap })
    } else {
        Ok(())
    }
}

/// 64 random bits from the system's source (`wasi:random` in a component),
/// as 16 lowercase hex digits: a handle nobody can guess, still short
/// enough for an agent to copy.
pub fn random_hex64() -> Result<String, String> {
    getrandom::u64()
        .map(|n| format!("{n:016x}"))
        .map_err(|e| format!("no randomness from the system: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Bag(usize);
    impl Holdings for Bag {
        fn held(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn clients_see_only_their_own_state_and_empty_ones_are_dropped() {
        let mut all: PerClient<Bag> = PerClient::default();
        all.with("a", |b, others| {
            assert_eq!(others, 0);
            b.0 = 3;
        });
        all.with("b", |b, others| {
            assert_eq!((b.0, others), (0, 3));
            b.0 = 2;
        });
        assert_eq!(all.total(), 5);
        all.with("a", |b, others| {
            assert_eq!((b.0, others), (3, 2));
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
        assert_eq!(admit(0, 0, 2, 5), Ok(()));
        assert_eq!(admit(2, 0, 2, 5), Err(Full::Mine { share: 2 }));
        assert_eq!(admit(1, 4, 2, 5), Err(Full::Everyone { cap: 5 }));
        assert_eq!(admit(1, 3, 2, 5), Ok(()));
    }

    #[test]
    fn random_handles_are_64_bits_of_hex_and_differ() {
        let a = random_hex64().unwrap();
        let b = random_hex64().unwrap();
        assert_eq!(a.len(), 16);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
