//! The stdio transport's byte streams.
//!
//! tokio's `stdin()` and `stdout()` run every read and every write on a
//! blocking-pool thread: a trivial tool call crossed threads about ten
//! times, and those switches were most of its round trip. When stdin and
//! stdout are pipes or sockets (how MCP clients spawn a server), they are
//! instead made non-blocking and driven by the runtime's reactor, as a
//! socket is. Anything else (a terminal, a file redirected in) keeps
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
        use tokio::io::Interest;
        let read: Box<dyn AsyncRead + Send + Unpin> = match unix::Pipe::new(0, Interest::READABLE) {
            Some(pipe) => Box::new(pipe),
            None => Box::new(tokio::io::stdin()),
        };
        // Not when stderr is the same pipe (`2>&1`): the flag is shared,
        // and a log line meeting a full pipe would then fail, not wait.
        let pipe = (!unix::same_file(1, 2))
            .then(|| unix::Pipe::new(1, Interest::WRITABLE))
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
    use std::os::fd::{AsRawFd, RawFd};
    use std::pin::Pin;
    use std::task::{Context, Poll, ready};
    use tokio::io::unix::AsyncFd;
    use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

    /// A descriptor this process did not open: never closed here.
    struct Borrowed(RawFd);

    impl AsRawFd for Borrowed {
        fn as_raw_fd(&self) -> RawFd {
            self.0
        }
    }

    /// Stdin or stdout as a non-blocking pipe (or socket) in the reactor.
    pub struct Pipe {
        fd: AsyncFd<Borrowed>,
        /// The descriptor's flags before, restored on drop.
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

    impl Pipe {
        /// Descriptor `fd` as a [`Pipe`] watched for `interest`, when it is
        /// a pipe or a socket and the reactor accepts it.
        pub fn new(fd: RawFd, interest: Interest) -> Option<Self> {
            let kind = stat(fd)?.st_mode & libc::S_IFMT;
            if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
                return None;
            }
            // SAFETY: fcntl reads and sets the descriptor's status flags.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
            {
                return None;
            }
            // SAFETY: stdin and stdout stay open, as the same files, for
            // the whole life of the process; nothing here closes them.
            match unsafe { AsyncFd::register_with_interest(Borrowed(fd), interest) } {
                Ok(fd) => Some(Self { fd, flags }),
                Err(_) => {
                    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
                    None
                }
            }
        }
    }

    impl Drop for Pipe {
        fn drop(&mut self) {
            // The client (or the shell) gets its descriptor back as it was.
            unsafe { libc::fcntl(self.fd.get_ref().0, libc::F_SETFL, self.flags) };
        }
    }

    /// The result of a read(2) or write(2).
    fn done(n: isize) -> io::Result<usize> {
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    impl AsyncRead for Pipe {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            loop {
                let mut ready = ready!(self.fd.poll_read_ready(cx))?;
                let unfilled = buf.initialize_unfilled();
                let read = ready.try_io(|fd| {
                    // SAFETY: `unfilled` is initialized and this long.
                    done(unsafe {
                        libc::read(fd.get_ref().0, unfilled.as_mut_ptr().cast(), unfilled.len())
                    })
                });
                match read {
                    Ok(Ok(n)) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Ok(Err(e)) => return Poll::Ready(Err(e)),
                    Err(_would_block) => continue,
                }
            }
        }
    }

    impl AsyncWrite for Pipe {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            loop {
                let mut ready = ready!(self.fd.poll_write_ready(cx))?;
                let written = ready.try_io(|fd| {
                    // SAFETY: `data` is this long.
                    done(unsafe { libc::write(fd.get_ref().0, data.as_ptr().cast(), data.len()) })
                });
                match written {
                    Ok(result) => return Poll::Ready(result),
                    Err(_would_block) => continue,
                }
            }
        }

        // Nothing is buffered here: each write went to the descriptor.
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::unix::{Pipe, same_file};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};

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
        let mut reader = Pipe::new(r, Interest::READABLE).expect("a pipe is taken");
        let mut writer = Pipe::new(w, Interest::WRITABLE).expect("a pipe is taken");
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
        assert!(Pipe::new(fd, Interest::READABLE).is_none());
        assert!(same_file(fd, fd));
    }
}
