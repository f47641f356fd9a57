//! Just enough of RESP2, the Redis protocol (which Valkey and KeyDB also
//! speak), to send commands and read their replies: arrays of bulk strings
//! out, the five reply kinds in.

use crate::StoreError;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Largest bulk reply read: a snapshot is at most a few MiB compressed.
const MAX_BULK: usize = 64 << 20;
/// Most elements of an array reply: the store's replies hold a handful.
const MAX_ARRAY: usize = 1024;

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `$-1` or `*-1`: no value (also Lua's `false`).
    Nil,
    /// `+OK` and the like.
    Status(String),
    /// `:n`.
    Int(i64),
    /// `$n` bytes.
    Bulk(Vec<u8>),
    /// `*n` replies.
    Array(Vec<Reply>),
}

impl Reply {
    /// The reply as text, when it is a bulk or status string.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Reply::Status(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// The reply as an integer (an integer reply, or digits in a string).
    pub fn int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            other => other.text()?.parse().ok(),
        }
    }
}

/// One connection to the store.
pub struct Connection {
    stream: BufReader<TcpStream>,
}

impl Connection {
    /// Connects to `addr` (`host:port`).
    pub async fn connect(addr: &str) -> Result<Self, StoreError> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream: BufReader::new(stream),
        })
    }

    /// Sends one command and reads its reply; a Redis error reply is
    /// [`StoreError::Server`].
    pub async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, StoreError> {
        let mut out = Vec::with_capacity(64 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.get_mut().write_all(&out).await?;
        self.read().await
    }

    async fn line(&mut self) -> Result<String, StoreError> {
        let mut line = Vec::new();
        let n = (&mut self.stream)
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Err(StoreError::Protocol(
                "the store closed the connection".into(),
            ));
        }
        if !line.ends_with(b"\r\n") {
            return Err(StoreError::Protocol("a reply line without CRLF".into()));
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).map_err(|_| StoreError::Protocol("a reply line not UTF-8".into()))
    }

    fn read(
        &mut self,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Reply, StoreError>> + Send + '_>> {
        Box::pin(async move {
            let line = self.line().await?;
            let (kind, rest) = line.split_at(line.len().min(1));
            let number = || {
                rest.parse::<i64>()
                    .map_err(|_| StoreError::Protocol(format!("a bad length or number: {rest:?}")))
            };
            match kind {
                "+" => Ok(Reply::Status(rest.to_owned())),
                "-" => Err(StoreError::Server(rest.to_owned())),
                ":" => Ok(Reply::Int(number()?)),
                "$" => {
                    let n = number()?;
                    if n < 0 {
                        return Ok(Reply::Nil);
                    }
                    let n = n as usize;
                    if n > MAX_BULK {
                        return Err(StoreError::Protocol(format!("a {n}-byte reply")));
                    }
                    let mut buf = vec![0; n + 2];
                    self.stream.read_exact(&mut buf).await?;
                    buf.truncate(n);
                    Ok(Reply::Bulk(buf))
                }
                "*" => {
                    let n = number()?;
                    if n < 0 {
                        return Ok(Reply::Nil);
                    }
                    if n as usize > MAX_ARRAY {
                        return Err(StoreError::Protocol(format!("an array of {n} replies")));
                    }
                    let mut all = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        all.push(self.read().await?);
                    }
                    Ok(Reply::Array(all))
                }
                _ => Err(StoreError::Protocol(format!("an unknown reply: {line:?}"))),
            }
        })
    }
}
