//! ECUFlash scaling expressions (`toexpr`, `frexpr`): numbers, `x`, `+ - * /`,
//! unary minus and parentheses, evaluated in f64 with the usual precedence,
//! left to right. Every expression in real definition files fits this subset,
//! so anything else is rejected rather than guessed at.
//!
//! Expressions are compiled once into a postfix program, because a table read
//! evaluates the same expression for hundreds of cells.

use std::fmt;

/// A compiled expression in one variable `x`.
#[derive(Clone, PartialEq)]
pub struct Expr {
    source: String,
    program: Vec<Op>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Num(f64),
    X,
    Neg,
    Add,
    Sub,
    Mul,
    Div,
}

/// Why an expression could not be compiled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "expression `{}`: {reason} at character {position}",
    plugin_kit::text::clip(text)
)]
pub struct ExprError {
    /// The expression as written.
    pub text: String,
    /// What is wrong, e.g. "unexpected character".
    pub reason: String,
    /// 1-based character position of the fault in `text`.
    pub position: usize,
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Expr({})", self.source)
    }
}

impl Expr {
    /// Compiles `source`; fails on any character outside the subset.
    pub fn parse(source: &str) -> Result<Self, ExprError> {
        let mut p = Parser {
            src: source.as_bytes(),
            pos: 0,
            out: Vec::new(),
            text: source,
            nesting: 0,
        };
        p.expr()?;
        p.skip_ws();
        if p.pos < p.src.len() {
            return Err(p.error("unexpected character"));
        }
        Ok(Self {
            source: source.to_string(),
            program: p.out,
        })
    }

    /// The identity `x`, for scalings that give no expression.
    pub fn identity() -> Self {
        Self {
            source: "x".into(),
            program: vec![Op::X],
        }
    }

    /// The text the expression was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates with `x` bound; division by zero yields ±inf or NaN as in IEEE.
    pub fn eval(&self, x: f64) -> f64 {
        // Real expressions need a handful of slots; a fixed stack avoids an
        // allocation per cell.
        let mut stack = [0f64; 32];
        let mut sp = 0usize;
        for op in &self.program {
            match *op {
                Op::Num(v) => {
                    stack[sp] = v;
                    sp += 1;
                }
                Op::X => {
                    stack[sp] = x;
                    sp += 1;
                }
                Op::Neg => stack[sp - 1] = -stack[sp - 1],
                bin => {
                    sp -= 1;
                    let b = stack[sp];
                    let a = &mut stack[sp - 1];
                    *a = match bin {
                        Op::Add => *a + b,
                        Op::Sub => *a - b,
                        Op::Mul => *a * b,
                        _ => *a / b,
                    };
                }
            }
        }
        stack[0]
    }
}

const MAX_DEPTH: usize = 32;

/// Parentheses and signs the recursive descent may nest. The stack check
/// above only runs once a sub-expression is complete, so without this a
/// definition with `((((…x…))))` 2,000 deep overflowed the plugin's native
/// stack before any error could name the file or the expression.
const MAX_NESTING: usize = 64;

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    out: Vec<Op>,
    text: &'a str,
    nesting: usize,
}

impl Parser<'_> {
    fn error(&self, reason: &str) -> ExprError {
        ExprError {
            text: self.text.to_string(),
            reason: reason.to_string(),
            position: self.pos + 1,
        }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.src.get(self.pos).copied()
    }

    /// The stack depth the program needs must stay within `eval`'s fixed
    /// stack; nesting depth bounds it.
    fn check_depth(&self) -> Result<(), ExprError> {
        let mut depth = 0usize;
        let mut max = 0usize;
        for op in &self.out {
            match op {
                Op::Num(_) | Op::X => depth += 1,
                Op::Neg => {}
                _ => depth -= 1,
            }
            max = max.max(depth);
        }
        if max > MAX_DEPTH {
            return Err(self.error("expression nests too deeply"));
        }
        Ok(())
    }

    /// Counts one level of recursion (a `(` or a sign), refusing past
    /// [`MAX_NESTING`]; the caller calls [`leave`](Self::leave) after it.
    fn enter(&mut self) -> Result<(), ExprError> {
        if self.nesting >= MAX_NESTING {
            return Err(self.error(&format!(
                "expression nests too deeply (more than {MAX_NESTING} parentheses or signs)"
            )));
        }
        self.nesting += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting -= 1;
    }

    fn expr(&mut self) -> Result<(), ExprError> {
        self.term()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            self.term()?;
            self.out.push(if c == b'+' { Op::Add } else { Op::Sub });
        }
        self.check_depth()
    }

    fn term(&mut self) -> Result<(), ExprError> {
        self.unary()?;
        while let Some(c @ (b'*' | b'/')) = self.peek() {
            self.pos += 1;
            self.unary()?;
            self.out.push(if c == b'*' { Op::Mul } else { Op::Div });
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<(), ExprError> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                self.enter()?;
                self.unary()?;
                self.leave();
                self.out.push(Op::Neg);
                Ok(())
            }
            Some(b'+') => {
                self.pos += 1;
                self.enter()?;
                self.unary()?;
                self.leave();
                Ok(())
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<(), ExprError> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                self.enter()?;
                self.expr()?;
                self.leave();
                if self.peek() != Some(b')') {
                    return Err(self.error("missing `)`"));
                }
                self.pos += 1;
                Ok(())
            }
            Some(b'x' | b'X') => {
                self.pos += 1;
                self.out.push(Op::X);
                Ok(())
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.pos;
                while self.pos < self.src.len()
                    && (self.src[self.pos].is_ascii_digit() || self.src[self.pos] == b'.')
                {
                    self.pos += 1;
                }
                // Exponent notation (`1e+08`) appears in attribute values and
                // costs nothing to accept here too.
                if self.pos < self.src.len() && matches!(self.src[self.pos], b'e' | b'E') {
                    let save = self.pos;
                    self.pos += 1;
                    if self.pos < self.src.len() && matches!(self.src[self.pos], b'+' | b'-') {
                        self.pos += 1;
                    }
                    if self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                        while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                            self.pos += 1;
                        }
                    } else {
                        self.pos = save;
                    }
                }
                let text = &self.text[start..self.pos];
                let value: f64 = text.parse().map_err(|_| {
                    self.pos = start;
                    self.error("malformed number")
                })?;
                self.out.push(Op::Num(value));
                Ok(())
            }
            Some(_) => Err(self.error("unexpected character")),
            None => Err(self.error("unexpected end of expression")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str, x: f64) -> f64 {
        Expr::parse(s).unwrap().eval(x)
    }

    #[test]
    fn precedence_and_left_to_right() {
        assert_eq!(ev("x*1000/256", 128.0), 500.0);
        assert_eq!(ev("14.7*128/x", 128.0), 14.7);
        assert_eq!(ev("1.8*x-40", 100.0), 140.0);
        assert_eq!(ev("(32768-x)*1000/256", 32768.0), 0.0);
        assert_eq!(ev("100*(x-26)/(204)", 230.0), 100.0);
        assert_eq!(ev("8-4-2", 0.0), 2.0);
        assert_eq!(ev("8/4/2", 0.0), 1.0);
        assert_eq!(ev("-x", 3.0), -3.0);
        assert_eq!(ev("-(x+1)*2", 3.0), -8.0);
        assert_eq!(ev(" X * 2 ", 3.0), 6.0);
        assert_eq!(ev("x*1e2", 3.0), 300.0);
    }

    #[test]
    fn division_by_zero_is_ieee() {
        assert!(ev("29241/x", 0.0).is_infinite());
        assert!(ev("0/x", 0.0).is_nan());
    }

    #[test]
    fn rejects_anything_outside_the_subset() {
        for bad in [
            "x^2", "sin(x)", "x;", "", "(x", "x)", "x +", "y", "1..2", "x**2",
        ] {
            assert!(Expr::parse(bad).is_err(), "{bad} accepted");
        }
        let e = Expr::parse("x + y").unwrap_err();
        assert_eq!(e.position, 5);
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        let deep = format!("{}x{}", "(1+".repeat(40), ")".repeat(40));
        assert!(Expr::parse(&deep).is_err());
        let ok = format!("{}x{}", "(1+".repeat(10), ")".repeat(10));
        assert_eq!(Expr::parse(&ok).unwrap().eval(0.0), 10.0);
        // Far deeper than any stack check: refused while descending, with
        // the expression clipped in the message.
        for deep in [
            format!("{}x{}", "(".repeat(2000), ")".repeat(2000)),
            format!("{}x", "-".repeat(100_000)),
            format!("{}x", "(-+".repeat(50_000)),
        ] {
            let e = Expr::parse(&deep).unwrap_err();
            assert!(e.reason.contains("nests too deeply"), "{e}");
            let shown = e.to_string();
            assert!(
                shown.len() < 400 && shown.contains("characters)"),
                "{shown}"
            );
        }
        // Signs and parentheses within the limit still parse.
        assert_eq!(
            Expr::parse(&format!("{}x", "-".repeat(60)))
                .unwrap()
                .eval(2.0),
            2.0
        );
    }
}
