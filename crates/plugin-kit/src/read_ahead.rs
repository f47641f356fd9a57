//! Reading a large file while the host fetches the next piece of it.
//!
//! Inside the sandbox every read is a call to the host, which reads at most
//! 64 KiB on a thread of its own and hands the bytes back; `std::fs` waits
//! for each of those round trips in turn. [`ReadAhead`] uses the
//! `wasi:io/streams` interface directly instead: as soon as it has a piece,
//! it asks for the next one, so the host reads it on its own thread while
//! the plugin works on the piece it has. On a 67 MB datalog that hides most
//! of the reading time behind the parsing.
//!
//! Outside a `wasm32-wasip2` component (unit tests, native benchmarks), and
//! wherever the stream cannot be opened, it is a plain [`std::fs::File`].

use std::io::Read;
use std::path::Path;

/// A file opened for reading front to back, one piece ahead where the
/// platform allows it. See the [module docs](self).
pub struct ReadAhead {
    inner: Inner,
}

enum Inner {
    File(std::fs::File),
    #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
    Stream(stream::Ahead),
}

impl ReadAhead {
    /// Opens a regular file (see [`crate::paths::open_regular_file`] for
    /// what is refused).
    pub fn open(path: &Path) -> std::io::Result<ReadAhead> {
        #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
        {
            crate::paths::refuse_irregular(path)?;
            if let Some(ahead) = stream::Ahead::open(path) {
                return Ok(ReadAhead {
                    inner: Inner::Stream(ahead),
                });
            }
        }
        Ok(ReadAhead {
            inner: Inner::File(crate::paths::open_regular_file(path)?),
        })
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.inner {
            Inner::File(file) => file.read(out),
            #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
            Inner::Stream(ahead) => ahead.read(out),
        }
    }
}

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
mod stream {
    use std::path::Path;
    use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};
    use wasip2::io::streams::{InputStream, StreamError};

    /// How much to ask the host for at a time (its own cap per read).
    const PIECE: u64 = 64 << 10;

    /// A `wasi:io` input stream over a file, with one read always under way.
    pub(super) struct Ahead {
        // Declared before `_file`: a stream must be dropped before the
        // descriptor it reads from.
        stream: InputStream,
        _file: Descriptor,
        /// Bytes received and not yet handed out, from `at` on.
        pending: Vec<u8>,
        at: usize,
        /// The stream has ended (or failed with `failed`).
        ended: bool,
        failed: Option<String>,
    }

    impl Ahead {
        /// Opens `path` through the preopened directory that holds it (the
        /// longest match); `None` when that is not possible, for the caller
        /// to use `std::fs` instead.
        pub(super) fn open(path: &Path) -> Option<Ahead> {
            let (dir, rel) = wasip2::filesystem::preopens::get_directories()
                .into_iter()
                .filter_map(|(dir, root)| {
                    let rel = path.strip_prefix(&root).ok()?.to_str()?.to_string();
                    Some((root.len(), dir, rel))
                })
                .max_by_key(|(len, _, _)| *len)
                .map(|(_, dir, rel)| (dir, rel))?;
            let rel = if rel.is_empty() { ".".to_string() } else { rel };
            let file = dir
                .open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    &rel,
                    OpenFlags::empty(),
                    DescriptorFlags::READ,
                )
                .ok()?;
            let stream = file.read_via_stream(0).ok()?;
            let mut ahead = Ahead {
                stream,
                _file: file,
                pending: Vec::new(),
                at: 0,
                ended: false,
                failed: None,
            };
            ahead.request();
            Some(ahead)
        }

        /// Asks for the next piece without waiting for it. (A host that
        /// answers at once hands the bytes over here; they are kept.)
        fn request(&mut self) {
            match self.stream.read(PIECE) {
                Ok(bytes) => {
                    if self.at == self.pending.len() {
                        self.pending = bytes;
                        self.at = 0;
                    } else {
                        self.pending.extend_from_slice(&bytes);
                    }
                }
                Err(StreamError::Closed) => self.ended = true,
                Err(StreamError::LastOperationFailed(e)) => {
                    self.ended = true;
                    self.failed = Some(e.to_debug_string());
                }
            }
        }

        pub(super) fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            loop {
                let have = &self.pending[self.at..];
                if !have.is_empty() {
                    let n = have.len().min(out.len());
                    out[..n].copy_from_slice(&have[..n]);
                    self.at += n;
                    return Ok(n);
                }
                if self.ended {
                    return match self.failed.take() {
                        Some(e) => Err(std::io::Error::other(e)),
                        None => Ok(0),
                    };
                }
                // Wait for the piece under way, take it, and ask for the
                // next one before handing this one out.
                self.stream.subscribe().block();
                self.request();
                if self.at < self.pending.len() && !self.ended {
                    self.request();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_file_front_to_back() {
        let dir = std::env::temp_dir().join(format!("plugin-kit-ahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.bin");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut back = Vec::new();
        ReadAhead::open(&path)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
        assert!(ReadAhead::open(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
