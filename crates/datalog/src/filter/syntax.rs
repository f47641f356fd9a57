//! Lexer and parser for the filtrex 3.1.0 expression language, plus the
//! `&&`, `||` and `!` aliases.
//!
//! Precedence (lowest first), as in filtrex's Jison grammar: `if…then…else`
//! and `?:`; `or`; `and`; `in`, `not in`; the chainable relations
//! `== != < <= > >= ~=`; `+ -`; `* / mod %`; `not` and unary `-`; `^`
//! (right-associative); `of`.

use plugin_kit::text::clip;
use std::fmt;

/// A compile-time error: what was wrong, where (1-based character position)
/// and what would have been accepted there.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileError {
    /// What was wrong, e.g. "unterminated string: missing closing \"".
    pub message: String,
    /// 1-based character position in the filter text.
    pub position: usize,
    /// What would have been accepted there, or the channel probably meant.
    pub hint: Option<String>,
    /// The whole filter text, so `Display` can show a caret under `position`.
    pub source: String,
}

impl CompileError {
    fn at(source: &str, byte: usize, message: impl Into<String>) -> Self {
        let position = source[..byte.min(source.len())].chars().count() + 1;
        CompileError {
            message: message.into(),
            position,
            hint: None,
            source: source.to_string(),
        }
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The source line around the error: a window of a long filter,
        // with the caret still under the offending character.
        const WINDOW: usize = 60;
        let chars: Vec<char> = self
            .source
            .chars()
            .map(|c| {
                if matches!(c, '\n' | '\r' | '\t') {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        let at = self.position.saturating_sub(1).min(chars.len());
        let from = at.saturating_sub(WINDOW);
        let to = (at + WINDOW).min(chars.len());
        let head = if from > 0 { "…" } else { "" };
        let tail = if to < chars.len() { "…" } else { "" };
        let line: String = chars[from..to].iter().collect();
        write!(
            f,
            "filter error at position {}: {}\n  {head}{line}{tail}\n  {}^",
            self.position,
            self.message,
            " ".repeat(at - from + head.chars().count())
        )?;
        if let Some(h) = &self.hint {
            write!(f, "\n{h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kw {
    And,
    Or,
    Not,
    In,
    Of,
    If,
    Then,
    Else,
    Mod,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Num(f64),
    Str(String),
    Sym { name: String, quoted: bool },
    Op(&'static str),
    Kw(Kw),
    End,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    /// Byte offset of the token's first character.
    pub start: usize,
    /// The token as written (for messages).
    pub text: String,
}

const OPERATORS: [&str; 15] = [
    "*", "/", "-", "+", "^", "(", ")", ",", "==", "!=", "~=", ">=", "<=", "<", ">",
];

fn keyword(word: &str) -> Option<Kw> {
    Some(match word {
        "and" => Kw::And,
        "or" => Kw::Or,
        "not" => Kw::Not,
        "in" => Kw::In,
        "of" => Kw::Of,
        "if" => Kw::If,
        "then" => Kw::Then,
        "else" => Kw::Else,
        "mod" => Kw::Mod,
        _ => return None,
    })
}

fn is_sym_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '$' || c == '_'
}

fn is_sym_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '$' || c == '_' || c == '.'
}

/// Splits a filter into tokens, ending with [`Tok::End`].
pub fn lex(src: &str) -> Result<Vec<Token>, CompileError> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < src.len() {
        let rest = &src[i..];
        let c = rest.chars().next().unwrap_or(' ');
        if c.is_whitespace() || c == '\u{feff}' {
            i += c.len_utf8();
            continue;
        }
        let start = i;
        let push = |out: &mut Vec<Token>, tok: Tok, len: usize| {
            out.push(Token {
                tok,
                start,
                text: src[start..start + len].to_string(),
            });
        };
        // Aliases, resolved at token level so quoted text is never touched.
        if rest.starts_with("&&") {
            push(&mut out, Tok::Kw(Kw::And), 2);
            i += 2;
            continue;
        }
        if rest.starts_with("||") {
            push(&mut out, Tok::Kw(Kw::Or), 2);
            i += 2;
            continue;
        }
        if c == '!' && !rest.starts_with("!=") {
            push(&mut out, Tok::Kw(Kw::Not), 1);
            i += 1;
            continue;
        }
        if let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
            push(&mut out, Tok::Op(op), op.len());
            i += op.len();
            continue;
        }
        if c.is_ascii_digit() {
            let mut j = i;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            if j + 1 < bytes.len() && bytes[j] == b'.' && bytes[j + 1].is_ascii_digit() {
                j += 1;
                while j < bytes.len() && bytes[j].is_ascii_digit() {
                    j += 1;
                }
            }
            if j < bytes.len() && (bytes[j] == b'.' || bytes[j].is_ascii_digit()) {
                let e = CompileError::at(
                    src,
                    j,
                    format!("unrecognized number `{}`", clip(&src[i..=j])),
                );
                return Err(
                    e.hint("numbers are digits with an optional fraction, e.g. 3000 or 0.5")
                );
            }
            let text = &src[i..j];
            // Always decimal: filtrex's legacy-octal reading of `0700` is not kept.
            let value: f64 = text.parse().unwrap_or(f64::NAN);
            push(&mut out, Tok::Num(value), j - i);
            i = j;
            continue;
        }
        if is_sym_start(c) {
            let len = rest
                .char_indices()
                .find(|&(_, ch)| !is_sym_char(ch))
                .map_or(rest.len(), |(k, _)| k);
            let word = &rest[..len];
            let tok = match keyword(word) {
                Some(kw) => Tok::Kw(kw),
                None => Tok::Sym {
                    name: word.to_string(),
                    quoted: false,
                },
            };
            push(&mut out, tok, len);
            i += len;
            continue;
        }
        if c == '\'' || c == '"' {
            let (value, len) = quoted(src, i, c)?;
            let tok = if c == '\'' {
                Tok::Sym {
                    name: value,
                    quoted: true,
                }
            } else {
                Tok::Str(value)
            };
            push(&mut out, tok, len);
            i += len;
            continue;
        }
        if c == '%' || c == '?' || c == ':' {
            let op = match c {
                '%' => "%",
                '?' => "?",
                _ => ":",
            };
            push(&mut out, Tok::Op(op), 1);
            i += 1;
            continue;
        }
        return Err(unrecognized(src, i, c));
    }
    out.push(Token {
        tok: Tok::End,
        start: src.len(),
        text: String::new(),
    });
    Ok(out)
}

fn unrecognized(src: &str, i: usize, c: char) -> CompileError {
    let e = CompileError::at(src, i, format!("unrecognized character `{c}`"));
    let rest = &src[i..];
    match c {
        '&' => e.hint("use `and` (or `&&`)"),
        '|' => e.hint("use `or` (or `||`)"),
        '=' => e.hint("use `==` to compare"),
        '.' => e.hint("write a leading zero: 0.5"),
        '≥' | '≤' | '≠' => e.hint("use >=, <= or !="),
        ';' => e.hint("a filter is one expression; combine conditions with `and`"),
        _ if rest.starts_with("<>") => e.hint("use `!=`"),
        _ => e.hint("quote channel names with spaces or symbols in single quotes: 'Knock Sum'"),
    }
}

/// Reads a quoted name or string starting at byte `i`; returns the value and
/// the length in bytes including the quotes. Only `\\` and the quote itself
/// may be escaped, as in filtrex.
fn quoted(src: &str, i: usize, q: char) -> Result<(String, usize), CompileError> {
    let mut value = String::new();
    let mut chars = src[i + 1..].char_indices();
    while let Some((k, ch)) = chars.next() {
        if ch == q {
            return Ok((value, k + 2));
        }
        if ch == '\\' {
            match chars.next() {
                Some((_, e)) if e == q || e == '\\' => value.push(e),
                Some((k2, e)) => {
                    return Err(CompileError::at(
                        src,
                        i + 1 + k2,
                        format!("invalid escape `\\{e}` in quoted text"),
                    )
                    .hint(format!("only \\{q} and \\\\ may be escaped")));
                }
                None => break,
            }
        } else {
            value.push(ch);
        }
    }
    let what = if q == '\'' { "channel name" } else { "string" };
    Err(CompileError::at(
        src,
        i,
        format!("unterminated {what}: missing closing {q}"),
    ))
}

// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Mod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Match,
}

/// Built-in functions. Arity is checked when the filter is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Abs,
    Ceil,
    Floor,
    Log,
    Log2,
    Log10,
    Max,
    Min,
    Round,
    Sqrt,
    Exists,
    Empty,
}

pub const FUNCTION_NAMES: [&str; 12] = [
    "abs", "ceil", "floor", "log", "log2", "log10", "max", "min", "round", "sqrt", "exists",
    "empty",
];

impl Func {
    fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "abs" => Func::Abs,
            "ceil" => Func::Ceil,
            "floor" => Func::Floor,
            "log" => Func::Log,
            "log2" => Func::Log2,
            "log10" => Func::Log10,
            "max" => Func::Max,
            "min" => Func::Min,
            "round" => Func::Round,
            "sqrt" => Func::Sqrt,
            "exists" => Func::Exists,
            "empty" => Func::Empty,
            _ => return None,
        })
    }

    pub fn variadic(self) -> bool {
        matches!(self, Func::Max | Func::Min)
    }
}

/// A parsed expression. Channel references are numbered (`slot`) so a
/// compiled filter can be bound to any log's columns.
#[derive(Debug, Clone)]
pub enum Expr {
    Num(f64),
    Str(String),
    Sym {
        slot: usize,
    },
    List(Vec<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// `a op b op c …`: pairwise, short-circuiting like filtrex.
    Rel(Box<Expr>, Vec<(RelOp, Expr, Option<usize>)>),
    In(Box<Expr>, Box<Expr>, bool),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
    Of(String, Box<Expr>),
}

/// A channel name the filter uses, with where it first appears.
#[derive(Debug, Clone, PartialEq)]
pub struct NameRef {
    pub name: String,
    /// Byte offset of the first use.
    pub start: usize,
    /// True when every use is the direct argument of `exists()`/`empty()`,
    /// which test presence and so tolerate a missing channel.
    pub presence_only: bool,
}

pub struct Parsed {
    pub expr: Expr,
    pub names: Vec<NameRef>,
    /// Regexes of `~=` with a literal pattern, compiled once.
    pub regexes: Vec<regex_lite::Regex>,
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    names: Vec<NameRef>,
    regexes: Vec<regex_lite::Regex>,
}

const MAX_DEPTH: usize = 100;
/// Also bounds the depth of left-leaning chains such as `a + a + a …`.
const MAX_TOKENS: usize = 1000;

const VALUE_EXPECTED: &str = "expected a value: a number, a channel name, a \"string\", (…), a function call or if…then…else";

/// Parses a filter into an expression tree.
pub fn parse(src: &str) -> Result<Parsed, CompileError> {
    let toks = lex(src)?;
    if toks.len() > MAX_TOKENS {
        return Err(CompileError::at(
            src,
            toks[MAX_TOKENS].start,
            format!(
                "the filter is too long ({} tokens, at most {MAX_TOKENS})",
                toks.len() - 1
            ),
        ));
    }
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        names: Vec::new(),
        regexes: Vec::new(),
    };
    if p.peek() == &Tok::End {
        return Err(CompileError::at(src, 0, "the filter is empty")
            .hint("write a condition such as RPM > 3000 and Knock > 0"));
    }
    let expr = p.expr()?;
    if p.peek() != &Tok::End {
        return Err(p.unexpected("expected an operator or the end of the filter"));
    }
    Ok(Parsed {
        expr,
        names: p.names,
        regexes: p.regexes,
    })
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: Kw) -> bool {
        self.peek() == &Tok::Kw(kw)
    }

    fn unexpected(&self, expected: &str) -> CompileError {
        let t = &self.toks[self.pos];
        let found = match &t.tok {
            Tok::End => "the end of the filter".to_string(),
            _ => format!("`{}`", clip(&t.text)),
        };
        let mut e = CompileError::at(self.src, t.start, format!("unexpected {found}; {expected}"));
        let prev = self.pos.checked_sub(1).map(|k| &self.toks[k].tok);
        if let Tok::Sym {
            name,
            quoted: false,
        } = &t.tok
        {
            let lower = name.to_ascii_lowercase();
            if matches!(prev, Some(Tok::Num(_)))
                && (lower.starts_with('x') || lower.starts_with('e'))
            {
                e = e.hint("numbers are plain decimals: no hex, no exponent (write 1000, not 1e3)");
            } else if keyword(&lower).is_some() {
                e = e.hint(format!("keywords are lowercase: `{}`", clip(&lower)));
            } else if let Some(Tok::Sym { .. }) = prev {
                e = e.hint("quote channel names that contain spaces: 'Knock Sum'");
            }
        } else if let Tok::Op(">" | "<" | "=") = &t.tok {
            e = e.hint("comparison operators are == != < <= > >=");
        } else if let Tok::Num(_) = &t.tok
            && matches!(prev, Some(Tok::Op(",")))
        {
            e = e.hint("numbers have no thousands separators: 3000");
        }
        e
    }

    fn expect_op(&mut self, op: &str, what: &str) -> Result<(), CompileError> {
        if self.is_op(op) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    fn expr(&mut self) -> Result<Expr, CompileError> {
        self.nested(Self::ternary)
    }

    /// Bounds recursion so a pathological filter is an error, not a stack
    /// overflow (which would trap the component).
    fn nested(
        &mut self,
        f: fn(&mut Self) -> Result<Expr, CompileError>,
    ) -> Result<Expr, CompileError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let start = self.toks[self.pos].start;
            return Err(CompileError::at(
                self.src,
                start,
                "the filter is nested too deeply",
            ));
        }
        let r = f(self);
        self.depth -= 1;
        r
    }

    // `c ? a : b` (deprecated in filtrex 3, still accepted), right-associative.
    fn ternary(&mut self) -> Result<Expr, CompileError> {
        let c = self.or()?;
        if self.is_op("?") {
            self.bump();
            let a = self.expr()?;
            self.expect_op(":", "expected `:` of `cond ? a : b`")?;
            let b = self.ternary()?;
            return Ok(Expr::If(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn or(&mut self) -> Result<Expr, CompileError> {
        let mut l = self.and()?;
        while self.is_kw(Kw::Or) {
            self.bump();
            let r = self.and()?;
            l = Expr::Or(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, CompileError> {
        let mut l = self.membership()?;
        while self.is_kw(Kw::And) {
            self.bump();
            let r = self.membership()?;
            l = Expr::And(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn membership(&mut self) -> Result<Expr, CompileError> {
        let mut l = self.relation()?;
        loop {
            let negate = if self.is_kw(Kw::In) {
                false
            } else if self.is_kw(Kw::Not) && self.peek_at(1) == &Tok::Kw(Kw::In) {
                self.bump();
                true
            } else {
                break;
            };
            self.bump();
            let r = self.relation()?;
            l = Expr::In(Box::new(l), Box::new(r), negate);
        }
        Ok(l)
    }

    fn rel_op(&self) -> Option<RelOp> {
        Some(match self.peek() {
            Tok::Op("==") => RelOp::Eq,
            Tok::Op("!=") => RelOp::Ne,
            Tok::Op("<") => RelOp::Lt,
            Tok::Op("<=") => RelOp::Le,
            Tok::Op(">") => RelOp::Gt,
            Tok::Op(">=") => RelOp::Ge,
            Tok::Op("~=") => RelOp::Match,
            _ => return None,
        })
    }

    fn relation(&mut self) -> Result<Expr, CompileError> {
        let first = self.additive()?;
        let mut rest = Vec::new();
        while let Some(op) = self.rel_op() {
            self.bump();
            let start = self.toks[self.pos].start;
            let r = self.additive()?;
            let mut regex = None;
            if op == RelOp::Match
                && let Expr::Str(pattern) = &r
            {
                let re = super::compile_regex(pattern).map_err(|e| {
                    let err = CompileError::at(
                        self.src,
                        start,
                        format!("invalid regular expression: {}", e.what()),
                    );
                    // What to write instead goes on its own line, under the caret.
                    match e.instead() {
                        Some(i) => err.hint(i),
                        None => err,
                    }
                })?;
                self.regexes.push(re);
                regex = Some(self.regexes.len() - 1);
            }
            rest.push((op, r, regex));
        }
        if rest.is_empty() {
            Ok(first)
        } else {
            Ok(Expr::Rel(Box::new(first), rest))
        }
    }

    fn additive(&mut self) -> Result<Expr, CompileError> {
        let mut l = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Tok::Op("+") => BinOp::Add,
                Tok::Op("-") => BinOp::Sub,
                _ => break,
            };
            self.bump();
            let r = self.multiplicative()?;
            l = Expr::Bin(op, Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn multiplicative(&mut self) -> Result<Expr, CompileError> {
        let mut l = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Op("*") => BinOp::Mul,
                Tok::Op("/") => BinOp::Div,
                Tok::Op("%") | Tok::Kw(Kw::Mod) => BinOp::Mod,
                _ => break,
            };
            self.bump();
            let r = self.unary()?;
            l = Expr::Bin(op, Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Expr, CompileError> {
        if self.is_op("-") {
            self.bump();
            return Ok(Expr::Neg(Box::new(self.nested(Self::unary)?)));
        }
        if self.is_kw(Kw::Not) {
            self.bump();
            return Ok(Expr::Not(Box::new(self.nested(Self::unary)?)));
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, CompileError> {
        let base = self.atom()?;
        if self.is_op("^") {
            self.bump();
            // Right-associative, and the exponent may carry a sign: 2 ^ -1.
            let exp = self.nested(Self::unary)?;
            return Ok(Expr::Bin(BinOp::Pow, Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr, CompileError> {
        let t = self.toks[self.pos].clone();
        match t.tok {
            Tok::Num(v) => {
                self.bump();
                Ok(Expr::Num(v))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Str(s))
            }
            Tok::Sym { name, .. } => {
                self.bump();
                if self.is_op("(") {
                    return self.call(&name, t.start);
                }
                if self.is_kw(Kw::Of) {
                    self.bump();
                    let obj = if self.is_op("-") || self.is_kw(Kw::Not) {
                        self.unary()?
                    } else {
                        self.atom()?
                    };
                    return Ok(Expr::Of(name, Box::new(obj)));
                }
                Ok(Expr::Sym {
                    slot: self.name_slot(&name, t.start, false),
                })
            }
            Tok::Op("(") => {
                self.bump();
                let first = self.expr()?;
                if self.is_op(",") {
                    let mut items = vec![first];
                    while self.is_op(",") {
                        self.bump();
                        items.push(self.expr()?);
                    }
                    self.expect_op(")", "expected `,` or `)` to close the list")?;
                    return Ok(Expr::List(items));
                }
                self.expect_op(")", "expected `)`")?;
                Ok(first)
            }
            Tok::Kw(Kw::If) => {
                self.bump();
                let c = self.expr()?;
                if !self.is_kw(Kw::Then) {
                    return Err(self.unexpected("expected `then` of if…then…else"));
                }
                self.bump();
                let a = self.expr()?;
                if !self.is_kw(Kw::Else) {
                    return Err(self.unexpected("expected `else` of if…then…else"));
                }
                self.bump();
                let b = self.expr()?;
                Ok(Expr::If(Box::new(c), Box::new(a), Box::new(b)))
            }
            _ => Err(self.unexpected(VALUE_EXPECTED)),
        }
    }

    fn call(&mut self, name: &str, start: usize) -> Result<Expr, CompileError> {
        let Some(func) = Func::from_name(name) else {
            return Err(CompileError::at(
                self.src,
                start,
                format!("unknown function `{}`", clip(name)),
            )
            .hint(format!("functions: {}", FUNCTION_NAMES.join(", "))));
        };
        self.bump(); // (
        let mut args = Vec::new();
        if !self.is_op(")") {
            loop {
                // exists()/empty() test a channel's presence: remember names
                // used directly there so a missing channel is not an error.
                let direct = matches!(func, Func::Exists | Func::Empty)
                    && matches!(self.peek(), Tok::Sym { .. })
                    && matches!(self.peek_at(1), Tok::Op(")" | ","));
                if direct {
                    let t = self.bump();
                    if let Tok::Sym { name, .. } = t.tok {
                        args.push(Expr::Sym {
                            slot: self.name_slot(&name, t.start, true),
                        });
                    }
                } else {
                    args.push(self.expr()?);
                }
                if self.is_op(",") {
                    self.bump();
                    continue;
                }
                break;
            }
        }
        self.expect_op(")", "expected `,` or `)` to close the argument list")?;
        let ok = if func.variadic() {
            !args.is_empty()
        } else {
            args.len() == 1
        };
        if !ok {
            let want = if func.variadic() {
                "at least one argument"
            } else {
                "exactly one argument"
            };
            return Err(CompileError::at(
                self.src,
                start,
                format!("{name}() takes {want}, got {}", args.len()),
            ));
        }
        Ok(Expr::Call(func, args))
    }

    fn name_slot(&mut self, name: &str, start: usize, presence: bool) -> usize {
        if let Some(k) = self.names.iter().position(|n| n.name == name) {
            self.names[k].presence_only &= presence;
            return k;
        }
        self.names.push(NameRef {
            name: name.to_string(),
            start,
            presence_only: presence,
        });
        self.names.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Expr {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e}")).expr
    }

    fn err(s: &str) -> CompileError {
        match parse(s) {
            Ok(p) => panic!("{s} parsed: {:?}", p.expr),
            Err(e) => e,
        }
    }

    #[test]
    fn aliases_are_tokens_and_quotes_are_untouched() {
        let toks = lex("a && b || !c != 'x&&y'").unwrap();
        let kinds: Vec<_> = toks.iter().map(|t| t.tok.clone()).collect();
        assert_eq!(kinds[1], Tok::Kw(Kw::And));
        assert_eq!(kinds[3], Tok::Kw(Kw::Or));
        assert_eq!(kinds[4], Tok::Kw(Kw::Not));
        assert_eq!(kinds[6], Tok::Op("!="));
        assert_eq!(
            kinds[7],
            Tok::Sym {
                name: "x&&y".into(),
                quoted: true
            }
        );
    }

    #[test]
    fn numbers_are_filtrex_decimals() {
        assert!(matches!(ok("07000.5"), Expr::Num(v) if v == 7000.5));
        assert_eq!(err("RPM > 1.").position, 8);
        assert_eq!(err("RPM > .5").position, 7);
        err("RPM >= 1e3");
        err("RPM > 0x10");
    }

    #[test]
    fn precedence_matches_filtrex() {
        // -2 ^ 2 is -(2 ^ 2); ^ is right-associative.
        assert!(matches!(ok("-2 ^ 2"), Expr::Neg(_)));
        assert!(
            matches!(ok("2 ^ 3 ^ 2"), Expr::Bin(BinOp::Pow, _, r) if matches!(*r, Expr::Bin(BinOp::Pow, _, _)))
        );
        // not binds tighter than comparisons.
        assert!(matches!(ok("not a > 1"), Expr::Rel(l, _) if matches!(*l, Expr::Not(_))));
        // the else branch extends as far as possible.
        assert!(matches!(ok("if a then 1 else 0 == 0"), Expr::If(..)));
        assert!(matches!(ok("a > 1 in (1)"), Expr::In(..)));
    }

    #[test]
    fn errors_point_at_the_problem() {
        let e = err("RPM > 3000 & Knock > 0");
        assert_eq!(e.position, 12);
        assert!(e.hint.unwrap().contains("and"));
        let e = err("RPM > 3000 AND Knock > 0");
        assert!(e.hint.unwrap().contains("lowercase"));
        assert_eq!(err("foo(1)").message, "unknown function `foo`");
        err("max()");
        err("abs(1, 2)");
        err("");
        err("Phase ~= \"(\"");
        err(&format!("{}1{}", "(".repeat(5000), ")".repeat(5000)));
        err(&format!("{}1", "-".repeat(5000)));
        ok(&format!("{}1{}", "(".repeat(50), ")".repeat(50)));
        err(&"1 + ".repeat(600));
        err(&format!("2{}", " ^ 2".repeat(150)));
        assert!(err("RPM = 3000").hint.unwrap().contains("=="));
    }

    #[test]
    fn presence_only_names() {
        let p = parse("exists(Boost) and RPM > 1").unwrap();
        assert!(p.names[0].presence_only);
        assert!(!p.names[1].presence_only);
        let p = parse("exists(Boost) and Boost > 1").unwrap();
        assert!(!p.names[0].presence_only);
    }

    #[test]
    fn errors_in_long_filters_show_a_window_with_the_caret_in_place() {
        let filter = format!("{}RPM >> 3", "RPM > 1 && ".repeat(200));
        let e = err(&filter).to_string();
        assert!(e.len() < 400, "{}", e.len());
        let lines: Vec<&str> = e.lines().collect();
        let caret = lines[2].find('^').unwrap();
        let line = lines[1];
        assert!(line.starts_with("  …"), "{line}");
        let at = line.char_indices().nth(caret).map(|(i, _)| i).unwrap();
        assert_eq!(&line[at..at + 1], ">", "{e}");
        let short = err("RPM >> 3").to_string();
        assert!(short.contains("\n  RPM >> 3\n"), "{short}");
    }
}
