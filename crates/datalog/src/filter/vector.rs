//! The fast path: a filter whose every value is a number or a boolean is
//! compiled to register code that runs over chunks of rows straight from the
//! column slices (booleans as 0.0/1.0), in loops the compiler vectorises.
//!
//! Correctness argument: with every operand a number or a boolean of the
//! statically expected type, no filtrex operation can fail, so evaluating
//! both sides of `and`/`or`/`if` gives the same result as short-circuiting.
//! Rows where a referenced cell is empty or text break that premise; the
//! caller evaluates those rows with the general interpreter instead.

use super::eval::{apply, arith};
use super::syntax::{BinOp, Expr, Func, RelOp};
use crate::column::Column;

pub const CHUNK: usize = 1024;

#[derive(Debug, Clone, Copy)]
enum Src {
    Reg(usize),
    Col(usize),
    Const(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    Num,
    Bool,
}

#[derive(Debug)]
enum Op {
    Arith(BinOp, usize, Src, Src),
    Neg(usize, Src),
    Cmp(RelOp, usize, Src, Src),
    And(usize, Src, Src),
    Or(usize, Src, Src),
    Not(usize, Src),
    F1(Func, usize, Src),
    Fold(Func, usize, Vec<Src>),
    In(usize, Src, Vec<f64>, bool),
    Select(usize, Src, Src, Src),
}

/// A filter compiled for the fast path, bound to one log.
pub struct VectorProgram<'a> {
    ops: Vec<Op>,
    result: Src,
    cols: Vec<&'a Column>,
    regs: usize,
}

struct Compiler<'a, 'b> {
    slots: &'b [Option<&'a Column>],
    cols: Vec<&'a Column>,
    slot_col: Vec<Option<usize>>,
    ops: Vec<Op>,
    regs: usize,
}

/// Compiles `e` for the fast path, or `None` when it needs the general
/// interpreter (text, lists, `of`, a type error, a missing channel, or a
/// channel that is mostly text).
pub fn compile<'a>(e: &Expr, slots: &[Option<&'a Column>]) -> Option<VectorProgram<'a>> {
    let mut c = Compiler {
        slots,
        cols: Vec::new(),
        slot_col: vec![None; slots.len()],
        ops: Vec::new(),
        regs: 0,
    };
    let (result, _) = c.expr(e)?;
    Some(VectorProgram {
        ops: c.ops,
        result,
        cols: c.cols,
        regs: c.regs,
    })
}

fn literal_number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Num(x) => Some(*x),
        Expr::Neg(x) => literal_number(x).map(|v| -v),
        _ => None,
    }
}

impl<'a> Compiler<'a, '_> {
    fn reg(&mut self) -> usize {
        self.regs += 1;
        self.regs - 1
    }

    fn num(&mut self, e: &Expr) -> Option<Src> {
        match self.expr(e)? {
            (s, Ty::Num) => Some(s),
            _ => None,
        }
    }

    fn boolean(&mut self, e: &Expr) -> Option<Src> {
        match self.expr(e)? {
            (s, Ty::Bool) => Some(s),
            _ => None,
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<(Src, Ty)> {
        Some(match e {
            Expr::Num(x) => (Src::Const(*x), Ty::Num),
            Expr::Sym { slot } => {
                let col = self.slots.get(*slot).copied().flatten()?;
                if col.special * 2 > col.values.len() {
                    return None;
                }
                let k = match self.slot_col[*slot] {
                    Some(k) => k,
                    None => {
                        self.cols.push(col);
                        self.slot_col[*slot] = Some(self.cols.len() - 1);
                        self.cols.len() - 1
                    }
                };
                (Src::Col(k), Ty::Num)
            }
            Expr::Neg(x) => {
                let a = self.num(x)?;
                let d = self.reg();
                self.ops.push(Op::Neg(d, a));
                (Src::Reg(d), Ty::Num)
            }
            Expr::Not(x) => {
                let a = self.boolean(x)?;
                let d = self.reg();
                self.ops.push(Op::Not(d, a));
                (Src::Reg(d), Ty::Bool)
            }
            Expr::Bin(op, l, r) => {
                let a = self.num(l)?;
                let b = self.num(r)?;
                let d = self.reg();
                self.ops.push(Op::Arith(*op, d, a, b));
                (Src::Reg(d), Ty::Num)
            }
            Expr::And(l, r) | Expr::Or(l, r) => {
                let a = self.boolean(l)?;
                let b = self.boolean(r)?;
                let d = self.reg();
                self.ops.push(if matches!(e, Expr::And(..)) {
                    Op::And(d, a, b)
                } else {
                    Op::Or(d, a, b)
                });
                (Src::Reg(d), Ty::Bool)
            }
            Expr::Rel(first, rest) => {
                let (mut prev, mut prev_ty) = self.expr(first)?;
                let mut acc: Option<Src> = None;
                for (op, e, _) in rest {
                    let (cur, cur_ty) = self.expr(e)?;
                    let ordered = !matches!(op, RelOp::Eq | RelOp::Ne);
                    if *op == RelOp::Match || prev_ty != cur_ty || (ordered && cur_ty != Ty::Num) {
                        return None;
                    }
                    let d = self.reg();
                    self.ops.push(Op::Cmp(*op, d, prev, cur));
                    acc = Some(match acc {
                        None => Src::Reg(d),
                        Some(a) => {
                            let d2 = self.reg();
                            self.ops.push(Op::And(d2, a, Src::Reg(d)));
                            Src::Reg(d2)
                        }
                    });
                    prev = cur;
                    prev_ty = cur_ty;
                }
                (acc?, Ty::Bool)
            }
            Expr::In(l, r, negate) => {
                let a = self.num(l)?;
                let set = match &**r {
                    Expr::List(items) => items
                        .iter()
                        .map(literal_number)
                        .collect::<Option<Vec<_>>>()?,
                    other => vec![literal_number(other)?],
                };
                let d = self.reg();
                self.ops.push(Op::In(d, a, set, *negate));
                (Src::Reg(d), Ty::Bool)
            }
            Expr::If(c, a, b) => {
                let c = self.boolean(c)?;
                let (a, ta) = self.expr(a)?;
                let (b, tb) = self.expr(b)?;
                if ta != tb {
                    return None;
                }
                let d = self.reg();
                self.ops.push(Op::Select(d, c, a, b));
                (Src::Reg(d), ta)
            }
            Expr::Call(f @ (Func::Exists | Func::Empty), args) => {
                // On the rows this path handles every referenced cell is a
                // number, so the answer is a constant.
                self.expr(&args[0])?;
                (
                    Src::Const(if *f == Func::Exists { 1.0 } else { 0.0 }),
                    Ty::Bool,
                )
            }
            Expr::Call(f, args) => {
                let srcs = args
                    .iter()
                    .map(|a| self.num(a))
                    .collect::<Option<Vec<_>>>()?;
                let d = self.reg();
                if f.variadic() {
                    self.ops.push(Op::Fold(*f, d, srcs));
                } else {
                    self.ops.push(Op::F1(*f, d, srcs[0]));
                }
                (Src::Reg(d), Ty::Num)
            }
            Expr::Str(_) | Expr::List(_) | Expr::Of(..) => return None,
        })
    }
}

#[derive(Clone, Copy)]
enum Operand<'b> {
    S(&'b [f64]),
    K(f64),
}

#[inline(always)]
fn map1(dst: &mut [f64], a: Operand, f: impl Fn(f64) -> f64) {
    match a {
        Operand::S(x) => {
            for (d, &x) in dst.iter_mut().zip(x) {
                *d = f(x);
            }
        }
        Operand::K(x) => dst.fill(f(x)),
    }
}

#[inline(always)]
fn map2(dst: &mut [f64], a: Operand, b: Operand, f: impl Fn(f64, f64) -> f64) {
    match (a, b) {
        (Operand::S(x), Operand::S(y)) => {
            for ((d, &x), &y) in dst.iter_mut().zip(x).zip(y) {
                *d = f(x, y);
            }
        }
        (Operand::S(x), Operand::K(y)) => {
            for (d, &x) in dst.iter_mut().zip(x) {
                *d = f(x, y);
            }
        }
        (Operand::K(x), Operand::S(y)) => {
            for (d, &y) in dst.iter_mut().zip(y) {
                *d = f(x, y);
            }
        }
        (Operand::K(x), Operand::K(y)) => dst.fill(f(x, y)),
    }
}

#[inline(always)]
fn b(x: bool) -> f64 {
    x as u8 as f64
}

/// Whether a filter's value matches a row: filtrex's truthiness of a number.
#[inline(always)]
fn matches(x: f64) -> bool {
    x != 0.0 && !x.is_nan()
}

/// Scratch registers for [`VectorProgram::run`], reused across chunks.
pub struct Registers(Vec<Vec<f64>>);

impl<'a> VectorProgram<'a> {
    pub fn registers(&self) -> Registers {
        Registers((0..self.regs).map(|_| vec![0.0; CHUNK]).collect())
    }

    /// Columns whose empty or text cells must go to the interpreter.
    pub fn special_columns(&self) -> impl Iterator<Item = &'a Column> + '_ {
        self.cols.iter().copied().filter(|c| c.special > 0)
    }

    fn operand<'b>(&self, s: Src, regs: &'b [Vec<f64>], start: usize, n: usize) -> Operand<'b>
    where
        'a: 'b,
    {
        match s {
            Src::Reg(r) => Operand::S(&regs[r][..n]),
            Src::Col(c) => Operand::S(&self.cols[c].values[start..start + n]),
            Src::Const(k) => Operand::K(k),
        }
    }

    /// Evaluates rows `start..start + n` (n ≤ CHUNK) and calls `out(i, matched)`
    /// for each row offset.
    pub fn run(
        &self,
        start: usize,
        n: usize,
        regs: &mut Registers,
        mut out: impl FnMut(usize, bool),
    ) {
        match self.execute(start, n, regs) {
            Operand::S(v) => {
                for (i, &x) in v.iter().enumerate() {
                    out(i, matches(x));
                }
            }
            Operand::K(x) => {
                let m = matches(x);
                for i in 0..n {
                    out(i, m);
                }
            }
        }
    }

    /// Calls `on_match` with the offset of each row of `start..start + n`
    /// the filter matches, in order: [`Self::run`] for the rows that
    /// matter when no other row does. Rows are looked at four at a time,
    /// and four that all fail cost one test: most rows of a selective
    /// filter do, and a test per row (and, in a component, an
    /// interruption check per row) was most of a repeated query's time.
    pub fn run_matching(
        &self,
        start: usize,
        n: usize,
        regs: &mut Registers,
        mut on_match: impl FnMut(usize),
    ) {
        match self.execute(start, n, regs) {
            Operand::S(v) => {
                let (fours, rest) = v.as_chunks::<4>();
                for (k, four) in fours.iter().enumerate() {
                    // Zero in every bit but the sign: 0.0 or -0.0, no match.
                    let [a, b, c, d] = four.map(|x| x.to_bits() << 1);
                    if a | b | c | d == 0 {
                        continue;
                    }
                    for (j, &x) in four.iter().enumerate() {
                        if matches(x) {
                            on_match(4 * k + j);
                        }
                    }
                }
                for (j, &x) in rest.iter().enumerate() {
                    if matches(x) {
                        on_match(4 * fours.len() + j);
                    }
                }
            }
            Operand::K(x) => {
                if matches(x) {
                    (0..n).for_each(on_match);
                }
            }
        }
    }

    /// Runs the program over rows `start..start + n` and answers its result.
    fn execute<'r>(&'r self, start: usize, n: usize, regs: &'r mut Registers) -> Operand<'r> {
        let regs = &mut regs.0;
        for op in &self.ops {
            let d = match op {
                Op::Arith(_, d, ..)
                | Op::Neg(d, _)
                | Op::Cmp(_, d, ..)
                | Op::And(d, ..)
                | Op::Or(d, ..)
                | Op::Not(d, _)
                | Op::F1(_, d, _)
                | Op::Fold(_, d, _)
                | Op::In(d, ..)
                | Op::Select(d, ..) => *d,
            };
            let mut dst = std::mem::take(&mut regs[d]);
            {
                let dst = &mut dst[..n];
                let o = |s: Src| self.operand(s, regs, start, n);
                match op {
                    Op::Arith(op, _, x, y) => match op {
                        BinOp::Add => map2(dst, o(*x), o(*y), |a, b| a + b),
                        BinOp::Sub => map2(dst, o(*x), o(*y), |a, b| a - b),
                        BinOp::Mul => map2(dst, o(*x), o(*y), |a, b| a * b),
                        BinOp::Div => map2(dst, o(*x), o(*y), |a, b| a / b),
                        op => map2(dst, o(*x), o(*y), |a, b| arith(*op, a, b)),
                    },
                    Op::Neg(_, x) => map1(dst, o(*x), |a| -a),
                    Op::Cmp(op, _, x, y) => match op {
                        RelOp::Eq => map2(dst, o(*x), o(*y), |a, c| b(a == c)),
                        RelOp::Ne => map2(dst, o(*x), o(*y), |a, c| b(a != c)),
                        RelOp::Lt => map2(dst, o(*x), o(*y), |a, c| b(a < c)),
                        RelOp::Le => map2(dst, o(*x), o(*y), |a, c| b(a <= c)),
                        RelOp::Gt => map2(dst, o(*x), o(*y), |a, c| b(a > c)),
                        RelOp::Ge => map2(dst, o(*x), o(*y), |a, c| b(a >= c)),
                        RelOp::Match => dst.fill(0.0),
                    },
                    Op::And(_, x, y) => map2(dst, o(*x), o(*y), |a, c| a * c),
                    Op::Or(_, x, y) => map2(dst, o(*x), o(*y), |a, c| a.max(c)),
                    Op::Not(_, x) => map1(dst, o(*x), |a| 1.0 - a),
                    Op::F1(f, _, x) => match f {
                        Func::Abs => map1(dst, o(*x), f64::abs),
                        Func::Floor => map1(dst, o(*x), f64::floor),
                        Func::Ceil => map1(dst, o(*x), f64::ceil),
                        f => map1(dst, o(*x), |a| apply(*f, &[a])),
                    },
                    Op::Fold(f, _, xs) => {
                        map1(dst, o(xs[0]), |a| a);
                        for x in &xs[1..] {
                            let acc = dst.to_vec();
                            map2(dst, Operand::S(&acc), o(*x), |a, c| apply(*f, &[a, c]));
                        }
                    }
                    Op::In(_, x, set, negate) => {
                        map1(dst, o(*x), |a| b(set.contains(&a) != *negate))
                    }
                    Op::Select(_, c, x, y) => {
                        let (c, x, y) = (o(*c), o(*x), o(*y));
                        for (i, d) in dst.iter_mut().enumerate() {
                            let pick = |s: Operand| match s {
                                Operand::S(v) => v[i],
                                Operand::K(k) => k,
                            };
                            *d = if pick(c) != 0.0 { pick(x) } else { pick(y) };
                        }
                    }
                }
            }
            regs[d] = dst;
        }
        self.operand(self.result, regs, start, n)
    }
}
