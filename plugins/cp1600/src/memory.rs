//! The 64K-word address space of an Intellivision as the CPU sees it.
//!
//! Reads are a single array load: unmapped words hold `$FFFF` and are never
//! written, and 8-bit RAM never holds more than 8 bits. Writes go through a
//! per-word mask (0 for ROM and unmapped words, `$00FF` for 8-bit RAM,
//! `$FFFF` for 16-bit RAM), so the hot path has no branch on the region.

/// Number of addressable words.
pub const WORDS: usize = 0x1_0000;

/// Value read from an address with nothing behind it.
pub const UNMAPPED_READ: u16 = 0xFFFF;

/// 8-bit scratch RAM.
pub const RAM8: (u16, u16) = (0x0100, 0x01EF);
/// 16-bit system RAM (BACKTAB and the stack).
pub const RAM16: (u16, u16) = (0x0200, 0x035F);

/// What sits behind one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Region {
    /// Nothing: reads give $FFFF, writes are ignored.
    Unmapped = 0,
    /// Loaded image: writes from the CPU are ignored.
    Rom = 1,
    /// 8-bit RAM: a write keeps the low byte.
    Ram8 = 2,
    /// 16-bit RAM.
    Ram16 = 3,
}

impl Region {
    /// The name agents see in a memory map's `kind`.
    pub fn name(self) -> &'static str {
        match self {
            Region::Unmapped => "unmapped",
            Region::Rom => "rom",
            Region::Ram8 => "ram8",
            Region::Ram16 => "ram16",
        }
    }

    fn write_mask(self) -> u16 {
        match self {
            Region::Unmapped | Region::Rom => 0,
            Region::Ram8 => 0x00FF,
            Region::Ram16 => 0xFFFF,
        }
    }
}

/// The memory of one emulated machine.
#[derive(Clone)]
pub struct Memory {
    data: Box<[u16; WORDS]>,
    wmask: Box<[u16; WORDS]>,
    region: Box<[Region; WORDS]>,
    /// CPU writes that changed a word, so far (wrapping). A run compares it
    /// across a loop to tell a wait that nothing can end (no memory changed
    /// and the registers are the same) from a loop making progress.
    changes: u64,
}

fn boxed<T: Copy>(v: T) -> Box<[T; WORDS]> {
    match vec![v; WORDS].into_boxed_slice().try_into() {
        Ok(b) => b,
        Err(_) => unreachable!("vector has exactly WORDS elements"),
    }
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl Memory {
    /// The standard map: both RAMs cleared, everything else unmapped.
    pub fn new() -> Self {
        let mut m = Memory {
            data: boxed(UNMAPPED_READ),
            wmask: boxed(0),
            region: boxed(Region::Unmapped),
            changes: 0,
        };
        m.map_range(RAM8.0, RAM8.1, Region::Ram8);
        m.map_range(RAM16.0, RAM16.1, Region::Ram16);
        m
    }

    /// Maps `lo..=hi` as `region`; RAM starts cleared, ROM and unmapped
    /// words read `$FFFF` until loaded.
    pub fn map_range(&mut self, lo: u16, hi: u16, region: Region) {
        let fill = match region {
            Region::Ram8 | Region::Ram16 => 0,
            Region::Rom | Region::Unmapped => UNMAPPED_READ,
        };
        for a in lo as usize..=hi as usize {
            self.region[a] = region;
            self.wmask[a] = region.write_mask();
            self.data[a] = fill;
        }
    }

    /// Clears every RAM word (ROM contents stay).
    pub fn clear_ram(&mut self) {
        for a in 0..WORDS {
            if matches!(self.region[a], Region::Ram8 | Region::Ram16) {
                self.data[a] = 0;
            }
        }
    }

    /// Removes every ROM word (back to unmapped) and clears RAM.
    pub fn unload_rom(&mut self) {
        for a in 0..WORDS {
            if self.region[a] == Region::Rom {
                self.region[a] = Region::Unmapped;
                self.data[a] = UNMAPPED_READ;
            }
        }
        self.clear_ram();
    }

    #[inline(always)]
    /// The word at `addr` ($FFFF where nothing is mapped); inline because every fetch goes through it.
    pub fn read(&self, addr: u16) -> u16 {
        self.data[addr as usize]
    }

    /// A CPU write: dropped on ROM and unmapped words, truncated on 8-bit RAM.
    #[inline(always)]
    pub fn write(&mut self, addr: u16, value: u16) {
        let a = addr as usize;
        let mask = self.wmask[a];
        let old = self.data[a];
        let new = (old & !mask) | (value & mask);
        self.data[a] = new;
        self.changes = self.changes.wrapping_add((old != new) as u64);
    }

    /// How many CPU writes changed a word so far (see the field).
    #[inline(always)]
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Sets the change counter (a restored snapshot carries on counting
    /// where the saved session was).
    pub fn restore_changes(&mut self, changes: u64) {
        self.changes = changes;
    }

    /// Whether `addr` is RAM (8- or 16-bit): where a stack may live.
    #[inline(always)]
    pub fn is_ram(&self, addr: u16) -> bool {
        matches!(self.region[addr as usize], Region::Ram8 | Region::Ram16)
    }

    /// A debugger write: reaches ROM too (patching), keeps 8-bit RAM 8 bits
    /// wide. Returns false for an unmapped word.
    pub fn poke(&mut self, addr: u16, value: u16) -> bool {
        let a = addr as usize;
        match self.region[a] {
            Region::Unmapped => false,
            Region::Ram8 => {
                self.data[a] = value & 0xFF;
                true
            }
            Region::Rom | Region::Ram16 => {
                self.data[a] = value;
                true
            }
        }
    }

    /// Places a ROM word (loading), mapping the address as ROM unless it is RAM.
    pub fn load_word(&mut self, addr: u16, value: u16) {
        let a = addr as usize;
        if self.region[a] == Region::Unmapped {
            self.region[a] = Region::Rom;
            self.wmask[a] = 0;
        }
        if !self.poke(addr, value) {
            unreachable!("address was just mapped");
        }
    }

    /// What is mapped at `addr`.
    pub fn region(&self, addr: u16) -> Region {
        self.region[addr as usize]
    }

    /// Number of ROM words mapped.
    pub fn rom_words(&self) -> usize {
        self.region.iter().filter(|r| **r == Region::Rom).count()
    }

    /// Maximal runs of one region, for describing the map.
    pub fn regions(&self) -> Vec<(u16, u16, Region)> {
        let mut out = Vec::new();
        let mut start = 0usize;
        for a in 1..=WORDS {
            if a == WORDS || self.region[a] != self.region[start] {
                if self.region[start] != Region::Unmapped {
                    out.push((start as u16, (a - 1) as u16, self.region[start]));
                }
                start = a;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_map_widths_and_unmapped_reads() {
        let mut m = Memory::new();
        m.write(0x0100, 0x1234);
        assert_eq!(m.read(0x0100), 0x0034);
        m.write(0x0200, 0x1234);
        assert_eq!(m.read(0x0200), 0x1234);
        m.write(0x0360, 0x1234);
        assert_eq!(m.read(0x0360), UNMAPPED_READ);
        assert_eq!(m.read(0x0FFF), UNMAPPED_READ);
        m.load_word(0x5000, 0x0004);
        m.write(0x5000, 0x1111);
        assert_eq!(m.read(0x5000), 0x0004);
        assert!(m.poke(0x5000, 0x2222));
        assert_eq!(m.read(0x5000), 0x2222);
        assert!(!m.poke(0x4000, 1));
        assert_eq!(
            m.regions(),
            vec![
                (0x0100, 0x01EF, Region::Ram8),
                (0x0200, 0x035F, Region::Ram16),
                (0x5000, 0x5000, Region::Rom)
            ]
        );
        m.unload_rom();
        assert_eq!(m.read(0x5000), UNMAPPED_READ);
        assert_eq!(m.read(0x0200), 0);
    }
}
