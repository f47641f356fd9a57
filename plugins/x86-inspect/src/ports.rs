//! Device state behind the I/O ports (`IN`, `OUT`): what a DOS program
//! drives the display with. Everything else reads FFh and ignores writes.
//! Kept apart from the CPU core and the video BIOS (`video.rs`) so both can
//! use it.

/// Device state behind the I/O ports a DOS program drives the display
/// with: the VGA DAC (ports 3C7h–3C9h), the input status register (3DAh)
/// and the CGA colour select (3D9h). Other ports read FFh and ignore
/// writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ports {
    /// The DAC's 256 colours, 6 bits per component.
    pub dac: [[u8; 3]; 256],
    dac_write: u8,
    dac_read: u8,
    dac_phase: u8,
    /// Alternates retrace and display on each read of 3DAh, so loops that
    /// wait for either end.
    status: u8,
    /// CGA colour select: background (bits 0–3), intensity (bit 4),
    /// palette 1 (bit 5).
    pub cga_select: u8,
    /// The keyboard controller's output buffer (port 60h): the last scan
    /// code delivered (a make code, or a break code with bit 7 set).
    pub kbd_data: u8,
    /// A scan code is waiting in it (status port 64h, bit 0).
    pub kbd_full: bool,
    /// The program reads the keyboard through the ports (60h or 64h), so
    /// typed keys are delivered there as scan codes, not left for INT 16h.
    pub kbd_used: bool,
    /// The program read the ports with nothing waiting since the last
    /// delivery: a polling loop waiting for a key.
    pub kbd_polled_empty: bool,
    /// Reads of the ports with nothing waiting, since the machine last
    /// counted (not in snapshots).
    pub kbd_empty_polls: u32,
}

impl Default for Ports {
    fn default() -> Self {
        let mut ports = Ports {
            dac: [[0; 3]; 256],
            dac_write: 0,
            dac_read: 0,
            dac_phase: 0,
            status: 0,
            cga_select: 0x30,
            kbd_data: 0,
            kbd_full: false,
            kbd_used: false,
            kbd_polled_empty: false,
            kbd_empty_polls: 0,
        };
        ports.load_text_palette();
        ports
    }
}

impl Ports {
    /// `IN` from `port`.
    pub fn input(&mut self, port: u16) -> u8 {
        match port {
            0x3C9 => {
                let v = self.dac[self.dac_read as usize][self.dac_phase as usize];
                self.advance_read();
                v
            }
            0x3C7 => 0x03,
            0x3C8 => self.dac_write,
            0x3DA | 0x3BA => {
                self.status ^= 0x09;
                self.status
            }
            0x3D9 => self.cga_select,
            0x60 => {
                self.kbd_used = true;
                self.kbd_polled_empty |= !self.kbd_full;
                self.kbd_empty_polls += u32::from(!self.kbd_full);
                self.kbd_full = false;
                self.kbd_data
            }
            // System flag and keyboard enabled, and the output buffer.
            0x64 => {
                self.kbd_used = true;
                self.kbd_polled_empty |= !self.kbd_full;
                self.kbd_empty_polls += u32::from(!self.kbd_full);
                0x14 | u8::from(self.kbd_full)
            }
            _ => 0xFF,
        }
    }

    /// Puts scan code `scan` in the keyboard controller's output buffer.
    pub fn deliver_key(&mut self, scan: u8) {
        self.kbd_data = scan;
        self.kbd_full = true;
        self.kbd_polled_empty = false;
    }

    /// `OUT` of `v` to `port`.
    pub fn output(&mut self, port: u16, v: u8) {
        match port {
            0x3C7 => {
                self.dac_read = v;
                self.dac_phase = 0;
            }
            0x3C8 => {
                self.dac_write = v;
                self.dac_phase = 0;
            }
            0x3C9 => {
                self.dac[self.dac_write as usize][self.dac_phase as usize] = v & 0x3F;
                self.dac_phase += 1;
                if self.dac_phase == 3 {
                    self.dac_phase = 0;
                    self.dac_write = self.dac_write.wrapping_add(1);
                }
            }
            0x3D9 => self.cga_select = v,
            _ => {}
        }
    }

    fn advance_read(&mut self) {
        self.dac_phase += 1;
        if self.dac_phase == 3 {
            self.dac_phase = 0;
            self.dac_read = self.dac_read.wrapping_add(1);
        }
    }

    /// The 64 colours of the EGA-compatible palette the BIOS loads for
    /// text and CGA modes (bits: blue, green, red, then their low halves).
    pub(crate) fn load_text_palette(&mut self) {
        for (n, entry) in self.dac.iter_mut().enumerate().take(64) {
            let c = |hi: usize, lo: usize| (0x2A * (n >> hi & 1) + 0x15 * (n >> lo & 1)) as u8;
            *entry = [c(2, 5), c(1, 4), c(0, 3)];
        }
    }

    /// The VGA BIOS's default 256-colour palette (mode 13h): the 16 EGA
    /// colours, 16 greys, then 24 hues at 3 saturations and 3 intensities,
    /// then black.
    pub(crate) fn load_vga_palette(&mut self) {
        const EGA: [[u8; 3]; 16] = [
            [0x00, 0x00, 0x00],
            [0x00, 0x00, 0x2A],
            [0x00, 0x2A, 0x00],
            [0x00, 0x2A, 0x2A],
            [0x2A, 0x00, 0x00],
            [0x2A, 0x00, 0x2A],
            [0x2A, 0x15, 0x00],
            [0x2A, 0x2A, 0x2A],
            [0x15, 0x15, 0x15],
            [0x15, 0x15, 0x3F],
            [0x15, 0x3F, 0x15],
            [0x15, 0x3F, 0x3F],
            [0x3F, 0x15, 0x15],
            [0x3F, 0x15, 0x3F],
            [0x3F, 0x3F, 0x15],
            [0x3F, 0x3F, 0x3F],
        ];
        const GREYS: [u8; 16] = [
            0x00, 0x05, 0x08, 0x0B, 0x0E, 0x11, 0x14, 0x18, 0x1C, 0x20, 0x24, 0x28, 0x2D, 0x32,
            0x38, 0x3F,
        ];
        // Levels of each (intensity, saturation) block, low to high.
        const LEVELS: [[u8; 5]; 9] = [
            [0x00, 0x10, 0x1F, 0x2F, 0x3F],
            [0x1F, 0x27, 0x2F, 0x37, 0x3F],
            [0x2D, 0x31, 0x36, 0x3A, 0x3F],
            [0x00, 0x07, 0x0E, 0x15, 0x1C],
            [0x0E, 0x11, 0x15, 0x18, 0x1C],
            [0x14, 0x16, 0x18, 0x1A, 0x1C],
            [0x00, 0x04, 0x08, 0x0C, 0x10],
            [0x08, 0x0A, 0x0C, 0x0E, 0x10],
            [0x0B, 0x0C, 0x0D, 0x0F, 0x10],
        ];
        // The hue wheel from blue, as (red, green, blue) level indices.
        const HUES: [[usize; 3]; 24] = [
            [0, 0, 4],
            [1, 0, 4],
            [2, 0, 4],
            [3, 0, 4],
            [4, 0, 4],
            [4, 0, 3],
            [4, 0, 2],
            [4, 0, 1],
            [4, 0, 0],
            [4, 1, 0],
            [4, 2, 0],
            [4, 3, 0],
            [4, 4, 0],
            [3, 4, 0],
            [2, 4, 0],
            [1, 4, 0],
            [0, 4, 0],
            [0, 4, 1],
            [0, 4, 2],
            [0, 4, 3],
            [0, 4, 4],
            [0, 3, 4],
            [0, 2, 4],
            [0, 1, 4],
        ];
        self.dac = [[0; 3]; 256];
        self.dac[..16].copy_from_slice(&EGA);
        for (i, g) in GREYS.iter().enumerate() {
            self.dac[16 + i] = [*g; 3];
        }
        for (block, levels) in LEVELS.iter().enumerate() {
            for (h, hue) in HUES.iter().enumerate() {
                self.dac[32 + block * 24 + h] = hue.map(|i| levels[i]);
            }
        }
    }

    /// Saved after the DOS state (snapshot format 2).
    pub(crate) fn save(&self, w: &mut plugin_kit::blob::Writer) {
        for c in &self.dac {
            w.u8(c[0]).u8(c[1]).u8(c[2]);
        }
        w.u8(self.dac_write)
            .u8(self.dac_read)
            .u8(self.dac_phase)
            .u8(self.status)
            .u8(self.cga_select);
        w.u8(self.kbd_data).u8(u8::from(self.kbd_full)
            | u8::from(self.kbd_used) << 1
            | u8::from(self.kbd_polled_empty) << 2);
    }

    /// Read back as [`Ports::save`] wrote it, every value checked; a
    /// snapshot before format 3 has no keyboard controller.
    pub(crate) fn restore(r: &mut plugin_kit::blob::Reader, version: u16) -> Result<Ports, String> {
        let mut dac = [[0u8; 3]; 256];
        for c in &mut dac {
            for v in c.iter_mut() {
                *v = r.u8("palette")?;
                if *v > 0x3F {
                    return Err(format!("palette value {v:#x} is over 6 bits"));
                }
            }
        }
        let mut ports = Ports {
            dac,
            dac_write: r.u8("palette")?,
            dac_read: r.u8("palette")?,
            dac_phase: r.u8("palette")?,
            status: r.u8("palette")?,
            cga_select: r.u8("palette")?,
            ..Ports::default()
        };
        if version >= 3 {
            ports.kbd_data = r.u8("keyboard controller")?;
            let bits = r.u8("keyboard controller")?;
            if bits > 7 {
                return Err(format!(
                    "keyboard controller flags {bits:#x} have unknown bits"
                ));
            }
            (ports.kbd_full, ports.kbd_used, ports.kbd_polled_empty) =
                (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
        }
        if ports.dac_phase > 2 {
            return Err(format!("DAC phase {} is over 2", ports.dac_phase));
        }
        Ok(ports)
    }
}
