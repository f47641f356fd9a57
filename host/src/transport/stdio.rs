//! The stdio transport's byte streams.
//!
//! tokio's `stdin()` and `stdout()` run every read and every write on a
//! blocking-pool thread: a trivial tool call crossed threads about ten
//! times, and those switches were most of its round trip. When stdin and
//! stdout are pipes or sockets (how MCP clients spawn a server), they are
//! instead made non-blocking and driven by the runtime's reactor as
//! tokio's pipe ends (`tokio::net::unix::pipe`, on duplicates of the
//! descriptors). Anything else (a terminal, a file redirected in) keeps
//! tokio's streams: epoll cannot watch a regular file, and a terminal is
//! shared with the shell. The descriptors' flags are put back when the
//! streams are dropped.

use tokio::io::{AsyncRead, AsyncWrite};

/// A reader of stdin and a writer of stdout for the framing.
pub fn streams() -> (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
) {
    #[cfg(unix)]
    {
        use tokio::net::unix::pipe::{Receiver, Sender};
        let read: Box<dyn AsyncRead + Send + Unpin> =
            match unix::Pipe::new(0, Receiver::from_owned_fd_unchecked) {
                Some(pipe) => Box::new(pipe),
                None => Box::new(tokio::io::stdin()),
            };
        // Not when stderr is the same pipe (`2>&1`): the flag is shared,
        // and a log line meeting a full pipe would then fail, not wait.
        let pipe = (!unix::same_file(1, 2))
            .then(|| unix::Pipe::new(1, Sender::from_owned_fd_unchecked))
            .flatten();
        let write: Box<dyn AsyncWrite + Send + Unpin> = match pipe {
            Some(pipe) => Box::new(pipe),
            None => Box::new(tokio::io::stdout()),
        };
        (read, write)
    }
    #[cfg(not(unix))]
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    /// Stdin or stdout as one of tokio's pipe ends (`Receiver`, `Sender`;
    /// a socket is driven the same way), on a duplicate of the descriptor.
    pub struct Pipe<T> {
        end: T,
        /// The descriptor, and its flags before, restored on drop (the
        /// duplicate shares them).
        fd: RawFd,
        flags: libc::c_int,
    }

    /// `fd`'s status, if it is open.
    fn stat(fd: RawFd) -> Option<libc::stat> {
        // SAFETY: fstat only writes the struct it is given; a descriptor
        // that is not open answers an error.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        (unsafe { libc::fstat(fd, &mut stat) } == 0).then_some(stat)
    }

    /// Whether descriptors `a` and `b` are the same file (or pipe).
    pub fn same_file(a: RawFd, b: RawFd) -> bool {
        match (stat(a), stat(b)) {
            (Some(a), Some(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
            _ => false,
        }
    }

    /// Sets `fd`'s status flags.
    fn set_flags(fd: RawFd, flags: libc::c_int) -> bool {
        // SAFETY: fcntl only sets the descriptor's status flags.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags) >= 0 }
    }

    impl<T> Pipe<T> {
        /// Descriptor `fd` made non-blocking and opened as a pipe end by
        /// `open`, when it is a pipe or a socket and the reactor takes it.
        pub fn new(fd: RawFd, open: impl FnOnce(OwnedFd) -> io::Result<T>) -> Option<Self> {
            let kind = stat(fd)?.st_mode & libc::S_IFMT;
            if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
                return None;
            }
            // SAFETY: stdin and stdout stay open, as the same files, for
            // the whole life of the process; the duplicate is ours.
            let duplicate = unsafe { BorrowedFd::borrow_raw(fd) }
                .try_clone_to_owned()
                .ok()?;
            // SAFETY: fcntl only reads the descriptor's status flags.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if flags < 0 || !set_flags(fd, flags | libc::O_NONBLOCK) {
                return None;
            }
            match open(duplicate) {
                Ok(end) => Some(Self { end, fd, flags }),
                Err(_) => {
                    set_flags(fd, flags);
                    None
                }
            }
        }
    }

    impl<T> Drop for Pipe<T> {
        fn drop(&mut self) {
            // The client (or the shell) gets its descriptor back as it was.
            set_flags(self.fd, self.flags);
        }
    }

    impl<T: AsyncRead + Unpin> AsyncRead for Pipe<T> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.end).poll_read(cx, buf)
        }
    }

    impl<T: AsyncWrite + Unpin> AsyncWrite for Pipe<T> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.end).poll_write(cx, data)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.end).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.end).poll_shutdown(cx)
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::unix::{Pipe, same_file};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::unix::pipe::{Receiver, Sender};

    fn flags(fd: i32) -> i32 {
        unsafe { libc::fcntl(fd, libc::F_GETFL) }
    }

    /// Lines cross a pipe through the reactor, the end of the pipe reads
    /// as the end, and each descriptor gets its flags back when dropped.
    #[tokio::test]
    async fn a_pipe_carries_lines_and_gets_its_flags_back() {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let [r, w] = fds;
        let before = (flags(r), flags(w));
        let mut reader = Pipe::new(r, Receiver::from_owned_fd_unchecked).expect("a pipe is taken");
        let mut writer = Pipe::new(w, Sender::from_owned_fd_unchecked).expect("a pipe is taken");
        assert_ne!(flags(r) & libc::O_NONBLOCK, 0);

        // More than a pipe holds (64 KiB), so the writer must wait for the
        // reader rather than fail.
        let line = vec![b'x'; 200_000];
        let sent = line.clone();
        let writing = tokio::spawn(async move {
            writer.write_all(&sent).await.unwrap();
            writer.flush().await.unwrap();
            drop(writer);
            unsafe { libc::close(w) };
        });
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.unwrap();
        writing.await.unwrap();
        assert_eq!(got, line);
        drop(reader);
        assert_eq!(flags(r), before.0);
        unsafe { libc::close(r) };
    }

    #[test]
    fn a_regular_file_keeps_tokio_s_streams() {
        let path = std::env::temp_dir().join(format!("benchtop-stdio-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let _enter = runtime.enter();
        assert!(Pipe::new(fd, Receiver::from_owned_fd_unchecked).is_none());
        assert!(same_file(fd, fd));
    }
}
