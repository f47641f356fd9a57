//! Plugins' linear memories: reserved and guarded as wasmtime reserves its
//! own, with the part past a plugin's first MiBs advised to the kernel as
//! huge-page memory (docs/design.md, "Linear memories").
//!
//! A plugin that reads a large log fills tens of MiB of fresh memory on its
//! first call. With 4 KiB pages each page is a fault: about 11 ms for
//! 32 MiB on the development machine, 1 ms with 2 MiB pages. Linux gives a
//! mapping transparent huge pages only when it is advised so (`madvise`,
//! the usual distribution default), and wasmtime's own memories are not.
//! A memory's first [`HUGE_FROM`] bytes keep 4 KiB pages, and a huge page
//! is used only where a whole aligned 2 MiB of the memory is accessible,
//! so a small plugin holds about what it held before.

use std::sync::Arc;
use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

/// Where in a linear memory the huge-page advice starts: below it live a
/// plugin's data, stack and first heap, which 4 KiB pages hold tightly, so
/// a fresh instance does not zero a 2 MiB page to start. (From 8 MiB, the
/// bench log's first query took 56 ms against 53 ms from here: the log's
/// columns start below 8 MiB.)
pub const HUGE_FROM: usize = 2 << 20;

/// The creator to give wasmtime ([`wasmtime::Config::with_host_memory`]),
/// or None when `BENCHTOP_HUGE_PAGES=0` asks for wasmtime's own memories.
pub fn creator() -> Option<Arc<dyn MemoryCreator>> {
    let off = std::env::var_os("BENCHTOP_HUGE_PAGES").is_some_and(|v| v == "0");
    (!off).then(|| Arc::new(HugePageMemories) as Arc<dyn MemoryCreator>)
}

/// Makes [`Reserved`] memories.
struct HugePageMemories;

// SAFETY: every memory is a fresh, zeroed private mapping of the size
// wasmtime asked for, with `guard` bytes after it (and as many before it,
// as wasmtime's own memories have) left inaccessible, and it never moves:
// its capacity is its whole reservation.
unsafe impl MemoryCreator for HugePageMemories {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved: Option<usize>,
        guard: usize,
    ) -> Result<Box<dyn LinearMemory>, String> {
        let page = page_size();
        // Without a reservation asked for, room for the largest size the
        // type allows, so that the memory never has to move.
        let capacity = reserved
            .or(maximum)
            .unwrap_or(minimum)
            .max(minimum)
            .checked_next_multiple_of(page)
            .ok_or("a linear memory's reservation overflows")?;
        Reserved::new(capacity, guard, minimum)
            .map(|m| Box::new(m) as Box<dyn LinearMemory>)
            .map_err(|e| format!("reserving a linear memory of {capacity} bytes: {e}"))
    }
}

/// One linear memory: `guard` inaccessible bytes, then `capacity` bytes of
/// which the first `size` are readable and writable, then `guard` more.
struct Reserved {
    /// The start of the whole mapping, guards included.
    mapping: *mut u8,
    /// Its length.
    mapping_len: usize,
    /// The memory's first byte.
    base: *mut u8,
    /// Bytes accessible now.
    size: usize,
    /// Bytes it may grow to without moving.
    capacity: usize,
}

// SAFETY: the pointers are to a mapping this value owns alone; wasmtime
// synchronises access to the memory itself.
unsafe impl Send for Reserved {}
// SAFETY: as above; `&Reserved` only reads the fields.
unsafe impl Sync for Reserved {}

impl Reserved {
    fn new(capacity: usize, guard: usize, size: usize) -> std::io::Result<Self> {
        let mapping_len = guard
            .checked_add(capacity)
            .and_then(|n| n.checked_add(guard))
            .ok_or_else(|| std::io::Error::other("the reservation overflows"))?;
        // SAFETY: a new private anonymous mapping, at an address the
        // kernel chooses; nothing else refers to it.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapping_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let mapping = mapping.cast::<u8>();
        let mut memory = Reserved {
            mapping,
            mapping_len,
            // SAFETY: `guard` is within the mapping.
            base: unsafe { mapping.add(guard) },
            size: 0,
            capacity,
        };
        memory.advise_huge_pages();
        memory.make_accessible(size)?;
        Ok(memory)
    }

    /// Advises the reservation past [`HUGE_FROM`], from a 2 MiB boundary,
    /// as huge-page memory. Advice only: a kernel without transparent huge
    /// pages, or set to `never`, refuses it and the memory works as before.
    fn advise_huge_pages(&self) {
        const HUGE_PAGE: usize = 2 << 20;
        let start = (self.base as usize + HUGE_FROM).next_multiple_of(HUGE_PAGE);
        let end = self.base as usize + self.capacity;
        if start < end {
            // SAFETY: the range lies within this value's own mapping.
            let refused = unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE)
            };
            if refused != 0 {
                tracing::trace!(
                    "huge pages not advised: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }

    /// Makes the first `new_size` bytes readable and writable.
    fn make_accessible(&mut self, new_size: usize) -> std::io::Result<()> {
        if new_size > self.capacity {
            return Err(std::io::Error::other(format!(
                "{new_size} bytes asked for, past the {} reserved",
                self.capacity
            )));
        }
        if new_size > self.size {
            // SAFETY: `size..new_size` lies within the reservation, which
            // this value owns; it was inaccessible, so nothing refers to it.
            let failed = unsafe {
                libc::mprotect(
                    self.base.add(self.size).cast(),
                    new_size - self.size,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if failed != 0 {
                return Err(std::io::Error::last_os_error());
            }
            self.size = new_size;
        }
        Ok(())
    }
}

// SAFETY: `byte_size` bytes from `as_ptr` are accessible and stay so, the
// base never moves, and `guard` bytes after the capacity stay unmapped.
unsafe impl LinearMemory for Reserved {
    fn byte_size(&self) -> usize {
        self.size
    }

    fn byte_capacity(&self) -> usize {
        self.capacity
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
        self.make_accessible(new_size)
            .map_err(|e| wasmtime::format_err!("growing a linear memory: {e}"))
    }

    fn as_ptr(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        // SAFETY: the whole mapping this value made; wasmtime drops the
        // memory only once no instance uses it.
        unsafe {
            libc::munmap(self.mapping.cast(), self.mapping_len);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf only reads its argument.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_grows_in_place_and_reads_zero() {
        let mut m = Reserved::new(64 << 20, 1 << 20, 64 << 10).expect("reserve");
        let base = m.as_ptr();
        assert_eq!(m.byte_size(), 64 << 10);
        m.grow_to(HUGE_FROM + (4 << 20)).expect("grow");
        assert_eq!(m.as_ptr(), base, "the memory moved");
        // SAFETY: within byte_size, which grow_to made accessible.
        let tail = unsafe { std::slice::from_raw_parts_mut(base, m.byte_size()) };
        assert!(tail.iter().step_by(4096).all(|&b| b == 0));
        tail[HUGE_FROM + 5] = 7;
        assert_eq!(tail[HUGE_FROM + 5], 7);
        assert!(m.grow_to(65 << 20).is_err(), "grew past its reservation");
        assert_eq!(m.byte_size(), HUGE_FROM + (4 << 20));
    }
}
