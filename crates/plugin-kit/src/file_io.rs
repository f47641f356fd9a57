//! Whole-buffer file reads and writes at an offset.
//!
//! Inside a `wasm32-wasip2` component, `std::fs`'s reads and writes go
//! through `wasi:io` streams, which the host serves 64 KiB at a time, each
//! on a thread of its own: a 1 MiB ROM written that way is sixteen round
//! trips between threads. `pread`/`pwrite` map to the descriptor's own
//! `read`/`write`, which the host runs on the calling thread. Natively
//! they are the platform's `FileExt`.

use std::fs::File;
use std::io;
use std::path::Path;

/// What a read asks for beyond the size the file had when opened (a file
/// that grew meanwhile is read to its end).
const MORE: usize = 64 << 10;

/// Reads the whole file at `path`, as [`std::fs::read`] does.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let size = file.metadata().map_or(0, |m| m.len());
    let mut out: Vec<u8> = Vec::new();
    // A size that cannot be allocated is not trusted up front: the file
    // is read as it comes.
    let _ = out.try_reserve_exact(usize::try_from(size).unwrap_or(0));
    loop {
        let at = out.len();
        let want = (out.capacity() - at).max(MORE);
        out.reserve(want);
        match read_into_spare(&file, &mut out, want, at as u64) {
            Ok(0) => return Ok(out),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads up to `want` bytes at `offset` into `out`'s spare capacity (at
/// least `want`) and extends `out` by what was read.
///
/// In a component the bytes land in memory that was never zeroed: zeroing
/// a 1 MiB ROM's buffer first is a `memory.fill` as long as the read.
#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
fn read_into_spare(file: &File, out: &mut Vec<u8>, want: usize, offset: u64) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
    let spare = out.spare_capacity_mut();
    let want = want.min(spare.len());
    // SAFETY: `spare` is writable memory of at least `want` bytes owned by
    // `out`, and the descriptor belongs to `file`, borrowed for the call.
    let n = unsafe { libc::pread(file.as_raw_fd(), spare.as_mut_ptr().cast(), want, offset) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    // SAFETY: pread wrote `n` (at most `want`) bytes at the spare start.
    unsafe { out.set_len(out.len() + n.min(want)) };
    Ok(n.min(want))
}

/// Natively the buffer is zeroed first (the platforms' positioned reads
/// take initialized slices; zeroing costs little beside a system call).
#[cfg(not(all(target_arch = "wasm32", target_os = "wasi")))]
fn read_into_spare(file: &File, out: &mut Vec<u8>, want: usize, offset: u64) -> io::Result<usize> {
    let at = out.len();
    out.resize(at + want, 0);
    let read = read_at(file, &mut out[at..], offset);
    out.truncate(at + *read.as_ref().unwrap_or(&0));
    read
}

/// Writes all of `bytes` into `file` at `offset` (the file's cursor is
/// neither used nor moved).
pub fn write_all_at(file: &File, mut bytes: &[u8], mut offset: u64) -> io::Result<()> {
    while !bytes.is_empty() {
        match write_at(file, bytes, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = &bytes[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
    // SAFETY: `bytes` is a live buffer of `bytes.len()` bytes, and the
    // descriptor belongs to `file`, borrowed for the call.
    let n = unsafe { libc::pwrite(file.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), offset) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

#[cfg(unix)]
fn read_at(file: &File, into: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, into, offset)
}

#[cfg(windows)]
fn read_at(file: &File, into: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, into, offset)
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(file, bytes, offset)
}

#[cfg(windows)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_write(file, bytes, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_files_are_read_and_written_at_offsets() {
        let dir = std::env::temp_dir().join(format!("plugin-kit-file-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        // Larger than one read beyond the size, and not a multiple of it.
        let bytes: Vec<u8> = (0..MORE * 3 + 17).map(|i| (i * 7) as u8).collect();
        let file = File::create(&path).unwrap();
        write_all_at(&file, &bytes[..100], 0).unwrap();
        write_all_at(&file, &bytes[100..], 100).unwrap();
        drop(file);
        assert_eq!(read(&path).unwrap(), bytes);
        std::fs::write(&path, b"").unwrap();
        assert!(read(&path).unwrap().is_empty());
        assert_eq!(
            read(&dir.join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
