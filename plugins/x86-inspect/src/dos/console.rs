//! The console: characters to the screen and stdout streams, the keyboard (INT 16h, the character and line input services), and INT 10h (the video BIOS in `crate::video`).

use super::*;

impl Dos {
    /// Character output to standard output (handle 1, maybe redirected).
    pub(super) fn con_out(&mut self, bytes: &[u8]) {
        // A closed or full standard output drops characters, as DOS does.
        let _ = self.write_handle(1, bytes);
    }

    pub(super) fn stdin_is_keyboard(&self) -> bool {
        !matches!(self.handles.first(), Some(Some(Handle::File(_))))
    }

    /// One byte of standard input for the character services.
    pub(super) fn stdin_byte(&mut self) -> InRead {
        match self.handles.first_mut() {
            Some(Some(Handle::File(f))) => {
                let mut b = [0u8];
                match f.read(&mut b) {
                    Ok(1) => InRead::Byte(b[0]),
                    _ => InRead::Eof,
                }
            }
            _ => self.input.take(),
        }
    }

    /// Whether standard input has a character ready (no waiting).
    pub(super) fn stdin_ready(&mut self) -> bool {
        match self.handles.first_mut() {
            Some(Some(Handle::File(f))) => {
                let pos = f.stream_position().unwrap_or(0);
                f.metadata().is_ok_and(|m| pos < m.len())
            }
            _ => matches!(self.input.peek(), InRead::Byte(_)),
        }
    }

    /// A blocking character read: the byte, Ctrl-Z at end of input, or
    /// None when the keyboard is empty and more input may come.
    pub(super) fn read_char(&mut self) -> Option<u8> {
        match self.stdin_byte() {
            InRead::Byte(b) => Some(b),
            InRead::Eof => Some(0x1A),
            InRead::Wait => None,
        }
    }

    /// INT 21h AH=0Ah: buffered line input into DS:DX.
    pub(super) fn buffered_input(&mut self, cpu: &mut Cpu) -> Flow {
        let keyboard = self.stdin_is_keyboard();
        if keyboard && !self.input.has_line() {
            return Flow::WaitInput;
        }
        let (ds, dx) = (cpu.sregs[DS], cpu.regs[DX]);
        let max = cpu.rb(Cpu::lin(ds, dx)) as usize;
        if max == 0 {
            return Flow::Continue;
        }
        let mut line = Vec::new();
        loop {
            match self.stdin_byte() {
                InRead::Byte(b'\r') if keyboard => break,
                InRead::Byte(b'\n') => break,
                InRead::Byte(b'\r') => {}
                // Past the buffer DOS beeps and drops the character.
                InRead::Byte(b) if line.len() + 1 < max => line.push(b),
                InRead::Byte(_) => {}
                InRead::Eof | InRead::Wait => break,
            }
        }
        self.con_out(&line);
        self.con_out(b"\r");
        cpu.wb(Cpu::lin(ds, dx.wrapping_add(1)), line.len() as u8);
        for (i, b) in line.iter().chain(b"\r").enumerate() {
            cpu.wb(Cpu::lin(ds, dx.wrapping_add(2 + i as u16)), *b);
        }
        Flow::Continue
    }

    /// INT 21h AH=3Fh on the keyboard: DOS reads a whole line (echoing it)
    /// and hands it out with CR LF, the rest kept for the next read.
    pub(super) fn read_console_line(&mut self, want: usize) -> Option<Vec<u8>> {
        if self.cooked.is_empty() {
            if !self.input.has_line() {
                return None;
            }
            let mut line = Vec::new();
            loop {
                match self.input.take() {
                    InRead::Byte(b'\r') => {
                        line.extend_from_slice(b"\r\n");
                        break;
                    }
                    InRead::Byte(b) => line.push(b),
                    InRead::Eof | InRead::Wait => break,
                }
            }
            self.con_out(&line);
            self.cooked.extend(line);
        }
        let n = want.min(self.cooked.len());
        Some(self.cooked.drain(..n).collect())
    }

    pub(super) fn int16(&mut self, cpu: &mut Cpu) -> Flow {
        let key = |b: u8| (scan_code(b) as u16) << 8 | b as u16;
        match cpu.regs[AX] >> 8 {
            0x00 | 0x10 => match self.input.take() {
                // An extended key: its scan code follows, AL is 0.
                InRead::Byte(0) => match self.input.take() {
                    InRead::Byte(scan) => cpu.regs[AX] = u16::from(scan) << 8,
                    _ => cpu.regs[AX] = 0,
                },
                InRead::Byte(b) => cpu.regs[AX] = key(b),
                InRead::Eof => cpu.regs[AX] = key(0x1A),
                InRead::Wait => return Flow::WaitInput,
            },
            0x01 | 0x11 => match self.input.peek() {
                InRead::Byte(b) => {
                    cpu.regs[AX] = match (b, self.input.peek_second()) {
                        (0, Some(scan)) => u16::from(scan) << 8,
                        _ => key(b),
                    };
                    cpu.flags &= !ZF;
                }
                _ => cpu.flags |= ZF,
            },
            0x02 | 0x12 => cpu.regs[AX] &= 0xFF00,
            ah => self.unsupported_call(format!("INT 16h AH={ah:02X}h")),
        }
        Flow::Continue
    }

    /// INT 10h, the video BIOS (`crate::video`): what it printed goes to
    /// the screen stream as well.
    pub(super) fn int10(&mut self, cpu: &mut Cpu) {
        let done = crate::video::int10(cpu);
        self.screen.extend(&done.printed);
        if let Some(function) = done.unsupported {
            self.unsupported_call(function);
        }
    }
}

/// The BIOS scan code of the US-layout key typing `b` (shifted and
/// control characters on their key), 0 for none.
pub(super) fn scan_code(b: u8) -> u8 {
    const ROWS: [(&[u8], &[u8], u8); 4] = [
        (b"1234567890-=", b"!@#$%^&*()_+", 0x02),
        (b"qwertyuiop[]", b"QWERTYUIOP{}", 0x10),
        (b"asdfghjkl;'`", b"ASDFGHJKL:\"~", 0x1E),
        (b"\\zxcvbnm,./", b"|ZXCVBNM<>?", 0x2B),
    ];
    match b {
        b'\r' => return 0x1C,
        0x1B => return 0x01,
        0x08 => return 0x0E,
        b'\t' => return 0x0F,
        b' ' => return 0x39,
        // Control letters: Ctrl-A is 1 … Ctrl-Z is 26, on their letter.
        1..=26 => return scan_code(b'a' + b - 1),
        _ => {}
    }
    for (plain, shifted, first) in ROWS {
        if let Some(i) = plain.iter().position(|&c| c == b) {
            return first + i as u8;
        }
        if let Some(i) = shifted.iter().position(|&c| c == b) {
            return first + i as u8;
        }
    }
    0
}

/// The scan code a typed byte arrives with (the key's make code).
pub fn scan_code_of(b: u8) -> u8 {
    scan_code(b)
}

/// The keys `x86_write_console_input` types by name, and what each queues:
/// its character, or for a key without one, 0 and its scan code (as DOS
/// reads an extended key: two reads, 0 then the code).
pub fn named_key(name: &str) -> Option<Vec<u8>> {
    let name = name.trim().to_ascii_lowercase();
    let ascii = match name.as_str() {
        "enter" | "return" => Some(b'\r'),
        "esc" | "escape" => Some(0x1B),
        "tab" => Some(b'\t'),
        "backspace" => Some(0x08),
        "space" => Some(b' '),
        _ => None,
    };
    if let Some(c) = ascii {
        return Some(vec![c]);
    }
    let scan = match name.as_str() {
        "home" => 0x47,
        "up" => 0x48,
        "pgup" | "pageup" => 0x49,
        "left" => 0x4B,
        "right" => 0x4D,
        "end" => 0x4F,
        "down" => 0x50,
        "pgdn" | "pagedown" => 0x51,
        "ins" | "insert" => 0x52,
        "del" | "delete" => 0x53,
        "f11" => 0x85,
        "f12" => 0x86,
        f => {
            let n: u8 = f.strip_prefix('f')?.parse().ok()?;
            if !(1..=10).contains(&n) {
                return None;
            }
            0x3A + n
        }
    };
    Some(vec![0, scan])
}

/// The names [`named_key`] knows, for error messages.
pub const KEY_NAMES: &str = "enter, esc, tab, backspace, space, up, down, left, right, home, end, pgup, pgdn, ins, del, f1 to f12";

/// Text for the keyboard: every line end (LF, CR LF or CR) is the Enter
/// key, which types CR.
pub fn keyboard_text(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\r' if text.get(i + 1) == Some(&b'\n') => {
                out.push(b'\r');
                i += 1;
            }
            b'\n' => out.push(b'\r'),
            b => out.push(b),
        }
        i += 1;
    }
    out
}
