//! Reading a large file front to back in the host's largest pieces.
//!
//! Inside the sandbox every read is a call to the host, which reads at most
//! 64 KiB per call. [`FileStream`] reads a file through a `wasi:io/streams`
//! input stream, one blocking read of a whole piece per call, on the
//! plugin's own thread.
//!
//! Measured on a fresh first `query_logs` of a 67 MB CSV (docs/design.md,
//! "A log is read in the host's pieces"), this beats both `std::fs`, whose
//! reads go through wasi-libc, and asking for the next piece before parsing
//! the last one: such a read ahead runs on a host thread that has to be
//! woken for every piece, which cost the plugin's thread more than the
//! copy it moved away, whether the file was in the page cache or not.
//!
//! Outside a `wasm32-wasip2` component (unit tests, native benchmarks), and
//! wherever the stream cannot be opened, it is a plain [`std::fs::File`].

use std::io::Read;
use std::path::Path;

/// A file opened for reading front to back. See the [module docs](self).
pub struct FileStream {
    inner: Inner,
}

enum Inner {
    File(std::fs::File),
    #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
    Stream(stream::Pieces),
}

impl FileStream {
    /// Opens a regular file (see [`crate::paths::open_regular_file`] for
    /// what is refused).
    pub fn open(path: &Path) -> std::io::Result<FileStream> {
        #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
        {
            crate::paths::refuse_irregular(path)?;
            if let Some(pieces) = stream::Pieces::open(path) {
                return Ok(FileStream {
                    inner: Inner::Stream(pieces),
                });
            }
        }
        Ok(FileStream {
            inner: Inner::File(crate::paths::open_regular_file(path)?),
        })
    }
}

impl Read for FileStream {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.inner {
            Inner::File(file) => file.read(out),
            #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
            Inner::Stream(pieces) => pieces.read(out),
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

    /// A `wasi:io` input stream over a file, read a piece at a time.
    pub(super) struct Pieces {
        // Declared before `_file`: a stream must be dropped before the
        // descriptor it reads from.
        stream: InputStream,
        _file: Descriptor,
        /// The last piece received, handed out from `at` on.
        pending: Vec<u8>,
        at: usize,
        /// The stream has ended (or failed with `failed`).
        ended: bool,
        failed: Option<String>,
    }

    impl Pieces {
        /// Opens `path` through the preopened directory that holds it (the
        /// longest match); `None` when that is not possible, for the caller
        /// to use `std::fs` instead.
        pub(super) fn open(path: &Path) -> Option<Pieces> {
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
            Some(Pieces {
                stream,
                _file: file,
                pending: Vec::new(),
                at: 0,
                ended: false,
                failed: None,
            })
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
                // The host reads on this thread (the sandbox allows
                // blocking it), so there is no thread to wake.
                match self.stream.blocking_read(PIECE) {
                    Ok(bytes) => {
                        self.pending = bytes;
                        self.at = 0;
                    }
                    Err(StreamError::Closed) => self.ended = true,
                    Err(StreamError::LastOperationFailed(e)) => {
                        self.ended = true;
                        self.failed = Some(e.to_debug_string());
                    }
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
        let dir = std::env::temp_dir().join(format!("plugin-kit-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.bin");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut back = Vec::new();
        FileStream::open(&path)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
        assert!(FileStream::open(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
