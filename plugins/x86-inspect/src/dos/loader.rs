//! Loading a program as DOS does: the IVT and BIOS data, the environment and PSP, a `.COM` image or an MZ `.EXE` with its relocations.

use super::*;

impl Dos {
    /// Sets up the IVT, BIOS data area, environment and PSP, then loads the
    /// program image and sets the entry registers.
    pub fn load(
        &mut self,
        cpu: &mut Cpu,
        path: &Path,
        image: &[u8],
        tail: &str,
    ) -> Result<Program, LoadError> {
        if tail.len() > 126 {
            return Err(LoadError::Format(format!(
                "command tail is {} bytes; DOS allows at most 126",
                tail.len()
            )));
        }
        // IVT: every vector points at its own IRET stub, which the CPU
        // recognises as "serviced natively".
        for n in 0..256u16 {
            cpu.write_word(0, n * 4, n);
            cpu.write_word(0, n * 4 + 2, STUB_SEGMENT);
            cpu.wb(Cpu::lin(STUB_SEGMENT, n), 0xCF);
        }
        cpu.services = true;
        search::init_dos_data(cpu);
        // BIOS data area.
        cpu.write_word(0x40, 0x10, 0x0021); // equipment: 80x25 colour, 1 floppy
        cpu.write_word(0x40, 0x13, 640);
        crate::video::power_on(cpu);
        cpu.write_word(0x40, 0x63, 0x3D4);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_uppercase())
            .unwrap_or_else(|| "PROGRAM.COM".into());
        // Environment: variables, a terminating zero, word 1, program path.
        let mut env = b"PATH=C:\\\0COMSPEC=C:\\COMMAND.COM\0\0\x01\0".to_vec();
        env.extend_from_slice(format!("C:\\{name}\0").as_bytes());
        let env_base = Cpu::lin(ENV_SEGMENT, 0);
        for (i, b) in env.iter().enumerate() {
            cpu.wb(env_base + i as u32, *b);
        }
        let psp = PSP_SEGMENT;
        self.psp = psp;
        self.dta = (psp, 0x80);
        let is_exe = image.len() >= 2 && (&image[..2] == b"MZ" || &image[..2] == b"ZM");
        let (format, entry, size) = if is_exe {
            self.load_exe(cpu, psp, image)?
        } else {
            if image.len() > 0xFF00 {
                return Err(LoadError::Format(format!(
                    ".COM image is {} bytes; the limit is 65280",
                    image.len()
                )));
            }
            let base = Cpu::lin(psp, 0x100);
            for (i, b) in image.iter().enumerate() {
                cpu.wb(base + i as u32, *b);
            }
            self.blocks.insert(psp, MEMORY_TOP - psp);
            cpu.sregs = [psp, psp, psp, psp];
            cpu.regs = [0, 0x00FF, psp, 0, 0xFFFE, 0x091C, 0x0100, 0xFFFE];
            cpu.write_word(psp, 0xFFFE, 0);
            cpu.ip = 0x100;
            (Format::Com, (psp, 0x100), image.len())
        };
        self.write_psp(cpu, psp, tail);
        cpu.flags = 0xF202;
        Ok(Program {
            path: path.to_path_buf(),
            format,
            psp,
            load_segment: if format == Format::Exe {
                psp + 0x10
            } else {
                psp
            },
            entry,
            size,
        })
    }

    pub(super) fn load_exe(
        &mut self,
        cpu: &mut Cpu,
        psp: u16,
        image: &[u8],
    ) -> Result<(Format, (u16, u16), usize), LoadError> {
        if image.len() < 0x1C {
            return Err(LoadError::Format(
                "MZ header is truncated (under 28 bytes)".into(),
            ));
        }
        let w = |o: usize| u16::from_le_bytes([image[o], image[o + 1]]);
        let last = w(2) as usize;
        let pages = w(4) as usize;
        let nreloc = w(6) as usize;
        let header = w(8) as usize * 16;
        let min_extra = w(0x0A);
        let max_extra = w(0x0C);
        let (ss, sp, ip, cs, reloc_off) = (w(0x0E), w(0x10), w(0x14), w(0x16), w(0x18) as usize);
        let mut end = pages * 512;
        // Bytes used in the last page; 0 (and, as DOS reads it, anything
        // past 511) means the whole page.
        if last != 0 && last < 512 {
            end = end.saturating_sub(512 - last);
        }
        let end = end.min(image.len());
        if header > end {
            return Err(LoadError::Format(format!(
                "MZ header size {header} is beyond the image end {end}"
            )));
        }
        let module = &image[header..end];
        let load = psp + 0x10;
        let paras = module.len().div_ceil(16) as u32;
        let avail = (MEMORY_TOP - load) as u32;
        if paras + min_extra as u32 > avail {
            return Err(LoadError::Format(format!(
                "program needs {} paragraphs but only {avail} are free",
                paras + min_extra as u32
            )));
        }
        let base = Cpu::lin(load, 0);
        for (i, b) in module.iter().enumerate() {
            cpu.wb(base + i as u32, *b);
        }
        for r in 0..nreloc {
            let o = reloc_off + r * 4;
            if o + 4 > image.len() {
                return Err(LoadError::Format(format!(
                    "relocation {r} lies outside the file"
                )));
            }
            let (off, seg) = (w(o), w(o + 2));
            let s = load.wrapping_add(seg);
            let v = cpu.read_word(s, off).wrapping_add(load);
            cpu.write_word(s, off, v);
        }
        let want = (paras + 0x10 + max_extra as u32).min((MEMORY_TOP - psp) as u32);
        self.blocks.insert(psp, want as u16);
        cpu.sregs[ES] = psp;
        cpu.sregs[DS] = psp;
        cpu.sregs[SS] = load.wrapping_add(ss);
        cpu.sregs[CS] = load.wrapping_add(cs);
        cpu.regs = [0, 0x00FF, psp, 0, sp, 0x091C, 0, sp];
        cpu.regs[SP] = sp;
        cpu.ip = ip;
        Ok((Format::Exe, (load.wrapping_add(cs), ip), image.len()))
    }

    pub(super) fn write_psp(&self, cpu: &mut Cpu, psp: u16, tail: &str) {
        let base = Cpu::lin(psp, 0);
        for i in 0..256 {
            cpu.wb(base + i, 0);
        }
        cpu.wb(base, 0xCD);
        cpu.wb(base + 1, 0x20);
        let top = psp.wrapping_add(*self.blocks.get(&psp).unwrap_or(&0));
        cpu.write_word(psp, 2, top);
        // Far call to the CP/M-style entry (INT 21h stub).
        cpu.wb(base + 5, 0x9A);
        cpu.write_word(psp, 6, 0x21);
        cpu.write_word(psp, 8, STUB_SEGMENT);
        for (i, v) in [0x22u16, 0x23, 0x24].iter().enumerate() {
            let off = cpu.read_word(0, v * 4);
            let seg = cpu.read_word(0, v * 4 + 2);
            cpu.write_word(psp, 0x0A + 4 * i as u16, off);
            cpu.write_word(psp, 0x0C + 4 * i as u16, seg);
        }
        cpu.write_word(psp, 0x16, psp);
        cpu.write_word(psp, 0x2C, ENV_SEGMENT);
        // INT 21h; RETF at PSP:50.
        cpu.wb(base + 0x50, 0xCD);
        cpu.wb(base + 0x51, 0x21);
        cpu.wb(base + 0x52, 0xCB);
        let tail = tail.as_bytes();
        Self::fill_default_fcbs(cpu, psp, tail);
        cpu.wb(base + 0x80, tail.len() as u8);
        for (i, b) in tail.iter().enumerate() {
            cpu.wb(base + 0x81 + i as u32, *b);
        }
        cpu.wb(base + 0x81 + tail.len() as u32, 0x0D);
    }
}
