//! A real-mode 8086/80186 disassembler (Intel syntax, hex immediates).
//!
//! Used by `x86_read_disassembly`, by the CFG (node length and text) and by
//! `x86_step`. It reads through a closure so it works on live machine memory.

use crate::cpu::Model;

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Length in bytes, prefixes included (1..=15 in practice).
    pub len: u8,
    /// Intel-syntax text, e.g. `mov ax,0x1234`.
    pub text: String,
}

const R16: [&str; 8] = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
const R8: [&str; 8] = ["al", "cl", "dl", "bl", "ah", "ch", "dh", "bh"];
const SREG: [&str; 4] = ["es", "cs", "ss", "ds"];
const ALU: [&str; 8] = ["add", "or", "adc", "sbb", "and", "sub", "xor", "cmp"];
const SHIFT: [&str; 8] = ["rol", "ror", "rcl", "rcr", "shl", "shr", "setmo", "sar"];
const JCC: [&str; 16] = [
    "jo", "jno", "jb", "jnb", "jz", "jnz", "jbe", "ja", "js", "jns", "jpe", "jpo", "jl", "jge",
    "jle", "jg",
];
const EA: [&str; 8] = ["bx+si", "bx+di", "bp+si", "bp+di", "si", "di", "bp", "bx"];

struct Reader<'a> {
    read: &'a dyn Fn(u16) -> u8,
    ip: u16,
    start: u16,
    seg: Option<&'static str>,
}

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        let v = (self.read)(self.ip);
        self.ip = self.ip.wrapping_add(1);
        v
    }
    fn u16(&mut self) -> u16 {
        let lo = self.u8() as u16;
        lo | (self.u8() as u16) << 8
    }
    fn len(&self) -> u8 {
        self.ip.wrapping_sub(self.start) as u8
    }
    /// Decodes the r/m operand; returns (text, is_register).
    fn rm(&mut self, modrm: u8, word: bool) -> String {
        let md = modrm >> 6;
        let rm = (modrm & 7) as usize;
        if md == 3 {
            return if word { R16[rm] } else { R8[rm] }.to_string();
        }
        let size = if word { "word" } else { "byte" };
        let seg = self.seg.map(|s| format!("{s}:")).unwrap_or_default();
        let inner = match md {
            0 if rm == 6 => format!("0x{:04x}", self.u16()),
            0 => EA[rm].to_string(),
            1 => {
                let d = self.u8() as i8;
                if d < 0 {
                    format!("{}-0x{:x}", EA[rm], -(d as i16))
                } else {
                    format!("{}+0x{:x}", EA[rm], d)
                }
            }
            _ => format!("{}+0x{:x}", EA[rm], self.u16()),
        };
        format!("{size} {seg}[{inner}]")
    }
}

/// Decodes the instruction at `ip`, reading bytes of the code segment
/// through `read(offset)`.
pub fn decode(read: &dyn Fn(u16) -> u8, ip: u16, model: Model) -> Insn {
    let mut r = Reader {
        read,
        ip,
        start: ip,
        seg: None,
    };
    let mut prefix = String::new();
    let op = loop {
        let b = r.u8();
        match b {
            0x26 | 0x2E | 0x36 | 0x3E => r.seg = Some(SREG[((b >> 3) & 3) as usize]),
            0xF0 | 0xF1 => prefix.push_str("lock "),
            0xF2 => prefix.push_str("repne "),
            0xF3 => prefix.push_str("rep "),
            _ => break b,
        }
        if r.len() >= 15 {
            break 0x90;
        }
    };
    let i186 = model == Model::I80186;
    let rel8 = |r: &mut Reader| {
        let d = r.u8() as i8 as u16;
        format!("0x{:04x}", r.ip.wrapping_add(d))
    };
    let text = match op {
        0x00..=0x3F if op & 7 < 6 => {
            let name = ALU[(op >> 3) as usize];
            let word = op & 1 != 0;
            match (op >> 1) & 3 {
                0 | 1 => {
                    let m = r.u8();
                    let reg = if word { R16 } else { R8 }[((m >> 3) & 7) as usize];
                    let rm = r.rm(m, word);
                    if op & 2 == 0 {
                        format!("{name} {rm},{reg}")
                    } else {
                        format!("{name} {reg},{rm}")
                    }
                }
                _ => {
                    if word {
                        format!("{name} ax,0x{:04x}", r.u16())
                    } else {
                        format!("{name} al,0x{:02x}", r.u8())
                    }
                }
            }
        }
        0x06 | 0x0E | 0x16 | 0x1E => format!("push {}", SREG[(op >> 3) as usize]),
        0x07 | 0x17 | 0x1F => format!("pop {}", SREG[(op >> 3) as usize]),
        0x0F => {
            if i186 {
                "(bad)".into()
            } else {
                "pop cs".into()
            }
        }
        0x27 => "daa".into(),
        0x2F => "das".into(),
        0x37 => "aaa".into(),
        0x3F => "aas".into(),
        0x40..=0x47 => format!("inc {}", R16[(op & 7) as usize]),
        0x48..=0x4F => format!("dec {}", R16[(op & 7) as usize]),
        0x50..=0x57 => format!("push {}", R16[(op & 7) as usize]),
        0x58..=0x5F => format!("pop {}", R16[(op & 7) as usize]),
        0x60..=0x6F if !i186 => format!("{} {}", JCC[(op & 0xF) as usize], rel8(&mut r)),
        0x60 => "pusha".into(),
        0x61 => "popa".into(),
        0x62 => {
            let m = r.u8();
            let reg = R16[((m >> 3) & 7) as usize];
            format!("bound {reg},{}", r.rm(m, true))
        }
        0x68 => format!("push 0x{:04x}", r.u16()),
        0x6A => format!("push 0x{:02x}", r.u8()),
        0x69 | 0x6B => {
            let m = r.u8();
            let reg = R16[((m >> 3) & 7) as usize];
            let rm = r.rm(m, true);
            let imm = if op == 0x69 {
                format!("0x{:04x}", r.u16())
            } else {
                format!("0x{:02x}", r.u8())
            };
            format!("imul {reg},{rm},{imm}")
        }
        0x6C => "insb".into(),
        0x6D => "insw".into(),
        0x6E => "outsb".into(),
        0x6F => "outsw".into(),
        0x70..=0x7F => format!("{} {}", JCC[(op & 0xF) as usize], rel8(&mut r)),
        0x80..=0x83 => {
            let m = r.u8();
            let name = ALU[((m >> 3) & 7) as usize];
            let rm = r.rm(m, op & 1 != 0);
            let imm = match op {
                0x81 => format!("0x{:04x}", r.u16()),
                0x83 => format!("0x{:04x}", r.u8() as i8 as u16),
                _ => format!("0x{:02x}", r.u8()),
            };
            format!("{name} {rm},{imm}")
        }
        0x84..=0x8B => {
            let m = r.u8();
            let word = op & 1 != 0;
            let reg = if word { R16 } else { R8 }[((m >> 3) & 7) as usize];
            let rm = r.rm(m, word);
            let name = match op {
                0x84 | 0x85 => "test",
                0x86 | 0x87 => "xchg",
                _ => "mov",
            };
            if op >= 0x8A {
                format!("{name} {reg},{rm}")
            } else {
                format!("{name} {rm},{reg}")
            }
        }
        0x8C | 0x8E => {
            let m = r.u8();
            let s = SREG[((m >> 3) & 3) as usize];
            let rm = r.rm(m, true);
            if op == 0x8C {
                format!("mov {rm},{s}")
            } else {
                format!("mov {s},{rm}")
            }
        }
        0x8D | 0xC4 | 0xC5 => {
            let m = r.u8();
            let reg = R16[((m >> 3) & 7) as usize];
            let name = match op {
                0x8D => "lea",
                0xC4 => "les",
                _ => "lds",
            };
            format!("{name} {reg},{}", r.rm(m, true))
        }
        0x8F => {
            let m = r.u8();
            format!("pop {}", r.rm(m, true))
        }
        0x90 => "nop".into(),
        0x91..=0x97 => format!("xchg ax,{}", R16[(op & 7) as usize]),
        0x98 => "cbw".into(),
        0x99 => "cwd".into(),
        0x9A | 0xEA => {
            let off = r.u16();
            let seg = r.u16();
            format!(
                "{} 0x{seg:04x}:0x{off:04x}",
                if op == 0x9A { "call" } else { "jmp" }
            )
        }
        0x9B => "wait".into(),
        0x9C => "pushf".into(),
        0x9D => "popf".into(),
        0x9E => "sahf".into(),
        0x9F => "lahf".into(),
        0xA0..=0xA3 => {
            let seg = r.seg.unwrap_or("ds");
            let mem = format!("[{seg}:0x{:04x}]", r.u16());
            match op {
                0xA0 => format!("mov al,byte {mem}"),
                0xA1 => format!("mov ax,word {mem}"),
                0xA2 => format!("mov byte {mem},al"),
                _ => format!("mov word {mem},ax"),
            }
        }
        0xA4 => "movsb".into(),
        0xA5 => "movsw".into(),
        0xA6 => "cmpsb".into(),
        0xA7 => "cmpsw".into(),
        0xA8 => format!("test al,0x{:02x}", r.u8()),
        0xA9 => format!("test ax,0x{:04x}", r.u16()),
        0xAA => "stosb".into(),
        0xAB => "stosw".into(),
        0xAC => "lodsb".into(),
        0xAD => "lodsw".into(),
        0xAE => "scasb".into(),
        0xAF => "scasw".into(),
        0xB0..=0xB7 => format!("mov {},0x{:02x}", R8[(op & 7) as usize], r.u8()),
        0xB8..=0xBF => format!("mov {},0x{:04x}", R16[(op & 7) as usize], r.u16()),
        0xC0 | 0xC1 if i186 => {
            let m = r.u8();
            let name = SHIFT[((m >> 3) & 7) as usize];
            let rm = r.rm(m, op & 1 != 0);
            format!("{name} {rm},0x{:02x}", r.u8())
        }
        0xC0 | 0xC2 => format!("ret 0x{:04x}", r.u16()),
        0xC1 | 0xC3 => "ret".into(),
        0xC6 | 0xC7 => {
            let m = r.u8();
            let rm = r.rm(m, op & 1 != 0);
            let imm = if op == 0xC7 {
                format!("0x{:04x}", r.u16())
            } else {
                format!("0x{:02x}", r.u8())
            };
            format!("mov {rm},{imm}")
        }
        0xC8 if i186 => {
            let size = r.u16();
            format!("enter 0x{size:04x},0x{:02x}", r.u8())
        }
        0xC9 if i186 => "leave".into(),
        0xC8 | 0xCA => format!("retf 0x{:04x}", r.u16()),
        0xC9 | 0xCB => "retf".into(),
        0xCC => "int3".into(),
        0xCD => format!("int 0x{:02x}", r.u8()),
        0xCE => "into".into(),
        0xCF => "iret".into(),
        0xD0..=0xD3 => {
            let m = r.u8();
            let name = SHIFT[((m >> 3) & 7) as usize];
            let rm = r.rm(m, op & 1 != 0);
            format!("{name} {rm},{}", if op & 2 == 0 { "1" } else { "cl" })
        }
        0xD4 => format!("aam 0x{:02x}", r.u8()),
        0xD5 => format!("aad 0x{:02x}", r.u8()),
        0xD6 => "salc".into(),
        0xD7 => "xlatb".into(),
        0xD8..=0xDF => {
            let m = r.u8();
            format!(
                "esc 0x{:02x},{}",
                ((op & 7) << 3) | ((m >> 3) & 7),
                r.rm(m, true)
            )
        }
        0xE0 => format!("loopnz {}", rel8(&mut r)),
        0xE1 => format!("loopz {}", rel8(&mut r)),
        0xE2 => format!("loop {}", rel8(&mut r)),
        0xE3 => format!("jcxz {}", rel8(&mut r)),
        0xE4 => format!("in al,0x{:02x}", r.u8()),
        0xE5 => format!("in ax,0x{:02x}", r.u8()),
        0xE6 => format!("out 0x{:02x},al", r.u8()),
        0xE7 => format!("out 0x{:02x},ax", r.u8()),
        0xE8 | 0xE9 => {
            let d = r.u16();
            format!(
                "{} 0x{:04x}",
                if op == 0xE8 { "call" } else { "jmp" },
                r.ip.wrapping_add(d)
            )
        }
        0xEB => format!("jmp short {}", rel8(&mut r)),
        0xEC => "in al,dx".into(),
        0xED => "in ax,dx".into(),
        0xEE => "out dx,al".into(),
        0xEF => "out dx,ax".into(),
        0xF4 => "hlt".into(),
        0xF5 => "cmc".into(),
        0xF6 | 0xF7 => {
            let m = r.u8();
            let word = op & 1 != 0;
            let sub = (m >> 3) & 7;
            let rm = r.rm(m, word);
            match sub {
                0 | 1 => {
                    let imm = if word {
                        format!("0x{:04x}", r.u16())
                    } else {
                        format!("0x{:02x}", r.u8())
                    };
                    format!("test {rm},{imm}")
                }
                _ => format!(
                    "{} {rm}",
                    ["", "", "not", "neg", "mul", "imul", "div", "idiv"][sub as usize]
                ),
            }
        }
        0xF8 => "clc".into(),
        0xF9 => "stc".into(),
        0xFA => "cli".into(),
        0xFB => "sti".into(),
        0xFC => "cld".into(),
        0xFD => "std".into(),
        0xFE => {
            let m = r.u8();
            let sub = (m >> 3) & 7;
            let rm = r.rm(m, false);
            match sub {
                0 => format!("inc {rm}"),
                1 => format!("dec {rm}"),
                _ => "(bad)".into(),
            }
        }
        0xFF => {
            let m = r.u8();
            let sub = (m >> 3) & 7;
            let rm = r.rm(m, true);
            let name = [
                "inc", "dec", "call", "call far", "jmp", "jmp far", "push", "push",
            ][sub as usize];
            format!("{name} {rm}")
        }
        _ => "(bad)".into(),
    };
    let text = match r.seg {
        // String ops and XLAT carry the override in front.
        Some(s) if !text.contains('[') => format!("{s}: {prefix}{text}"),
        _ => format!("{prefix}{text}"),
    };
    Insn { len: r.len(), text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dis(bytes: &[u8]) -> Insn {
        let v = bytes.to_vec();
        decode(
            &|o| v.get(o as usize).copied().unwrap_or(0x90),
            0,
            Model::I80186,
        )
    }

    #[test]
    fn decodes_common_forms() {
        assert_eq!(
            dis(&[0xB8, 0x34, 0x12]),
            Insn {
                len: 3,
                text: "mov ax,0x1234".into()
            }
        );
        assert_eq!(
            dis(&[0x2E, 0x8C, 0x1E, 0xD1, 0x00]).text,
            "mov word cs:[0x00d1],ds"
        );
        assert_eq!(dis(&[0xE8, 0x2E, 0x00]).text, "call 0x0031");
        assert_eq!(
            dis(&[0xF3, 0xA4]),
            Insn {
                len: 2,
                text: "rep movsb".into()
            }
        );
        assert_eq!(dis(&[0x8B, 0x46, 0xFE]).text, "mov ax,word [bp-0x2]");
        assert_eq!(dis(&[0xC8, 4, 0, 1]).text, "enter 0x0004,0x01");
        assert_eq!(dis(&[0xCD, 0x21]).len, 2);
    }
}
