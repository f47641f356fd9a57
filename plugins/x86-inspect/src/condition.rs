//! A breakpoint's condition (x86_add_breakpoint's `condition`), checked
//! when its breakpoint is hit; the run goes on while it is false.
//!
//! A small expression over registers, flags and memory:
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
}
