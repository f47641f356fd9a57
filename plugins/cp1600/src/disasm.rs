//! Disassembly in as1600 syntax: source operand first, `$` hex, the aliases
//! as1600 accepts (TSTR, CLRR, JR, PSHR, PULR, MVII, …), absolute branch and
//! jump targets.

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    /// The address of the first word.
    pub address: u16,
    /// Words the instruction occupies (SDBD immediates take one extra).
    pub len: u16,
    /// The as1600 mnemonic (aliases such as TSTR and PSHR where as1600 uses them).
    pub mnemonic: &'static str,
    /// The operands in as1600 syntax, source first (empty when none).
    pub operands: String,
    /// Raw words, first the opcode.
    pub words: Vec<u16>,
}

impl Instr {
    /// `MNEMONIC operands` as one line.
    pub fn text(&self) -> String {
        if self.operands.is_empty() {
            self.mnemonic.to_string()
        } else {
            format!("{} {}", self.mnemonic, self.operands)
        }
    }
}

const BRANCHES: [&str; 16] = [
    "B", "BC", "BOV", "BPL", "BEQ", "BLT", "BLE", "BUSC", "NOPP", "BNC", "BNOV", "BMI", "BNEQ",
    "BGE", "BGT", "BESC",
];
const SHIFTS: [&str; 8] = ["SWAP", "SLL", "RLC", "SLLC", "SLR", "SAR", "RRC", "SARC"];
const REG_OPS: [&str; 6] = ["MOVR", "ADDR", "SUBR", "CMPR", "ANDR", "XORR"];
/// Per group 10–15: (direct, indirect, immediate) mnemonics.
const MEM_OPS: [(&str, &str, &str); 6] = [
    ("MVI", "MVI@", "MVII"),
    ("ADD", "ADD@", "ADDI"),
    ("SUB", "SUB@", "SUBI"),
    ("CMP", "CMP@", "CMPI"),
    ("AND", "AND@", "ANDI"),
    ("XOR", "XOR@", "XORI"),
];

fn hex(v: u16) -> String {
    format!("${v:04X}")
}

/// Decodes the instruction at `address`; `sdbd` says it follows an SDBD
/// (which makes an immediate operand two words).
pub fn disassemble(read: impl Fn(u16) -> u16, address: u16, sdbd: bool) -> Instr {
    let at = |i: u16| read(address.wrapping_add(i));
    let op = at(0) & 0x3FF;
    let dd = op & 7;
    let ss = (op >> 3) & 7;
    let mut len = 1;
    let (mnemonic, operands): (&'static str, String) = match op {
        0x000 => ("HLT", String::new()),
        0x001 => ("SDBD", String::new()),
        0x002 => ("EIS", String::new()),
        0x003 => ("DIS", String::new()),
        0x004 => {
            len = 3;
            let (w2, w3) = (at(1), at(2));
            let target = hex(((w2 & 0xFC) << 8) | (w3 & 0x3FF));
            let rr = (w2 >> 8) & 3;
            let suffix = w2 & 3;
            if rr == 3 {
                (["J", "JE", "JD", "J"][suffix as usize], target)
            } else {
                let m = ["JSR", "JSRE", "JSRD", "JSR"][suffix as usize];
                (m, format!("R{}, {target}", 4 + rr))
            }
        }
        0x005 => ("TCI", String::new()),
        0x006 => ("CLRC", String::new()),
        0x007 => ("SETC", String::new()),
        0x008..=0x02F => {
            let m = ["INCR", "DECR", "COMR", "NEGR", "ADCR"][(op as usize >> 3) - 1];
            (m, format!("R{dd}"))
        }
        0x030..=0x033 => ("GSWD", format!("R{}", op & 3)),
        0x034 => ("NOP", String::new()),
        0x035 => ("NOP2", String::new()),
        0x036 => ("SIN", String::new()),
        0x037 => ("SIN2", String::new()),
        0x038..=0x03F => ("RSWD", format!("R{dd}")),
        0x040..=0x07F => {
            let m = SHIFTS[ss as usize];
            if op & 4 != 0 {
                (m, format!("R{}, 2", op & 3))
            } else {
                (m, format!("R{}", op & 3))
            }
        }
        0x080..=0x1FF => {
            let group = (op >> 6) as usize - 2;
            match group {
                0 if ss == dd => ("TSTR", format!("R{dd}")),
                0 if dd == 7 => ("JR", format!("R{ss}")),
                5 if ss == dd => ("CLRR", format!("R{dd}")),
                _ => (REG_OPS[group], format!("R{ss}, R{dd}")),
            }
        }
        0x200..=0x23F => {
            len = 2;
            let disp = at(1);
            let next = address.wrapping_add(2);
            let target = if op & 0x20 != 0 {
                next.wrapping_sub(disp).wrapping_sub(1)
            } else {
                next.wrapping_add(disp)
            };
            if op & 0x10 != 0 {
                ("BEXT", format!("{}, {}", hex(target), op & 0xF))
            } else if op & 0xF == 8 {
                ("NOPP", String::new())
            } else {
                (BRANCHES[(op & 0xF) as usize], hex(target))
            }
        }
        0x240..=0x27F => match ss {
            0 => {
                len = 2;
                ("MVO", format!("R{dd}, {}", hex(at(1))))
            }
            6 => ("PSHR", format!("R{dd}")),
            7 => {
                len = 2;
                ("MVOI", format!("R{dd}, #{}", hex(at(1))))
            }
            _ => ("MVO@", format!("R{dd}, R{ss}")),
        },
        _ => {
            let (direct, indirect, immediate) = MEM_OPS[(op >> 6) as usize - 10];
            match ss {
                0 => {
                    len = 2;
                    (direct, format!("{}, R{dd}", hex(at(1))))
                }
                7 => {
                    let value = if sdbd {
                        len = 3;
                        (at(1) & 0xFF) | ((at(2) & 0xFF) << 8)
                    } else {
                        len = 2;
                        at(1)
                    };
                    (immediate, format!("#{}, R{dd}", hex(value)))
                }
                6 if op >> 6 == 10 => ("PULR", format!("R{dd}")),
                _ => (indirect, format!("R{ss}, R{dd}")),
            }
        }
    };
    Instr {
        address,
        len,
        mnemonic,
        operands,
        words: (0..len).map(at).collect(),
    }
}

/// Disassembles consecutive instructions from `start` while their address
/// is at most `end`, tracking SDBD prefixes; at most `limit` instructions.
pub fn disassemble_range(
    read: impl Fn(u16) -> u16,
    start: u16,
    end: u16,
    limit: usize,
) -> Vec<Instr> {
    let mut out = Vec::new();
    let mut addr = start as u32;
    let mut sdbd = false;
    while addr <= end as u32 && out.len() < limit {
        let ins = disassemble(&read, addr as u16, sdbd);
        sdbd = ins.mnemonic == "SDBD";
        addr += ins.len as u32;
        out.push(ins);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dis(words: &[u16]) -> String {
        let w = words.to_vec();
        disassemble(
            move |a| w.get((a - 0x5000) as usize).copied().unwrap_or(0),
            0x5000,
            false,
        )
        .text()
    }

    #[test]
    fn as1600_syntax() {
        assert_eq!(dis(&[0x0004, 0x0350, 0x0000]), "J $5000");
        assert_eq!(dis(&[0x0004, 0x0150, 0x001E]), "JSR R5, $501E");
        assert_eq!(dis(&[0x02BE, 0x02F0]), "MVII #$02F0, R6");
        assert_eq!(dis(&[0x0240, 0x0200]), "MVO R0, $0200");
        assert_eq!(dis(&[0x0275]), "PSHR R5");
        assert_eq!(dis(&[0x02B7]), "PULR R7");
        assert_eq!(dis(&[0x0097]), "JR R2");
        assert_eq!(dis(&[0x01C9]), "CLRR R1");
        assert_eq!(dis(&[0x0075]), "RRC R1, 2");
        assert_eq!(dis(&[0x022C, 0x0003]), "BNEQ $4FFE");
        assert_eq!(dis(&[0x0208, 0x0000]), "NOPP");
    }

    #[test]
    fn sdbd_immediates_are_three_words() {
        let w = [0x0001u16, 0x02BA, 0x00CD, 0x00AB, 0x0000];
        let v = disassemble_range(|a| w[(a - 0x5000) as usize % 5], 0x5000, 0x5004, 10);
        let texts: Vec<String> = v.iter().map(Instr::text).collect();
        assert_eq!(texts, ["SDBD", "MVII #$ABCD, R2", "HLT"]);
    }
}
