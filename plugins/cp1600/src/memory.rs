//! The 64K-word address space of an Intellivision as the CPU sees it.
//!
//! Reads are a single array load: unmapped words hold `$FFFF` and are never
//! written, and 8-bit RAM never holds more than 8 bits. Writes go through a
//! per-word mask (0 for ROM and unmapped words, `$00FF` for 8-bit RAM,
//! `$FFFF` for 16-bit RAM, the register's writable bits for the STIC), so
//! the hot path has no branch on the region.
//!
//! The STIC's registers ($0000-$003F) read as jzIntv reads them (its
//! `stic.c` register masks): the STIC drives only bits 0-13, so bits 14 and
//! 15 read 0; in bits 0-13 a register keeps the bits it implements and
//! reads 1 in the others. A register's fixed bits are in the stored word
//! from the start and outside its write mask, so the plain masked write
//! keeps them. Not emulated: the STIC's bus windows (jzIntv drops accesses
//! outside vertical blank and then reads `addr & $000E`), its collision
//! detection and the display, so a register holds what was last written.

/// Number of addressable words.
pub const WORDS: usize = 0x1_0000;

/// Value read from an address with nothing behind it.
pub const UNMAPPED_READ: u16 = 0xFFFF;

/// 8-bit scratch RAM.
pub const RAM8: (u16, u16) = (0x0100, 0x01EF);
/// 16-bit system RAM (BACKTAB and the stack).
pub const RAM16: (u16, u16) = (0x0200, 0x035F);
/// The STIC's control registers.
pub const STIC: (u16, u16) = (0x0000, 0x003F);
/// Graphics RAM: 64 cards of 8 rows, 8 bits a word, that the program
/// draws and the STIC shows.
pub const GRAM: (u16, u16) = (0x3800, 0x39FF);
/// The STIC's mode register: a read selects colour-stack mode, a write
/// foreground/background mode.
pub const STIC_MODE: u16 = 0x0021;
/// The STIC's display enable: the program writes it in each vertical blank
/// for the screen to show.
pub const STIC_DISPLAY: u16 = 0x0020;
/// The hand controllers, read through the PSG's I/O ports: the left
/// controller at $01FF, the right at $01FE.
pub const CONTROLLERS: [u16; 2] = [0x01FF, 0x01FE];

/// A STIC register's bits as jzIntv models them: `(writable, ones)`, the
/// bits that keep what the CPU writes and the bits that always read 1.
/// Every other bit (14 and 15 always) reads 0.
pub fn stic_bits(addr: u16) -> (u16, u16) {
    match addr {
        // MOB X: position, interaction, visibility, double width.
        0x00..=0x07 => (0x07FF, 0x3800),
        // MOB Y: position, double/quad height, flips, double resolution.
        0x08..=0x0F => (0x0FFF, 0x3000),
        // MOB attributes: card, colour, priority.
        0x10..=0x17 => (0x3FFF, 0x0000),
        // MOB collisions: MOB n never collides with itself, so bit n reads 0.
        0x18..=0x1F => (0x03FF & !(1 << (addr - 0x18)), 0x3C00),
        // Colour stack and border colour: one 4-bit colour.
        0x28..=0x2C => (0x000F, 0x3FF0),
        // Horizontal and vertical delay: 3 bits.
        0x30 | 0x31 => (0x0007, 0x3FF8),
        // Border extension (top, left): 2 bits.
        0x32 => (0x0003, 0x3FFC),
        // Display enable ($20), mode select ($21) and the unimplemented
        // addresses: nothing kept, every driven bit reads 1.
        _ => (0x0000, 0x3FFF),
    }
}

/// What a STIC register reads after power-on or reset: jzIntv writes
/// $FFFF to each (its default without `--rand-mem`), so all its bits are
/// set but bits 14-15 and a collision register's own bit: $3FFF, or
/// $3FFE-$3F7F for the collision registers.
pub fn stic_reset_value(addr: u16) -> u16 {
    let (writable, ones) = stic_bits(addr);
    writable | ones
}

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
    /// A STIC register: keeps its writable bits, reads fixed values in the
    /// others (see [`stic_bits`]).
    Stic = 4,
}

impl Region {
    /// The name agents see in a memory map's `kind`.
    pub fn name(self) -> &'static str {
        match self {
            Region::Unmapped => "unmapped",
            Region::Rom => "rom",
            Region::Ram8 => "ram8",
            Region::Ram16 => "ram16",
            Region::Stic => "stic",
        }
    }

    /// The write mask and the initial word of `addr` mapped as this region:
    /// RAM starts cleared, ROM and unmapped words read `$FFFF` until
    /// loaded, a STIC register holds its power-on value.
    fn word_init(self, addr: u16) -> (u16, u16) {
        match self {
            Region::Unmapped | Region::Rom => (0, UNMAPPED_READ),
            Region::Ram8 => (0x00FF, 0),
            Region::Ram16 => (0xFFFF, 0),
            Region::Stic => (stic_bits(addr).0, stic_reset_value(addr)),
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
    /// The STIC's mode: foreground/background since the last write of
    /// [`STIC_MODE`], colour stack since the last read (and at power-on).
    fg_bg: bool,
    /// The display enable was written since [`Memory::start_frame`].
    display_enabled: bool,
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
    /// The standard map: both RAMs cleared, the STIC registers at their
    /// power-on values, everything else unmapped.
    pub fn new() -> Self {
        let mut m = Memory {
            data: boxed(UNMAPPED_READ),
            wmask: boxed(0),
            region: boxed(Region::Unmapped),
            changes: 0,
            fg_bg: false,
            display_enabled: false,
        };
        m.map_range(RAM8.0, RAM8.1, Region::Ram8);
        m.map_range(GRAM.0, GRAM.1, Region::Ram8);
        m.map_range(RAM16.0, RAM16.1, Region::Ram16);
        m.map_range(STIC.0, STIC.1, Region::Stic);
        m
    }

    /// Maps `lo..=hi` as `region`; RAM starts cleared, ROM and unmapped
    /// words read `$FFFF` until loaded, STIC registers (meaningful only in
    /// [`STIC`]) hold their power-on values.
    pub fn map_range(&mut self, lo: u16, hi: u16, region: Region) {
        for a in lo..=hi {
            let (wmask, fill) = region.word_init(a);
            self.region[a as usize] = region;
            self.wmask[a as usize] = wmask;
            self.data[a as usize] = fill;
        }
    }

    /// A reset: clears every RAM word and puts the STIC registers back to
    /// their power-on values, as jzIntv's reset does (ROM contents stay).
    /// STIC addresses left unmapped (an image's ROM there was removed) get
    /// their registers back.
    pub fn clear_ram(&mut self) {
        for a in 0..WORDS {
            if matches!(self.region[a], Region::Ram8 | Region::Ram16) {
                self.data[a] = 0;
            }
        }
        for a in STIC.0..=STIC.1 {
            if matches!(self.region[a as usize], Region::Stic | Region::Unmapped) {
                self.map_range(a, a, Region::Stic);
            }
        }
    }

    /// Removes every ROM word (back to unmapped) and resets as
    /// [`Memory::clear_ram`] does.
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

    /// A data read by the CPU (not a fetch): [`Memory::read`], and a read
    /// of [`STIC_MODE`] selects colour-stack mode.
    #[inline(always)]
    pub fn read_data(&mut self, addr: u16) -> u16 {
        if addr == STIC_MODE {
            self.fg_bg = false;
        }
        self.data[addr as usize]
    }

    /// Whether the STIC is in foreground/background mode (else colour stack).
    pub fn fg_bg(&self) -> bool {
        self.fg_bg
    }

    /// A new frame begins: the display enable counts again from here.
    pub fn start_frame(&mut self) {
        self.display_enabled = false;
    }

    /// Whether the display enable was written this frame.
    pub fn display_enabled(&self) -> bool {
        self.display_enabled
    }

    /// What controller `which` (0 left, 1 right) reads: `pressed` holds the
    /// bits its disc, keypad and buttons pull low, so nothing pressed reads
    /// $FFFF, as the unconnected port reads.
    pub fn set_controller(&mut self, which: usize, pressed: u8) {
        if let Some(&addr) = CONTROLLERS.get(which) {
            self.data[addr as usize] = 0xFF00 | u16::from(!pressed);
        }
    }

    /// A CPU write: dropped on ROM and unmapped words, truncated on 8-bit RAM.
    #[inline(always)]
    pub fn write(&mut self, addr: u16, value: u16) {
        if addr & !1 == STIC_DISPLAY {
            if addr == STIC_MODE {
                self.fg_bg = true;
            } else {
                self.display_enabled = true;
            }
        }
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
    /// wide and a STIC register's fixed bits. Returns false for an
    /// unmapped word.
    pub fn poke(&mut self, addr: u16, value: u16) -> bool {
        let a = addr as usize;
        match self.region[a] {
            Region::Unmapped => false,
            Region::Ram8 => {
                self.data[a] = value & 0xFF;
                true
            }
            Region::Stic => {
                let (writable, ones) = stic_bits(addr);
                self.data[a] = (value & writable) | ones;
                true
            }
            Region::Rom | Region::Ram16 => {
                self.data[a] = value;
                true
            }
        }
    }

    /// Places a ROM word (loading), mapping the address as ROM unless it is
    /// RAM. An image that places words over STIC registers replaces them:
    /// it asked for ROM there.
    pub fn load_word(&mut self, addr: u16, value: u16) {
        let a = addr as usize;
        if matches!(self.region[a], Region::Unmapped | Region::Stic) {
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
                (0x0000, 0x003F, Region::Stic),
                (0x0100, 0x01EF, Region::Ram8),
                (0x0200, 0x035F, Region::Ram16),
                (0x3800, 0x39FF, Region::Ram8),
                (0x5000, 0x5000, Region::Rom)
            ]
        );
        m.unload_rom();
        assert_eq!(m.read(0x5000), UNMAPPED_READ);
        assert_eq!(m.read(0x0200), 0);
    }

    /// Issue 38 item 14: STIC registers read what jzIntv reads (they were
    /// unmapped and read $FFFF). Values from jzIntv's `stic.c` masks and
    /// its reset, which writes $FFFF to every register.
    #[test]
    fn stic_registers_read_as_jzintv() {
        let mut m = Memory::new();
        // After power-on: every driven bit set, bits 14-15 clear, and a
        // collision register without its own MOB's bit.
        for a in 0x00..=0x3Fu16 {
            let want = match a {
                0x18..=0x1F => 0x3FFF & !(1 << (a - 0x18)),
                _ => 0x3FFF,
            };
            assert_eq!(m.read(a), want, "${a:04X} after reset");
        }
        // CPU writes keep the implemented bits only.
        for (addr, written, read) in [
            (0x0000, 0x0000, 0x3800), // MOB 0 X
            (0x0003, 0xFFFF, 0x3FFF),
            (0x0000, 0x1234, 0x3A34),
            (0x0008, 0x0000, 0x3000), // MOB 0 Y
            (0x0008, 0xABCD, 0x3BCD),
            (0x0010, 0x0000, 0x0000), // MOB 0 attributes: all 14 bits
            (0x0010, 0xC123, 0x0123),
            (0x0018, 0x0000, 0x3C00), // MOB 0 collisions
            (0x0018, 0xFFFF, 0x3FFE),
            (0x001A, 0x0004, 0x3C00), // MOB 2 with itself: no such bit
            (0x001A, 0x0003, 0x3C03),
            (0x0020, 0x0000, 0x3FFF), // display enable: nothing kept
            (0x0021, 0x1234, 0x3FFF), // mode select
            (0x0022, 0x0000, 0x3FFF), // unimplemented
            (0x0028, 0x0000, 0x3FF0), // colour stack 0
            (0x0028, 0x0005, 0x3FF5),
            (0x002C, 0xFFF7, 0x3FF7), // border colour
            (0x002D, 0x0000, 0x3FFF), // unimplemented
            (0x0030, 0x0000, 0x3FF8), // horizontal delay
            (0x0031, 0x0005, 0x3FFD), // vertical delay
            (0x0032, 0x0000, 0x3FFC), // border extension
            (0x0032, 0x0002, 0x3FFE),
            (0x003F, 0x0000, 0x3FFF),
        ] {
            m.write(addr, written);
            assert_eq!(
                m.read(addr),
                read,
                "${addr:04X} after writing ${written:04X}"
            );
        }
        // A debugger write keeps the fixed bits too; a reset restores the
        // power-on values, as jzIntv's does.
        assert!(m.poke(0x0028, 0x0000));
        assert_eq!(m.read(0x0028), 0x3FF0);
        m.clear_ram();
        assert_eq!((m.read(0x0000), m.read(0x0028)), (0x3FFF, 0x3FFF));
        // ROM an image places there replaces the registers until unloaded.
        m.load_word(0x0000, 0x0004);
        assert_eq!((m.read(0x0000), m.region(0x0000)), (0x0004, Region::Rom));
        m.unload_rom();
        assert_eq!((m.read(0x0000), m.region(0x0000)), (0x3FFF, Region::Stic));
    }
}
