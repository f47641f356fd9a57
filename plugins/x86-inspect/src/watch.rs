//! Breakpoints on memory and I/O accesses (x86_add_breakpoint's `type`,
//! in Spice86's shapes; their conditions are [`crate::condition`]).
//!
//! [`Watch`] is what the CPU checks on each data access while a machine has
//! access breakpoints: a bit per 64-byte block of memory (and the watched
//! port ranges), so an access outside every watched block costs one bit
//! test; the first access that hits a watched range in an instruction is
//! kept, and the run stops after that instruction. Instruction fetches are
//! not data accesses and never hit.

use std::cell::Cell;

/// What a breakpoint stops on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Before the instruction at its address executes.
    Execution,
    /// After an instruction read memory in its range.
    MemoryRead,
    /// After an instruction wrote memory in its range.
    MemoryWrite,
    /// After an instruction read or wrote memory in its range.
    MemoryAccess,
    /// After an `IN` from a port in its range.
    IoRead,
    /// After an `OUT` to a port in its range.
    IoWrite,
    /// After an `IN` or `OUT` on a port in its range.
    IoAccess,
}

impl Kind {
    /// Its number in snapshots.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The kind numbered `code` in a snapshot.
    pub fn from_code(code: u8) -> Option<Kind> {
        use Kind::*;
        [
            Execution,
            MemoryRead,
            MemoryWrite,
            MemoryAccess,
            IoRead,
            IoWrite,
            IoAccess,
        ]
        .get(code as usize)
        .copied()
    }

    /// Whether it watches ports (else memory or execution).
    pub fn io(self) -> bool {
        matches!(self, Kind::IoRead | Kind::IoWrite | Kind::IoAccess)
    }

    /// Whether a read (`write` false) or a write hits it.
    pub fn hit_by(self, write: bool) -> bool {
        match self {
            Kind::Execution => false,
            Kind::MemoryRead | Kind::IoRead => !write,
            Kind::MemoryWrite | Kind::IoWrite => write,
            Kind::MemoryAccess | Kind::IoAccess => true,
        }
    }
}

/// A data access that hit a watched range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The linear address, or the port.
    pub addr: u32,
    /// A write (else a read).
    pub write: bool,
    /// A port (else memory).
    pub io: bool,
}

/// The watched memory and ports of one machine, as the CPU checks them.
#[derive(Clone, Debug, Default)]
pub struct Watch {
    /// A bit per 64-byte block that some range covers: reads, writes.
    blocks: [Vec<u64>; 2],
    /// Exact ranges: first, last, read, write.
    memory: Vec<(u32, u32, bool, bool)>,
    ports: Vec<(u16, u16, bool, bool)>,
    /// The first hit of the instruction running.
    hit: Cell<Option<Access>>,
}

impl Watch {
    /// A watch of `ranges`: kind, first and last address (or port).
    pub fn new(ranges: impl IntoIterator<Item = (Kind, u32, u32)>) -> Watch {
        let mut w = Watch {
            blocks: [vec![0; 256], vec![0; 256]],
            ..Default::default()
        };
        for (kind, first, last) in ranges {
            let (r, wr) = (kind.hit_by(false), kind.hit_by(true));
            if kind.io() {
                w.ports.push((first as u16, last as u16, r, wr));
                continue;
            }
            w.memory.push((first, last, r, wr));
            for block in (first >> 6)..=(last >> 6).min(0x3FFF) {
                for (on, map) in [(r, 0), (wr, 1)] {
                    if on {
                        w.blocks[map][(block >> 6) as usize] |= 1 << (block & 63);
                    }
                }
            }
        }
        w
    }

    /// Notes a data access of memory at `addr`.
    #[inline(always)]
    pub fn memory(&self, addr: u32, write: bool) {
        let block = (addr >> 6) & 0x3FFF;
        if self.blocks[write as usize][(block >> 6) as usize] & (1 << (block & 63)) == 0 {
            return;
        }
        self.exact(addr, write);
    }

    /// Notes an access of `port`.
    pub fn port(&self, port: u16, write: bool) {
        if self
            .ports
            .iter()
            .any(|&(a, b, r, w)| (a..=b).contains(&port) && if write { w } else { r })
        {
            self.note(Access {
                addr: port.into(),
                write,
                io: true,
            });
        }
    }

    #[cold]
    fn exact(&self, addr: u32, write: bool) {
        if self
            .memory
            .iter()
            .any(|&(a, b, r, w)| (a..=b).contains(&addr) && if write { w } else { r })
        {
            self.note(Access {
                addr,
                write,
                io: false,
            });
        }
    }

    fn note(&self, access: Access) {
        if self.hit.get().is_none() {
            self.hit.set(Some(access));
        }
    }

    /// The first hit since the last call, leaving none.
    pub fn take_hit(&self) -> Option<Access> {
        self.hit.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_hit_their_ranges_only() {
        let w = Watch::new([
            (Kind::MemoryWrite, 0x1000, 0x1003),
            (Kind::IoRead, 0x60, 0x60),
        ]);
        w.memory(0x1004, true);
        w.memory(0x1000, false);
        w.port(0x60, true);
        assert_eq!(w.take_hit(), None);
        w.memory(0x1002, true);
        w.memory(0x1003, true);
        assert_eq!(
            w.take_hit(),
            Some(Access {
                addr: 0x1002,
                write: true,
                io: false
            }),
            "the first hit is kept"
        );
        w.port(0x60, false);
        assert_eq!(
            w.take_hit(),
            Some(Access {
                addr: 0x60,
                write: false,
                io: true
            })
        );
    }
}
