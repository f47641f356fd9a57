//! The general row-at-a-time interpreter: every filtrex value type (numbers,
//! text, booleans, empty cells, lists) and every runtime error, with
//! filtrex's left-to-right short-circuit order. The vectorised path in
//! `vector.rs` covers the common numeric filters; this one is the reference.

use super::jsnum;
use super::syntax::{BinOp, Expr, Func, NameRef, RelOp};
use crate::column::{Cell, Column};
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Num(f64),
    Bool(bool),
    /// An empty cell (filtrex's `null`).
    Null,
    Str(Cow<'a, str>),
    List(Vec<Value<'a>>),
}

impl Value<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Num(_) => "number",
            Value::Bool(_) => "true/false",
            Value::Null => "an empty cell",
            Value::Str(_) => "text",
            Value::List(_) => "list",
        }
    }

    /// filtrex's match rule: `true`, or a number that is neither 0 nor NaN.
    pub fn is_match(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::Num(x) => *x != 0.0 && !x.is_nan(),
            _ => false,
        }
    }
}

/// Why a row could not be evaluated; such a row does not match.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The filter names a channel (given) that this log lacks.
    UnknownChannel(String),
    /// An operator or function met a value of the wrong kind, e.g. text in
    /// arithmetic or an empty cell in a comparison.
    UnexpectedType {
        /// What the operation needs, e.g. "a number".
        expected: &'static str,
        /// What the row gave, e.g. "an empty cell".
        got: &'static str,
    },
    /// `name of x` asked for something other than `length` or an index
    /// within the list.
    UnknownProperty(String),
    /// A `~=` pattern computed from the row did not compile.
    Regex(super::RegexError),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::UnknownChannel(n) => write!(f, "this log has no channel `{n}`"),
            EvalError::UnexpectedType { expected, got } => {
                write!(f, "expected {expected}, got {got}")
            }
            EvalError::UnknownProperty(n) => write!(f, "no property `{n}`"),
            EvalError::Regex(e) => write!(f, "invalid regular expression: {e}"),
        }
    }
}

type R<'a> = Result<Value<'a>, EvalError>;

/// An expression bound to one log's columns.
pub struct Interpreter<'a> {
    pub cols: Vec<Option<&'a Column>>,
    names: &'a [NameRef],
    pub regexes: &'a [regex_lite::Regex],
    dynamic_regex: RefCell<Option<(String, regex_lite::Regex)>>,
}

fn num(v: &Value) -> Result<f64, EvalError> {
    match v {
        Value::Num(x) => Ok(*x),
        other => Err(EvalError::UnexpectedType {
            expected: "a number",
            got: other.type_name(),
        }),
    }
}

fn boolean(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(EvalError::UnexpectedType {
            expected: "true/false (a comparison)",
            got: other.type_name(),
        }),
    }
}

/// JavaScript's `===`. Lists are distinct objects, so never equal.
fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

/// `Array.prototype.includes` (SameValueZero: NaN finds NaN).
fn same_value_zero(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => strict_eq(a, b),
    }
}

fn as_list<'v, 'a>(v: &'v Value<'a>) -> Result<&'v [Value<'a>], EvalError> {
    match v {
        Value::List(items) => Ok(items),
        Value::Null => Err(EvalError::UnexpectedType {
            expected: "a list",
            got: "an empty cell",
        }),
        other => Ok(std::slice::from_ref(other)),
    }
}

impl<'a> Interpreter<'a> {
    pub fn new(
        cols: Vec<Option<&'a Column>>,
        names: &'a [NameRef],
        regexes: &'a [regex_lite::Regex],
    ) -> Self {
        Interpreter {
            cols,
            names,
            regexes,
            dynamic_regex: RefCell::new(None),
        }
    }

    pub fn eval(&self, e: &'a Expr, row: usize) -> R<'a> {
        Ok(match e {
            Expr::Num(x) => Value::Num(*x),
            Expr::Str(s) => Value::Str(Cow::Borrowed(s)),
            Expr::Sym { slot } => self.lookup(*slot, row)?,
            Expr::List(items) => Value::List(
                items
                    .iter()
                    .map(|i| self.eval(i, row))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Neg(x) => Value::Num(-num(&self.eval(x, row)?)?),
            Expr::Not(x) => Value::Bool(!boolean(&self.eval(x, row)?)?),
            Expr::Bin(op, l, r) => {
                let a = self.eval(l, row)?;
                let b = self.eval(r, row)?;
                self.binary(*op, a, b)?
            }
            Expr::And(l, r) => {
                Value::Bool(boolean(&self.eval(l, row)?)? && boolean(&self.eval(r, row)?)?)
            }
            Expr::Or(l, r) => {
                Value::Bool(boolean(&self.eval(l, row)?)? || boolean(&self.eval(r, row)?)?)
            }
            Expr::Rel(first, rest) => {
                let mut prev = self.eval(first, row)?;
                for (op, e, re) in rest {
                    let cur = self.eval(e, row)?;
                    if !self.compare(*op, &prev, &cur, *re)? {
                        return Ok(Value::Bool(false));
                    }
                    prev = cur;
                }
                Value::Bool(true)
            }
            Expr::In(l, r, negate) => {
                let a = self.eval(l, row)?;
                let b = self.eval(r, row)?;
                let (a, b) = (as_list(&a)?, as_list(&b)?);
                let subset = a.iter().all(|x| b.iter().any(|y| same_value_zero(x, y)));
                Value::Bool(subset != *negate)
            }
            Expr::If(c, a, b) => {
                if boolean(&self.eval(c, row)?)? {
                    self.eval(a, row)?
                } else {
                    self.eval(b, row)?
                }
            }
            Expr::Call(f, args) => self.call(*f, args, row)?,
            Expr::Of(name, obj) => {
                let v = self.eval(obj, row)?;
                match v {
                    Value::List(mut items) => {
                        if name == "length" {
                            Value::Num(items.len() as f64)
                        } else {
                            match name.parse::<usize>() {
                                Ok(i) if i.to_string() == *name && i < items.len() => {
                                    items.swap_remove(i)
                                }
                                _ => return Err(EvalError::UnknownProperty(name.clone())),
                            }
                        }
                    }
                    _ => return Err(EvalError::UnknownProperty(name.clone())),
                }
            }
        })
    }

    fn lookup(&self, slot: usize, row: usize) -> R<'a> {
        match self.cols.get(slot).copied().flatten() {
            None => Err(EvalError::UnknownChannel(
                self.names
                    .get(slot)
                    .map_or_else(String::new, |n| n.name.clone()),
            )),
            Some(col) => Ok(match col.cell(row) {
                Cell::Num(x) => Value::Num(x),
                Cell::Null => Value::Null,
                Cell::Str(s) => Value::Str(Cow::Borrowed(s)),
            }),
        }
    }

    fn binary(&self, op: BinOp, a: Value<'a>, b: Value<'a>) -> R<'a> {
        if op == BinOp::Add {
            let text_or_num = |v: &Value| match v {
                Value::Num(_) | Value::Str(_) => Ok(()),
                other => Err(EvalError::UnexpectedType {
                    expected: "text or a number",
                    got: other.type_name(),
                }),
            };
            text_or_num(&a)?;
            text_or_num(&b)?;
            return Ok(match (a, b) {
                (Value::Num(x), Value::Num(y)) => Value::Num(x + y),
                (a, b) => {
                    let s = |v: Value<'a>| match v {
                        Value::Str(s) => s.into_owned(),
                        Value::Num(x) => jsnum::to_string(x),
                        _ => String::new(),
                    };
                    Value::Str(Cow::Owned(s(a) + &s(b)))
                }
            });
        }
        let (x, y) = (num(&a)?, num(&b)?);
        Ok(Value::Num(arith(op, x, y)))
    }

    fn compare(
        &self,
        op: RelOp,
        a: &Value,
        b: &Value,
        re: Option<usize>,
    ) -> Result<bool, EvalError> {
        Ok(match op {
            RelOp::Eq => strict_eq(a, b),
            RelOp::Ne => !strict_eq(a, b),
            RelOp::Lt => num(a)? < num(b)?,
            RelOp::Le => num(a)? <= num(b)?,
            RelOp::Gt => num(a)? > num(b)?,
            RelOp::Ge => num(a)? >= num(b)?,
            RelOp::Match => {
                let text = |v: &Value| match v {
                    Value::Str(s) => Ok(s.to_string()),
                    other => Err(EvalError::UnexpectedType {
                        expected: "text",
                        got: other.type_name(),
                    }),
                };
                // filtrex checks the pattern's type before the subject's.
                let pattern = text(b)?;
                let subject = text(a)?;
                if let Some(i) = re {
                    return Ok(self.regexes[i].is_match(&subject));
                }
                let mut cache = self.dynamic_regex.borrow_mut();
                if cache.as_ref().is_none_or(|(p, _)| *p != pattern) {
                    let compiled = super::compile_regex(&pattern).map_err(EvalError::Regex)?;
                    *cache = Some((pattern, compiled));
                }
                cache.as_ref().is_some_and(|(_, r)| r.is_match(&subject))
            }
        })
    }

    fn call(&self, f: Func, args: &'a [Expr], row: usize) -> R<'a> {
        if let Func::Exists | Func::Empty = f {
            // A channel this log lacks is absent, not an error (filtrex would
            // raise UnknownPropertyError): exists(Boost) works across logs.
            let v = match &args[0] {
                Expr::Sym { slot } if self.cols.get(*slot).copied().flatten().is_none() => {
                    Value::Null
                }
                e => self.eval(e, row)?,
            };
            let empty = match &v {
                Value::Null => true,
                Value::Str(s) => s.is_empty(),
                Value::List(items) => items.is_empty(),
                _ => false,
            };
            return Ok(Value::Bool(if f == Func::Exists {
                !matches!(v, Value::Null)
            } else {
                empty
            }));
        }
        let mut xs = [0.0f64; 4];
        let mut many = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let x = num(&self.eval(a, row)?)?;
            if i < xs.len() {
                xs[i] = x;
            } else {
                if many.is_empty() {
                    many.extend_from_slice(&xs);
                }
                many.push(x);
            }
        }
        let values = if many.is_empty() {
            &xs[..args.len()]
        } else {
            &many[..]
        };
        Ok(Value::Num(apply(f, values)))
    }
}

#[inline]
pub fn arith(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Pow => jsnum::pow(x, y),
        BinOp::Mod => jsnum::modulo(x, y),
    }
}

/// Applies a numeric function (arity was checked at compile time).
pub fn apply(f: Func, xs: &[f64]) -> f64 {
    let x = xs[0];
    match f {
        Func::Abs => x.abs(),
        Func::Ceil => x.ceil(),
        Func::Floor => x.floor(),
        Func::Log => x.ln(),
        Func::Log2 => x.log2(),
        Func::Log10 => x.log10(),
        Func::Round => jsnum::round(x),
        Func::Sqrt => x.sqrt(),
        // Math.max/min: any NaN wins; +0 beats -0 for max.
        Func::Max => xs.iter().copied().fold(f64::NEG_INFINITY, |m, v| {
            if m.is_nan() || v.is_nan() {
                f64::NAN
            } else if v > m || (v == 0.0 && m == 0.0 && v.is_sign_positive()) {
                v
            } else {
                m
            }
        }),
        Func::Min => xs.iter().copied().fold(f64::INFINITY, |m, v| {
            if m.is_nan() || v.is_nan() {
                f64::NAN
            } else if v < m || (v == 0.0 && m == 0.0 && v.is_sign_negative()) {
                v
            } else {
                m
            }
        }),
        Func::Exists | Func::Empty => f64::NAN,
    }
}
