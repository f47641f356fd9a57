//! A small two-pass assembler for the as1600 subset the samples and tests
//! use (`ROMW 16`, `ORG`, labels, `EQU`, `DECLE`, `BIDECLE`, every
//! instruction and alias, `+`/`-` expressions). It is a development tool:
//! the samples' `.bin` files are assembled with it and checked by tests.

use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
/// An assembly error, with the source line it is on (1-based).
pub struct AsmError {
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for AsmError {}

/// The assembled program: words from `origin` on (gaps filled with 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The address of the first word.
    pub origin: u16,
    /// The words from `origin` on.
    pub words: Vec<u16>,
    /// Every label and `EQU` name with its value, for tests that check addresses.
    pub labels: HashMap<String, u16>,
}

impl Program {
    /// Big-endian bytes, as a raw `.bin`.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }
}

const BRANCHES: [(&str, u16); 18] = [
    ("B", 0),
    ("BC", 1),
    ("BOV", 2),
    ("BPL", 3),
    ("BEQ", 4),
    ("BZE", 4),
    ("BLT", 5),
    ("BLE", 6),
    ("BUSC", 7),
    ("NOPP", 8),
    ("BNC", 9),
    ("BNOV", 10),
    ("BMI", 11),
    ("BNEQ", 12),
    ("BNZE", 12),
    ("BGE", 13),
    ("BGT", 14),
    ("BESC", 15),
];
const IMPLIED: [(&str, u16); 11] = [
    ("HLT", 0x000),
    ("SDBD", 0x001),
    ("EIS", 0x002),
    ("DIS", 0x003),
    ("TCI", 0x005),
    ("CLRC", 0x006),
    ("SETC", 0x007),
    ("NOP", 0x034),
    ("NOP2", 0x035),
    ("SIN", 0x036),
    ("SIN2", 0x037),
];
const SINGLE: [(&str, u16); 5] = [
    ("INCR", 0x008),
    ("DECR", 0x010),
    ("COMR", 0x018),
    ("NEGR", 0x020),
    ("ADCR", 0x028),
];
const SHIFTS: [&str; 8] = ["SWAP", "SLL", "RLC", "SLLC", "SLR", "SAR", "RRC", "SARC"];
const REG2: [(&str, u16); 6] = [
    ("MOVR", 0x080),
    ("ADDR", 0x0C0),
    ("SUBR", 0x100),
    ("CMPR", 0x140),
    ("ANDR", 0x180),
    ("XORR", 0x1C0),
];
const MEMOPS: [(&str, u16); 6] = [
    ("MVI", 0x280),
    ("ADD", 0x2C0),
    ("SUB", 0x300),
    ("CMP", 0x340),
    ("AND", 0x380),
    ("XOR", 0x3C0),
];

fn lookup(table: &[(&str, u16)], m: &str) -> Option<u16> {
    table.iter().find(|(n, _)| *n == m).map(|(_, v)| *v)
}

struct Ctx<'a> {
    labels: &'a HashMap<String, u16>,
    /// First pass: unknown labels evaluate to 0.
    lenient: bool,
    line: usize,
}

impl Ctx<'_> {
    fn err(&self, message: impl Into<String>) -> AsmError {
        AsmError {
            line: self.line,
            message: message.into(),
        }
    }

    fn reg(&self, tok: &str) -> Result<u16, AsmError> {
        let t = tok.trim().to_ascii_uppercase();
        match t.as_str() {
            "PC" => Ok(7),
            "SP" => Ok(6),
            _ => t
                .strip_prefix('R')
                .and_then(|d| d.parse::<u16>().ok())
                .filter(|d| *d < 8)
                .ok_or_else(|| self.err(format!("expected a register R0-R7, got `{tok}`"))),
        }
    }

    fn expr(&self, text: &str) -> Result<u16, AsmError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(self.err("missing operand"));
        }
        let mut total: i64 = 0;
        let mut sign = 1i64;
        let mut term = String::new();
        let flush = |term: &mut String, sign: i64, total: &mut i64| -> Result<(), AsmError> {
            let v = self.term(term.trim())?;
            *total += sign * v;
            term.clear();
            Ok(())
        };
        for (i, ch) in t.char_indices() {
            if (ch == '+' || ch == '-') && i > 0 && !term.trim().is_empty() {
                flush(&mut term, sign, &mut total)?;
                sign = if ch == '-' { -1 } else { 1 };
            } else if ch == '-' && term.trim().is_empty() {
                sign = -sign;
            } else {
                term.push(ch);
            }
        }
        flush(&mut term, sign, &mut total)?;
        Ok(total as u16)
    }

    fn term(&self, t: &str) -> Result<i64, AsmError> {
        if let Some(h) = t.strip_prefix('$') {
            return i64::from_str_radix(h, 16)
                .map_err(|_| self.err(format!("bad hex number `{t}`")));
        }
        if t.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return t.parse().map_err(|_| self.err(format!("bad number `{t}`")));
        }
        match self.labels.get(&t.to_ascii_lowercase()) {
            Some(v) => Ok(*v as i64),
            None if self.lenient => Ok(0),
            None => Err(self.err(format!("unknown label `{t}`"))),
        }
    }

    fn imm(&self, tok: &str) -> Result<u16, AsmError> {
        let t = tok.trim();
        let e = t
            .strip_prefix('#')
            .ok_or_else(|| self.err(format!("expected an immediate `#value`, got `{t}`")))?;
        self.expr(e)
    }
}

fn split_operands(s: &str) -> Vec<String> {
    if s.trim().is_empty() {
        vec![]
    } else {
        s.split(',').map(|p| p.trim().to_string()).collect()
    }
}

/// Assembles one instruction at `addr`; `sdbd` when it follows SDBD.
fn encode(ctx: &Ctx, m: &str, ops: &[String], addr: u16, sdbd: bool) -> Result<Vec<u16>, AsmError> {
    let need = |n: usize| -> Result<(), AsmError> {
        if ops.len() == n {
            Ok(())
        } else {
            Err(ctx.err(format!("{m} takes {n} operand(s), got {}", ops.len())))
        }
    };
    let imm_words = |v: u16| {
        if sdbd {
            vec![v & 0xFF, v >> 8]
        } else {
            vec![v]
        }
    };
    if let Some(op) = lookup(&IMPLIED, m) {
        need(0)?;
        return Ok(vec![op]);
    }
    if let Some(base) = lookup(&SINGLE, m) {
        need(1)?;
        return Ok(vec![base | ctx.reg(&ops[0])?]);
    }
    if let Some(cc) = lookup(&BRANCHES, m) {
        if m == "NOPP" && ops.is_empty() {
            return Ok(vec![0x208, 0]);
        }
        need(1)?;
        return Ok(branch(0x200 | cc, ctx.expr(&ops[0])?, addr));
    }
    if m == "BEXT" {
        need(2)?;
        let cond = ctx.expr(&ops[1])?;
        if cond > 15 {
            return Err(ctx.err("BEXT condition must be 0-15"));
        }
        return Ok(branch(0x210 | cond, ctx.expr(&ops[0])?, addr));
    }
    if let Some(i) = SHIFTS.iter().position(|s| *s == m) {
        if ops.is_empty() || ops.len() > 2 {
            return Err(ctx.err(format!("{m} takes a register and an optional count 1 or 2")));
        }
        let r = ctx.reg(&ops[0])?;
        if r > 3 {
            return Err(ctx.err("shifts work on R0-R3 only"));
        }
        let two = match ops.get(1).map(|o| ctx.expr(o)).transpose()? {
            None | Some(1) => 0,
            Some(2) => 4,
            Some(n) => return Err(ctx.err(format!("shift count must be 1 or 2, got {n}"))),
        };
        return Ok(vec![0x040 | (i as u16) << 3 | two | r]);
    }
    if let Some(base) = lookup(&REG2, m) {
        need(2)?;
        return Ok(vec![base | ctx.reg(&ops[0])? << 3 | ctx.reg(&ops[1])?]);
    }
    match m {
        "TSTR" | "CLRR" => {
            need(1)?;
            let r = ctx.reg(&ops[0])?;
            let base = if m == "TSTR" { 0x080 } else { 0x1C0 };
            return Ok(vec![base | r << 3 | r]);
        }
        "JR" => {
            need(1)?;
            return Ok(vec![0x080 | ctx.reg(&ops[0])? << 3 | 7]);
        }
        "GSWD" | "RSWD" => {
            need(1)?;
            let r = ctx.reg(&ops[0])?;
            if m == "GSWD" && r > 3 {
                return Err(ctx.err("GSWD works on R0-R3 only"));
            }
            return Ok(vec![if m == "GSWD" { 0x030 } else { 0x038 } | r]);
        }
        "J" | "JE" | "JD" | "JSR" | "JSRE" | "JSRD" | "CALL" => {
            let ii = if m.ends_with('E') {
                1
            } else if m.ends_with('D') {
                2
            } else {
                0
            };
            let (bb, target) = match m {
                "J" | "JE" | "JD" => {
                    need(1)?;
                    (3, ctx.expr(&ops[0])?)
                }
                "CALL" => {
                    need(1)?;
                    (1, ctx.expr(&ops[0])?)
                }
                _ => {
                    need(2)?;
                    let r = ctx.reg(&ops[0])?;
                    if !(4..=6).contains(&r) {
                        return Err(ctx.err("JSR returns through R4, R5 or R6"));
                    }
                    (r - 4, ctx.expr(&ops[1])?)
                }
            };
            return Ok(vec![
                0x004,
                bb << 8 | (target >> 8) & 0xFC | ii,
                target & 0x3FF,
            ]);
        }
        "MVO" => {
            need(2)?;
            return Ok(vec![0x240 | ctx.reg(&ops[0])?, ctx.expr(&ops[1])?]);
        }
        "MVO@" => {
            need(2)?;
            return Ok(vec![0x240 | ctx.reg(&ops[1])? << 3 | ctx.reg(&ops[0])?]);
        }
        "PSHR" => {
            need(1)?;
            return Ok(vec![0x270 | ctx.reg(&ops[0])?]);
        }
        "PULR" => {
            need(1)?;
            return Ok(vec![0x2B0 | ctx.reg(&ops[0])?]);
        }
        "MVOI" => {
            need(2)?;
            return Ok(vec![0x278 | ctx.reg(&ops[0])?, ctx.imm(&ops[1])?]);
        }
        _ => {}
    }
    let (stem, form) = if let Some(s) = m.strip_suffix('@') {
        (s, '@')
    } else if let Some(base) = lookup(&MEMOPS, m) {
        need(2)?;
        return Ok(vec![base | ctx.reg(&ops[1])?, ctx.expr(&ops[0])?]);
    } else if let Some(s) = m.strip_suffix('I') {
        (s, 'I')
    } else {
        return Err(ctx.err(format!("unknown mnemonic `{m}`")));
    };
    let base = lookup(&MEMOPS, stem).ok_or_else(|| ctx.err(format!("unknown mnemonic `{m}`")))?;
    need(2)?;
    let d = ctx.reg(&ops[1])?;
    if form == '@' {
        Ok(vec![base | ctx.reg(&ops[0])? << 3 | d])
    } else {
        let mut w = vec![base | 0x38 | d];
        w.extend(imm_words(ctx.imm(&ops[0])?));
        Ok(w)
    }
}

fn branch(op: u16, target: u16, addr: u16) -> Vec<u16> {
    let next = addr.wrapping_add(2);
    if target >= next {
        vec![op, target - next]
    } else {
        vec![op | 0x20, next - target - 1]
    }
}

/// Assembles as1600 source.
pub fn assemble(source: &str) -> Result<Program, AsmError> {
    let mut labels = HashMap::new();
    let first = pass(source, &labels, true)?;
    labels = first.labels;
    let second = pass(source, &labels, false)?;
    Ok(second)
}

fn pass(source: &str, known: &HashMap<String, u16>, lenient: bool) -> Result<Program, AsmError> {
    let mut labels: HashMap<String, u16> = HashMap::new();
    let mut words: Vec<(u16, u16)> = Vec::new();
    let mut pc: u16 = 0x5000;
    let mut origin: Option<u16> = None;
    let mut prev_sdbd = false;
    for (i, raw) in source.lines().enumerate() {
        let ctx = Ctx {
            labels: known,
            lenient,
            line: i + 1,
        };
        let mut line = raw.split(';').next().unwrap_or("").trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let mut label = None;
        let starts_col0 = !line.starts_with([' ', '\t']);
        if let Some((l, rest)) = line.split_once(':') {
            if !l.trim().contains(char::is_whitespace) && !l.contains('@') {
                label = Some(l.trim().to_string());
                line = rest;
            }
        } else if starts_col0 {
            let (l, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            label = Some(l.to_string());
            line = rest;
        }
        let body = line.trim();
        let (mnem, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let m = mnem.to_ascii_uppercase();
        if m == "EQU" {
            let name = label.ok_or_else(|| ctx.err("EQU needs a label"))?;
            labels.insert(name.to_ascii_lowercase(), ctx.expr(rest)?);
            continue;
        }
        if let Some(l) = label {
            labels.insert(l.to_ascii_lowercase(), pc);
        }
        if m.is_empty() {
            continue;
        }
        let ops = split_operands(rest);
        let emitted: Vec<u16> = match m.as_str() {
            "ROMW" => {
                if ctx.expr(rest)? != 16 {
                    return Err(ctx.err("only ROMW 16 is supported"));
                }
                vec![]
            }
            "ORG" => {
                pc = ctx.expr(rest)?;
                origin.get_or_insert(pc);
                vec![]
            }
            "DECLE" => ops.iter().map(|o| ctx.expr(o)).collect::<Result<_, _>>()?,
            "BIDECLE" => {
                let mut v = vec![];
                for o in &ops {
                    let x = ctx.expr(o)?;
                    v.extend([x & 0xFF, x >> 8]);
                }
                v
            }
            _ => encode(&ctx, &m, &ops, pc, prev_sdbd)?,
        };
        prev_sdbd = m == "SDBD";
        for w in emitted {
            words.push((pc, w));
            pc = pc.wrapping_add(1);
        }
    }
    let origin = origin.unwrap_or(0x5000);
    let mut image = Vec::new();
    for (a, w) in words {
        let off = a.wrapping_sub(origin) as usize;
        if image.len() <= off {
            image.resize(off + 1, 0);
        }
        image[off] = w;
    }
    Ok(Program {
        origin,
        words: image,
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_as1600() {
        let p = assemble(
            "        ROMW 16\n        ORG $5000\nstart:  J start\n        JSR R5, $501E\n        SDBD\n        MVII #$ABCD, R2\nloop:   BNEQ loop\n",
        )
        .unwrap();
        assert_eq!(
            p.words,
            vec![
                0x0004, 0x0350, 0x0000, 0x0004, 0x0150, 0x001E, 0x0001, 0x02BA, 0x00CD, 0x00AB,
                0x022C, 0x0001
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = assemble("  ORG $5000\n  MVII #1, R9\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(assemble("  FOO R1\n").is_err());
        assert!(assemble("  B nowhere\n").is_err());
    }
}
