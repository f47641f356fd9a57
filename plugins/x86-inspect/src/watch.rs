//! Breakpoints on memory and I/O accesses, and conditions on any
//! breakpoint (x86_add_breakpoint's `type` and `condition`, in Spice86's
//! shapes).
//!
//! [`Watch`] is what the CPU checks on each data access while a machine has
//! access breakpoints: a bit per 64-byte block of memory (and the watched
//! port ranges), so an access outside every watched block costs one bit
//! test; the first access that hits a watched range in an instruction is
//! kept, and the run stops after that instruction. Instruction fetches are
//! not data accesses and never hit.
//!
//! [`Condition`] is a small expression over registers, flags and memory,
//! checked when its breakpoint is hit; the run goes on while it is false:
//!
//! ```text
//! ax == 0x1234 && byte[ds:si] != 0      cx > 10 || zf      word[0x046C] >= 18
//! ```
//!
//! Operands: the 16-bit registers (ax … di, cs ds es ss, ip, flags), their
//! 8-bit halves (al … bh), the flags cf pf af zf sf tf if df of (0 or 1),
//! numbers (decimal, `0x` hex, or hex with an `h` suffix), `byte[A]` and
//! `word[A]` where A is a linear address expression or `seg:off`.
//! Operators, loosest first: `||`, `&&`, comparisons (`== != < <= > >=`),
//! `|`, `^`, `&`, `+ -`, `* / %`, unary `! - ~`, parentheses. Values are
//! unsigned 32-bit; true is non-zero.

use crate::cpu::Cpu;
use std::cell::Cell;

/// What a breakpoint stops on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        self.exact(addr, write, false);
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
    fn exact(&self, addr: u32, write: bool, _io: bool) {
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

/// A breakpoint's condition, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    text: String,
    expr: Expr,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Num(u32),
    Reg(Reg),
    Mem(bool, Box<Expr>, Option<Box<Expr>>),
    Unary(char, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reg {
    Word(usize),
    Seg(usize),
    Low(usize),
    High(usize),
    Ip,
    Flags,
    Flag(u16),
}

/// Longest condition accepted: a few comparisons, not a program.
pub const MAX_CONDITION: usize = 256;

const WORDS: [&str; 8] = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
const SEGS: [&str; 4] = ["es", "cs", "ss", "ds"];
const FLAGS: [(&str, u16); 9] = [
    ("cf", 0x0001),
    ("pf", 0x0004),
    ("af", 0x0010),
    ("zf", 0x0040),
    ("sf", 0x0080),
    ("tf", 0x0100),
    ("if", 0x0200),
    ("df", 0x0400),
    ("of", 0x0800),
];

impl Condition {
    /// Parses `text`, or says where and why it cannot.
    pub fn parse(text: &str) -> Result<Condition, String> {
        if text.len() > MAX_CONDITION {
            return Err(format!(
                "a condition is at most {MAX_CONDITION} characters; this one has {}",
                text.len()
            ));
        }
        let tokens = tokenize(text)?;
        let mut p = Parser {
            tokens,
            at: 0,
            depth: 0,
        };
        let expr = p.or()?;
        if let Some(t) = p.tokens.get(p.at) {
            return Err(format!("unexpected `{t}` after a complete condition"));
        }
        Ok(Condition {
            text: text.trim().to_owned(),
            expr,
        })
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it holds for `cpu` now.
    pub fn holds(&self, cpu: &Cpu) -> bool {
        eval(&self.expr, cpu) != 0
    }
}

fn tokenize(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(text[start..i].to_ascii_lowercase());
        } else {
            let two = text.get(i..i + 2).unwrap_or("");
            if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two) {
                out.push(two.to_owned());
                i += 2;
            } else if "()[]:!~<>+-*/%&|^".contains(c) {
                out.push(c.to_string());
                i += 1;
            } else if c == '=' {
                return Err(format!(
                    "a lone `=` at character {}: compare with `==`",
                    i + 1
                ));
            } else {
                return Err(format!(
                    "`{c}` at character {} is not part of a condition",
                    i + 1
                ));
            }
        }
    }
    if out.is_empty() {
        return Err("the condition is empty".into());
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<String>,
    at: usize,
    depth: usize,
}

const LEVELS: [&[&str]; 7] = [
    &["||"],
    &["&&"],
    &["==", "!=", "<", "<=", ">", ">="],
    &["|"],
    &["^"],
    &["&"],
    &["+", "-"],
];

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn expect(&mut self, t: &str) -> Result<(), String> {
        match self.peek() {
            Some(x) if x == t => {
                self.at += 1;
                Ok(())
            }
            Some(x) => Err(format!("expected `{t}`, found `{x}`")),
            None => Err(format!("expected `{t}` at the end")),
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        self.level(0)
    }

    fn level(&mut self, n: usize) -> Result<Expr, String> {
        if n == LEVELS.len() {
            return self.product();
        }
        let mut left = self.level(n + 1)?;
        while let Some(op) = self
            .peek()
            .and_then(|t| LEVELS[n].iter().find(|o| **o == t))
        {
            self.at += 1;
            let right = self.level(n + 1)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(op) = self
            .peek()
            .and_then(|t| ["*", "/", "%"].into_iter().find(|o| *o == t))
        {
            self.at += 1;
            let right = self.unary()?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > 32 {
            return Err("the condition nests too deeply".into());
        }
        let e = match self.peek() {
            Some(op @ ("!" | "-" | "~")) => {
                let op = op.chars().next().unwrap_or('!');
                self.at += 1;
                Expr::Unary(op, Box::new(self.unary()?))
            }
            Some("(") => {
                self.at += 1;
                let e = self.or()?;
                self.expect(")")?;
                e
            }
            _ => self.operand()?,
        };
        self.depth -= 1;
        Ok(e)
    }

    fn operand(&mut self) -> Result<Expr, String> {
        let Some(t) = self.peek().map(str::to_owned) else {
            return Err("the condition ends where a value was expected".into());
        };
        self.at += 1;
        if t == "byte" || t == "word" {
            self.expect("[")?;
            let first = self.or()?;
            let second = if self.peek() == Some(":") {
                self.at += 1;
                Some(Box::new(self.or()?))
            } else {
                None
            };
            self.expect("]")?;
            return Ok(Expr::Mem(t == "word", Box::new(first), second));
        }
        if let Some(n) = number(&t) {
            return Ok(Expr::Num(n));
        }
        let reg = if let Some(i) = WORDS.iter().position(|r| *r == t) {
            Reg::Word(i)
        } else if let Some(i) = SEGS.iter().position(|r| *r == t) {
            Reg::Seg(i)
        } else if let Some(i) = ["al", "cl", "dl", "bl"].iter().position(|r| *r == t) {
            Reg::Low(i)
        } else if let Some(i) = ["ah", "ch", "dh", "bh"].iter().position(|r| *r == t) {
            Reg::High(i)
        } else if t == "ip" {
            Reg::Ip
        } else if t == "flags" {
            Reg::Flags
        } else if let Some((_, bit)) = FLAGS.iter().find(|(f, _)| *f == t) {
            Reg::Flag(*bit)
        } else {
            return Err(format!(
                "`{t}` is neither a register, a flag, a number nor byte[…]/word[…]"
            ));
        };
        Ok(Expr::Reg(reg))
    }
}

fn number(t: &str) -> Option<u32> {
    if let Some(hex) = t.strip_prefix("0x") {
        u32::from_str_radix(hex, 16).ok()
    } else if let Some(hex) = t
        .strip_suffix('h')
        .filter(|h| h.starts_with(|c: char| c.is_ascii_digit()))
    {
        u32::from_str_radix(hex, 16).ok()
    } else if t.starts_with(|c: char| c.is_ascii_digit()) {
        t.parse().ok()
    } else {
        None
    }
}

fn eval(e: &Expr, cpu: &Cpu) -> u32 {
    match e {
        Expr::Num(n) => *n,
        Expr::Reg(r) => match *r {
            Reg::Word(i) => cpu.regs[i].into(),
            Reg::Seg(i) => cpu.sregs[i].into(),
            Reg::Low(i) => (cpu.regs[i] & 0xFF).into(),
            Reg::High(i) => (cpu.regs[i] >> 8).into(),
            Reg::Ip => cpu.ip.into(),
            Reg::Flags => cpu.flags.into(),
            Reg::Flag(bit) => u32::from(cpu.flags & bit != 0),
        },
        Expr::Mem(word, a, b) => {
            let linear = match b {
                Some(off) => Cpu::lin(eval(a, cpu) as u16, eval(off, cpu) as u16),
                None => eval(a, cpu) & 0xFFFFF,
            };
            let lo = u32::from(cpu.rb(linear));
            if *word {
                lo | u32::from(cpu.rb(linear + 1)) << 8
            } else {
                lo
            }
        }
        Expr::Unary(op, x) => {
            let v = eval(x, cpu);
            match op {
                '!' => u32::from(v == 0),
                '-' => v.wrapping_neg(),
                _ => !v,
            }
        }
        Expr::Binary(op, a, b) => {
            let (x, y) = (eval(a, cpu), eval(b, cpu));
            let t = |c: bool| u32::from(c);
            match *op {
                "||" => t(x != 0 || y != 0),
                "&&" => t(x != 0 && y != 0),
                "==" => t(x == y),
                "!=" => t(x != y),
                "<" => t(x < y),
                "<=" => t(x <= y),
                ">" => t(x > y),
                ">=" => t(x >= y),
                "|" => x | y,
                "^" => x ^ y,
                "&" => x & y,
                "+" => x.wrapping_add(y),
                "-" => x.wrapping_sub(y),
                "*" => x.wrapping_mul(y),
                "/" => x.checked_div(y).unwrap_or(0),
                _ => x.checked_rem(y).unwrap_or(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{AX, CX, DS, Model, SI};

    fn cpu() -> Cpu {
        let mut c = Cpu::new(Model::I80186);
        c.regs[AX] = 0x1234;
        c.regs[CX] = 11;
        c.sregs[DS] = 0x0100;
        c.regs[SI] = 0x0010;
        c.wb(0x1010, 0x41);
        c.wb(0x1011, 0x42);
        c.flags |= 0x0040;
        c
    }

    #[test]
    fn conditions_read_registers_flags_and_memory() {
        let c = cpu();
        for (text, want) in [
            ("ax == 0x1234", true),
            ("AX == 1234h && cx > 10", true),
            ("al == 0x34 && ah == 0x12", true),
            ("byte[ds:si] == 0x41", true),
            ("word[0x1010] == 0x4241", true),
            ("byte[ds:si + 1] == 'x'", false),
            ("zf && !cf", true),
            ("(cx - 1) * 2 == 20 || 0", true),
            ("cx % 4 == 3 && cx / 0 == 0", true),
        ] {
            match Condition::parse(text) {
                Ok(cond) => assert_eq!(cond.holds(&c), want, "{text}"),
                Err(e) => assert!(text.contains('\''), "{text}: {e}"),
            }
        }
    }

    #[test]
    fn bad_conditions_say_what_is_wrong() {
        for (text, says) in [
            ("", "empty"),
            ("ax ==", "ends where a value"),
            ("foo == 1", "neither a register"),
            ("ax == 1 )", "unexpected `)`"),
            ("byte[1", "expected `]`"),
            ("ax = 1", "compare with `==`"),
            ("ax @ 1", "`@`"),
        ] {
            let e = Condition::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(
            Condition::parse(&"(".repeat(40))
                .unwrap_err()
                .contains("deeply")
        );
        assert!(
            Condition::parse(&"1+".repeat(200))
                .unwrap_err()
                .contains("at most")
        );
    }

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
