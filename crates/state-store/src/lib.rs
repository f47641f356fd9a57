//! The state store benchtop replicas share (docs/design.md, Contract 9):
//! for each stateful handle (a session, a machine) of each client, its
//! latest snapshot, a version that grows with every change, the replica
//! holding it when it cannot move, and the last answered call's
//! idempotency key with its answer. A lease names the one call running on
//! the handle at a time, anywhere.
//!
//! It is kept in Redis (or Valkey, which speaks the same protocol), one
//! hash and one lease key per handle, changed only by short Lua scripts so
//! every step is atomic on the server:
//!
//! | key | holds |
//! |---|---|
//! | `bt:{plugin/owner/handle}:lease` | the token of the call running on it, with a time to live |
//! | `bt:{plugin/owner/handle}:data` | `ver`, `snap`, `pin`, `gone`, `key`, `answer`; expires when idle |
//!
//! Nothing here knows what a handle holds; the host decides what to save.

mod resp;

pub use resp::{Connection, Reply};
use std::sync::Mutex;
use std::time::Duration;

/// What went wrong talking to the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The connection failed or broke.
    #[error("the state store cannot be reached: {0}")]
    Io(#[from] std::io::Error),
    /// The store answered something this client does not read.
    #[error("the state store answered out of protocol: {0}")]
    Protocol(String),
    /// The store refused a command.
    #[error("the state store refused: {0}")]
    Server(String),
    /// The store's address is not `redis://host:port[/db]`.
    #[error("not a state store address: {0} (expected redis://host:port, optionally /db)")]
    Address(String),
}

/// Connections kept open for reuse.
const POOL: usize = 32;

/// A handle's key in the store: which plugin, which client, which handle.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key(String);

impl Key {
    /// The key of `handle` of `owner` in `plugin`. The braces keep a
    /// handle's two keys in one slot of a Redis Cluster.
    pub fn new(plugin: &str, owner: &str, handle: &str) -> Self {
        Key(format!("bt:{{{plugin}/{owner}/{handle}}}"))
    }

    fn lease(&self) -> String {
        format!("{}:lease", self.0)
    }

    fn data(&self) -> String {
        format!("{}:data", self.0)
    }
}

/// What the store holds for a handle, as a call finds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Grows with every change; 0 when the store has never held it.
    pub version: u64,
    /// The replica holding it because its state cannot move.
    pub pinned: Option<String>,
    /// It was ended (destroyed) on some replica.
    pub gone: bool,
    /// The idempotency key of the last call answered on it.
    pub answered: Option<String>,
}

/// The outcome of asking for a handle's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// This call holds the lease; the record as it stands.
    Granted(Record),
    /// Another call holds it: its token and how long the lease has left.
    Busy {
        /// The holder's lease token (`replica/nonce`).
        holder: String,
        /// Time left on its lease.
        left: Duration,
    },
}

/// What a call did to a handle, written when it lets the lease go.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Nothing to write (the call only read).
    Keep,
    /// The new snapshot.
    Save(&'a [u8]),
    /// The state cannot move; this replica (named) holds it.
    Pin(&'a str),
    /// The handle ended.
    Close,
}

const ACQUIRE: &str = r"
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return {0, cur, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local d = redis.call('HMGET', KEYS[2], 'ver', 'pin', 'gone', 'key')
return {1, d[1], d[2], d[3], d[4]}
";

const COMMIT: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local kind = ARGV[2]
if kind == 'save' then
  redis.call('HSET', KEYS[2], 'snap', ARGV[3])
  redis.call('HDEL', KEYS[2], 'pin', 'gone')
  redis.call('HINCRBY', KEYS[2], 'ver', 1)
elseif kind == 'pin' then
  redis.call('HSET', KEYS[2], 'pin', ARGV[3])
  redis.call('HDEL', KEYS[2], 'snap', 'gone')
  redis.call('HINCRBY', KEYS[2], 'ver', 1)
elseif kind == 'close' then
  redis.call('HDEL', KEYS[2], 'snap', 'pin')
  redis.call('HSET', KEYS[2], 'gone', '1')
  redis.call('HINCRBY', KEYS[2], 'ver', 1)
end
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], 'key', ARGV[4], 'answer', ARGV[5])
end
local ver = tonumber(redis.call('HGET', KEYS[2], 'ver') or '0')
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
redis.call('DEL', KEYS[1])
return ver
";

const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
";

/// A connection pool to one store.
pub struct Store {
    addr: String,
    db: Option<String>,
    pool: Mutex<Vec<Connection>>,
}

fn millis(d: Duration) -> Vec<u8> {
    d.as_millis().max(1).to_string().into_bytes()
}

fn opt_text(r: Option<&Reply>) -> Option<String> {
    r.and_then(Reply::text)
}

impl Store {
    /// A store at `url`: `redis://host:port`, optionally `/db`. Nothing is
    /// connected until the first command.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| StoreError::Address(url.into()))?;
        let (addr, db) = match rest.split_once('/') {
            Some((a, d)) if !d.is_empty() => {
                d.parse::<u16>()
                    .map_err(|_| StoreError::Address(url.into()))?;
                (a, Some(d.to_owned()))
            }
            Some((a, _)) => (a, None),
            None => (rest, None),
        };
        if addr.is_empty() || addr.contains('@') || !addr.contains(':') {
            return Err(StoreError::Address(url.into()));
        }
        Ok(Self {
            addr: addr.to_owned(),
            db,
            pool: Mutex::new(Vec::new()),
        })
    }

    /// `host:port` of the store.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// Runs one command on a pooled connection; a broken connection is
    /// dropped, not pooled again.
    pub async fn call(&self, args: &[&[u8]]) -> Result<Reply, StoreError> {
        let pooled = self.pool.lock().expect("pool lock").pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => {
                let mut c = Connection::connect(&self.addr).await?;
                if let Some(db) = &self.db {
                    c.call(&[b"SELECT", db.as_bytes()]).await?;
                }
                c
            }
        };
        let reply = conn.call(args).await;
        match &reply {
            Ok(_) | Err(StoreError::Server(_)) => {
                let mut pool = self.pool.lock().expect("pool lock");
                if pool.len() < POOL {
                    pool.push(conn);
                }
            }
            Err(_) => {}
        }
        reply
    }

    /// Whether the store answers (a readiness check).
    pub async fn ping(&self) -> Result<(), StoreError> {
        match self.call(&[b"PING"]).await? {
            Reply::Status(s) if s == "PONG" => Ok(()),
            other => Err(StoreError::Protocol(format!("PING answered {other:?}"))),
        }
    }

    async fn script(&self, body: &str, key: &Key, args: &[&[u8]]) -> Result<Reply, StoreError> {
        let (lease, data) = (key.lease(), key.data());
        let mut all: Vec<&[u8]> = vec![
            b"EVAL",
            body.as_bytes(),
            b"2",
            lease.as_bytes(),
            data.as_bytes(),
        ];
        all.extend_from_slice(args);
        self.call(&all).await
    }

    /// Takes the lease of `key` for `ttl` under `token` (or renews it, when
    /// `token` holds it), unless another call holds it.
    pub async fn acquire(
        &self,
        key: &Key,
        token: &str,
        ttl: Duration,
    ) -> Result<Acquired, StoreError> {
        let reply = self
            .script(ACQUIRE, key, &[token.as_bytes(), &millis(ttl)])
            .await?;
        let Reply::Array(parts) = reply else {
            return Err(StoreError::Protocol(format!("acquire answered {reply:?}")));
        };
        match parts.first().and_then(Reply::int) {
            Some(0) => Ok(Acquired::Busy {
                holder: opt_text(parts.get(1)).unwrap_or_default(),
                left: Duration::from_millis(
                    parts.get(2).and_then(Reply::int).unwrap_or(0).max(0) as u64
                ),
            }),
            Some(1) => Ok(Acquired::Granted(Record {
                version: parts.get(1).and_then(Reply::int).unwrap_or(0).max(0) as u64,
                pinned: opt_text(parts.get(2)),
                gone: parts.get(3).is_some_and(|r| *r != Reply::Nil),
                answered: opt_text(parts.get(4)),
            })),
            _ => Err(StoreError::Protocol(format!("acquire answered {parts:?}"))),
        }
    }

    /// Extends the lease `token` holds; false when it holds it no more.
    pub async fn renew(&self, key: &Key, token: &str, ttl: Duration) -> Result<bool, StoreError> {
        let r = self
            .script(RENEW, key, &[token.as_bytes(), &millis(ttl)])
            .await?;
        Ok(r.int() == Some(1))
    }

    /// The handle's latest snapshot, if the store holds one.
    pub async fn snapshot(&self, key: &Key) -> Result<Option<Vec<u8>>, StoreError> {
        match self
            .call(&[b"HGET", key.data().as_bytes(), b"snap"])
            .await?
        {
            Reply::Bulk(b) => Ok(Some(b)),
            _ => Ok(None),
        }
    }

    /// The answer kept with the last idempotency key.
    pub async fn answer(&self, key: &Key) -> Result<Option<String>, StoreError> {
        Ok(self
            .call(&[b"HGET", key.data().as_bytes(), b"answer"])
            .await?
            .text())
    }

    /// Writes what the call did (`change`, and its answer under its
    /// idempotency key), keeps the record for `idle` more, and lets the
    /// lease go. The new version, or `None` when `token` had lost the
    /// lease (it expired and another call took it): nothing was written.
    pub async fn commit(
        &self,
        key: &Key,
        token: &str,
        change: Change<'_>,
        answered: Option<(&str, &str)>,
        idle: Duration,
    ) -> Result<Option<u64>, StoreError> {
        let (kind, payload): (&[u8], &[u8]) = match change {
            Change::Keep => (b"keep", b""),
            Change::Save(b) => (b"save", b),
            Change::Pin(r) => (b"pin", r.as_bytes()),
            Change::Close => (b"close", b""),
        };
        let (idem, answer) = answered.unwrap_or(("", ""));
        let r = self
            .script(
                COMMIT,
                key,
                &[
                    token.as_bytes(),
                    kind,
                    payload,
                    idem.as_bytes(),
                    answer.as_bytes(),
                    &millis(idle),
                ],
            )
            .await?;
        Ok(r.int().filter(|v| *v >= 0).map(|v| v as u64))
    }
}

/// Starts a throwaway `redis-server` on loopback `port`, in memory only
/// (no snapshots, no append-only file) and killed when the child is
/// dropped: the store of tests and benchmarks.
pub fn spawn_local_redis(port: u16) -> std::io::Result<tokio::process::Child> {
    tokio::process::Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_before_anything_connects() {
        assert_eq!(
            Store::new("redis://127.0.0.1:6379").unwrap().address(),
            "127.0.0.1:6379"
        );
        assert!(Store::new("redis://127.0.0.1:6379/2").is_ok());
        for bad in [
            "127.0.0.1:6379",
            "redis://",
            "redis://host",
            "redis://h:1/x",
            "redis://u:p@h:1",
        ] {
            let e = Store::new(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(e.to_string().contains("redis://host:port"), "{e}");
        }
    }

    #[test]
    fn a_handles_keys_share_one_cluster_slot() {
        let k = Key::new("cp1600", "o-12", "session_ab");
        assert_eq!(k.lease(), "bt:{cp1600/o-12/session_ab}:lease");
        assert_eq!(k.data(), "bt:{cp1600/o-12/session_ab}:data");
    }

    /// A real Redis on loopback, when this machine has one
    /// (`redis-server`, installed by `.ci/run`); skipped otherwise.
    async fn redis() -> Option<(tokio::process::Child, Store)> {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
            l.local_addr().ok()?.port()
        };
        let child = spawn_local_redis(port);
        let Ok(child) = child else {
            eprintln!("redis-server not found: skipped");
            return None;
        };
        let store = Store::new(&format!("redis://127.0.0.1:{port}")).unwrap();
        for _ in 0..100 {
            if store.ping().await.is_ok() {
                return Some((child, store));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("redis-server did not answer");
    }

    #[tokio::test]
    async fn leases_exclude_versions_grow_and_answers_are_kept() {
        let Some((_redis, store)) = redis().await else {
            return;
        };
        let key = Key::new("p", "o", "h");
        let ttl = Duration::from_secs(5);
        let idle = Duration::from_secs(60);
        let Acquired::Granted(first) = store.acquire(&key, "r1/a", ttl).await.unwrap() else {
            panic!("a free handle")
        };
        assert_eq!(first, Record::default());
        // Another call, on any replica, waits for the lease.
        let busy = store.acquire(&key, "r2/b", ttl).await.unwrap();
        assert!(
            matches!(&busy, Acquired::Busy { holder, left } if holder == "r1/a" && *left > Duration::from_secs(4)),
            "{busy:?}"
        );
        let v = store
            .commit(
                &key,
                "r1/a",
                Change::Save(b"\x00snap\xff"),
                Some(("k1", "{\"ok\":1}")),
                idle,
            )
            .await
            .unwrap();
        assert_eq!(v, Some(1));
        assert_eq!(
            store.snapshot(&key).await.unwrap().unwrap(),
            b"\x00snap\xff"
        );
        let Acquired::Granted(r) = store.acquire(&key, "r2/b", ttl).await.unwrap() else {
            panic!("released")
        };
        assert_eq!((r.version, r.answered.as_deref()), (1, Some("k1")));
        assert_eq!(
            store.answer(&key).await.unwrap().as_deref(),
            Some("{\"ok\":1}")
        );
        // A lease lost to expiry writes nothing.
        assert_eq!(
            store
                .commit(&key, "r1/a", Change::Close, None, idle)
                .await
                .unwrap(),
            None
        );
        assert!(store.renew(&key, "r2/b", ttl).await.unwrap());
        assert!(!store.renew(&key, "r1/a", ttl).await.unwrap());
        assert_eq!(
            store
                .commit(&key, "r2/b", Change::Pin("r2"), None, idle)
                .await
                .unwrap(),
            Some(2)
        );
        let Acquired::Granted(r) = store.acquire(&key, "r3/c", ttl).await.unwrap() else {
            panic!()
        };
        assert_eq!((r.version, r.pinned.as_deref()), (2, Some("r2")));
        assert_eq!(store.snapshot(&key).await.unwrap(), None);
        assert_eq!(
            store
                .commit(&key, "r3/c", Change::Close, None, idle)
                .await
                .unwrap(),
            Some(3)
        );
        let Acquired::Granted(r) = store.acquire(&key, "r3/d", ttl).await.unwrap() else {
            panic!()
        };
        assert!(r.gone && r.pinned.is_none(), "{r:?}");
    }

    #[tokio::test]
    async fn an_expired_lease_frees_the_handle_and_errors_are_typed() {
        let Some((_redis, store)) = redis().await else {
            return;
        };
        let key = Key::new("p", "o", "dead");
        store
            .acquire(&key, "dead/1", Duration::from_millis(50))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(matches!(
            store
                .acquire(&key, "alive/2", Duration::from_secs(1))
                .await
                .unwrap(),
            Acquired::Granted(_)
        ));
        let e = store.call(&[b"NOSUCHCOMMAND"]).await.unwrap_err();
        assert!(matches!(e, StoreError::Server(_)), "{e}");
        // The connection is still usable after an error reply.
        store.ping().await.unwrap();
        let gone = Store::new("redis://127.0.0.1:1").unwrap();
        assert!(matches!(gone.ping().await, Err(StoreError::Io(_))));
    }
}
