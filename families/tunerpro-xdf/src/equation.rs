//! TunerPro `MATH` equations, rewritten into the expression subset the ECU
//! tools evaluate (numbers, `x`, `+ - * /`, unary minus, parentheses), and
//! inverted when they are linear.
//!
//! TunerPro equations are richer (`%`, bitwise `| & ^`, variables bound to
//! other items or to bin addresses); an equation outside the subset makes
//! its item unreadable with the reason, because evaluating part of it would
//! show wrong values.

use crate::text::plain;

/// Longest equation read. Real ones are a few dozen characters (the longest
/// in the MSS54 fixture is 30); the cap bounds the work a hostile file
/// causes and the text copied into every axis that links the item.
pub const MAX_LEN: usize = 1000;

/// Parentheses and signs the parser nests before it refuses, so a file of
/// `((((…` cannot exhaust the stack.
const MAX_NESTING: usize = 32;

/// Evaluation stack an expression may need. The ECU tools evaluate with a
/// fixed 32-slot stack and refuse deeper expressions; staying below keeps
/// every expression this family hands out evaluable there.
const MAX_STACK: usize = 24;

/// Where a `VAR` of a `MATH` takes its value from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The item's own raw value (`VAR` without a `type`).
    Own,
    /// Another item's value (`type="link"`), by its uniqueid as written.
    Link(String),
    /// A value read from the bin (`type="address"`), at this address.
    Address(String),
    /// Any other `type`, as written.
    Other(String),
}

/// One `VAR` of a `MATH` element.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// Its letter as written (`X`, `x`, `B`…); bound case-insensitively.
    pub id: String,
    /// Where its value comes from.
    pub source: Source,
}

impl Var {
    /// A variable bound to the item's own raw value.
    pub fn own(id: &str) -> Self {
        Self {
            id: id.to_string(),
            source: Source::Own,
        }
    }
}

/// An equation in the tools' subset, both ways.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaling {
    /// Raw stored `x` to physical value.
    pub to_physical: String,
    /// Physical `x` back to raw; none when the equation is not linear in
    /// `x`, which leaves the cells read-only.
    pub from_physical: Option<String>,
}

/// Rewrites `equation` (with its `VAR`s) into the subset, or says why it
/// cannot be: the sentence names the operator, function or variable at
/// fault.
pub fn rewrite(equation: &str, vars: &[Var]) -> Result<Scaling, String> {
    if equation.chars().count() > MAX_LEN {
        return Err(format!("MATH equation is longer than {MAX_LEN} characters"));
    }
    if equation.trim().is_empty() {
        return Err("MATH equation is empty".into());
    }
    let tokens = tokenize(equation, vars)?;
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        nesting: 0,
    };
    let tree = parser.expr()?;
    if parser.pos < tokens.len() {
        return Err(format!(
            "MATH equation `{equation}` has an unexpected {} after a complete expression",
            tokens[parser.pos].describe()
        ));
    }
    if stack(&tree) > MAX_STACK {
        return Err(format!("MATH equation `{equation}` nests too deeply"));
    }
    Ok(Scaling {
        to_physical: print(&tree),
        from_physical: inverse(&tree).map(|t| print(&t)),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Num(f64),
    X,
    Op(Op),
    Open,
    Close,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {}", plain(*v)),
            Tok::X => "variable".into(),
            Tok::Op(op) => format!("`{}`", op.symbol()),
            Tok::Open => "`(`".into(),
            Tok::Close => "`)`".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    fn symbol(self) -> char {
        match self {
            Op::Add => '+',
            Op::Sub => '-',
            Op::Mul => '*',
            Op::Div => '/',
        }
    }

    fn precedence(self) -> u8 {
        match self {
            Op::Add | Op::Sub => 1,
            Op::Mul | Op::Div => 2,
        }
    }
}

fn tokenize(equation: &str, vars: &[Var]) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = equation.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '+' => out.push(Tok::Op(Op::Add)),
            '-' => out.push(Tok::Op(Op::Sub)),
            '*' => out.push(Tok::Op(Op::Mul)),
            '/' => out.push(Tok::Op(Op::Div)),
            '(' => out.push(Tok::Open),
            ')' => out.push(Tok::Close),
            '%' => return Err("MATH uses the modulo operator `%`".into()),
            '|' | '&' | '^' | '~' => {
                return Err(format!("MATH uses a bitwise operator `{c}`"));
            }
            '<' | '>' => return Err(format!("MATH uses a shift or comparison `{c}`")),
            c if c.is_ascii_digit() || c == '.' => {
                let mut end = start + c.len_utf8();
                while let Some(&(i, d)) = chars.peek() {
                    if !(d.is_ascii_digit() || d == '.') {
                        break;
                    }
                    end = i + d.len_utf8();
                    chars.next();
                }
                let text = &equation[start..end];
                if let Some(&(_, d)) = chars.peek()
                    && (d.is_alphanumeric() || d == '_')
                {
                    return Err(format!(
                        "MATH has `{text}{d}…`, which is not a plain decimal number"
                    ));
                }
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => out.push(Tok::Num(v)),
                    _ => return Err(format!("MATH has `{text}`, which is not a number")),
                }
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut end = start + c.len_utf8();
                while let Some(&(i, d)) = chars.peek() {
                    if !(d.is_alphanumeric() || d == '_') {
                        break;
                    }
                    end = i + d.len_utf8();
                    chars.next();
                }
                let name = &equation[start..end];
                let rest = equation[end..].trim_start();
                if rest.starts_with('(') {
                    return Err(format!(
                        "MATH uses the function {name}(), which the expression subset lacks"
                    ));
                }
                out.push(bind(name, vars)?);
            }
            _ => return Err(format!("MATH has `{c}`, which the expression subset lacks")),
        }
    }
    Ok(out)
}

/// Binds a variable name: letters match their `VAR` whatever the case
/// (the fixture writes `equation="X"` over `VAR id="x"`); an undeclared
/// `X` is TunerPro's own-value letter.
fn bind(name: &str, vars: &[Var]) -> Result<Tok, String> {
    let var = vars.iter().find(|v| v.id.trim().eq_ignore_ascii_case(name));
    match var.map(|v| &v.source) {
        Some(Source::Own) => Ok(Tok::X),
        None if name.eq_ignore_ascii_case("x") => Ok(Tok::X),
        None => Err(format!("equation variable {name} is not declared by a VAR")),
        Some(Source::Link(id)) => Err(format!(
            "equation variable {name} links another item ({id})"
        )),
        Some(Source::Address(address)) => Err(format!(
            "equation variable {name} reads the bin at {address}"
        )),
        Some(Source::Other(kind)) => Err(format!(
            "equation variable {name} has type \"{kind}\", which this family does not read"
        )),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(f64),
    X,
    Neg(Box<Node>),
    Bin(Op, Box<Node>, Box<Node>),
}

struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    nesting: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.tokens.get(self.pos).copied()
    }

    fn enter(&mut self) -> Result<(), String> {
        if self.nesting >= MAX_NESTING {
            return Err(format!(
                "MATH nests more than {MAX_NESTING} parentheses or signs"
            ));
        }
        self.nesting += 1;
        Ok(())
    }

    fn expr(&mut self) -> Result<Node, String> {
        let mut left = self.term()?;
        while let Some(Tok::Op(op @ (Op::Add | Op::Sub))) = self.peek() {
            self.pos += 1;
            let right = self.term()?;
            left = Node::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Node, String> {
        let mut left = self.unary()?;
        while let Some(Tok::Op(op @ (Op::Mul | Op::Div))) = self.peek() {
            self.pos += 1;
            let right = self.unary()?;
            left = Node::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(Tok::Op(sign @ (Op::Add | Op::Sub))) => {
                self.pos += 1;
                self.enter()?;
                let inner = self.unary()?;
                self.nesting -= 1;
                Ok(if sign == Op::Sub {
                    Node::Neg(Box::new(inner))
                } else {
                    inner
                })
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Node, String> {
        let Some(tok) = self.peek() else {
            return Err("MATH equation ends where a value is expected".into());
        };
        self.pos += 1;
        match tok {
            Tok::Num(v) => Ok(Node::Num(v)),
            Tok::X => Ok(Node::X),
            Tok::Open => {
                self.enter()?;
                let inner = self.expr()?;
                self.nesting -= 1;
                if self.peek() != Some(Tok::Close) {
                    return Err("MATH equation has an unclosed `(`".into());
                }
                self.pos += 1;
                Ok(inner)
            }
            other => Err(format!(
                "MATH equation has {} where a value is expected",
                other.describe()
            )),
        }
    }
}

fn precedence(node: &Node) -> u8 {
    match node {
        Node::Bin(op, ..) => op.precedence(),
        Node::Neg(_) => 3,
        Node::Num(v) if *v < 0.0 => 0, // printed with its sign: keep it apart
        Node::Num(_) | Node::X => 4,
    }
}

/// Prints with the parentheses the structure needs, so the tools evaluate
/// the same tree (a right operand of equal precedence keeps its
/// parentheses: `a-(b-c)`, and float `a+(b+c)` is not `(a+b)+c`).
fn print(node: &Node) -> String {
    let mut out = String::new();
    write(node, &mut out);
    out
}

fn write(node: &Node, out: &mut String) {
    match node {
        Node::Num(v) if *v < 0.0 => {
            out.push('(');
            out.push_str(&plain(*v));
            out.push(')');
        }
        Node::Num(v) => out.push_str(&plain(*v)),
        Node::X => out.push('x'),
        Node::Neg(inner) => {
            out.push('-');
            wrapped(inner, precedence(inner) < 3, out);
        }
        Node::Bin(op, l, r) => {
            wrapped(l, precedence(l) < op.precedence(), out);
            out.push(op.symbol());
            // A sign right after an operator reads back the same, but
            // `x--1` is needlessly cryptic.
            let r_needs = precedence(r) <= op.precedence() || matches!(**r, Node::Neg(_));
            wrapped(r, r_needs, out);
        }
    }
}

fn wrapped(node: &Node, parens: bool, out: &mut String) {
    if parens {
        out.push('(');
        write(node, out);
        out.push(')');
    } else {
        write(node, out);
    }
}

/// Evaluation stack the tools' postfix evaluator needs for `node`.
fn stack(node: &Node) -> usize {
    match node {
        Node::Num(_) | Node::X => 1,
        Node::Neg(inner) => stack(inner),
        Node::Bin(_, l, r) => stack(l).max(stack(r) + 1),
    }
}

fn eval(node: &Node, x: f64) -> f64 {
    match node {
        Node::Num(v) => *v,
        Node::X => x,
        Node::Neg(inner) => -eval(inner, x),
        Node::Bin(op, l, r) => {
            let (a, b) = (eval(l, x), eval(r, x));
            match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div => a / b,
            }
        }
    }
}

/// `node` as `a·x + b` when it is linear in `x` by its structure (a product
/// or quotient of two `x` terms, or `x` in a divisor, is not).
fn linear(node: &Node) -> Option<(f64, f64)> {
    Some(match node {
        Node::Num(v) => (0.0, *v),
        Node::X => (1.0, 0.0),
        Node::Neg(inner) => {
            let (a, b) = linear(inner)?;
            (-a, -b)
        }
        Node::Bin(op, l, r) => {
            let (a1, b1) = linear(l)?;
            let (a2, b2) = linear(r)?;
            match op {
                Op::Add => (a1 + a2, b1 + b2),
                Op::Sub => (a1 - a2, b1 - b2),
                Op::Mul if a1 == 0.0 => (b1 * a2, b1 * b2),
                Op::Mul if a2 == 0.0 => (a1 * b2, b1 * b2),
                Op::Div if a2 == 0.0 && b2 != 0.0 => (a1 / b2, b1 / b2),
                _ => return None,
            }
        }
    })
}

/// Raw values the linearity and the inverse are checked at: zero, small
/// values and the ends of 8- and 16-bit ranges, signed and unsigned.
const SAMPLES: [f64; 9] = [0.0, 1.0, -1.0, 2.0, 7.0, 255.0, -128.0, 1000.0, 65535.0];

fn close(got: f64, want: f64, scale: f64) -> bool {
    got.is_finite() && (got - want).abs() <= 1e-9 * scale.max(1.0)
}

/// The inverse of `tree`, when `tree` is `a·x + b` with `a ≠ 0`, checked
/// numerically both ways. Undone step by step where `x` appears on one
/// path only (`x/1023*5` becomes `x/5*1023`, exact for the usual scalings),
/// else `(x - b) / a`.
fn inverse(tree: &Node) -> Option<Node> {
    let (a, b) = linear(tree)?;
    if a == 0.0 || !a.is_finite() || !b.is_finite() {
        return None;
    }
    let linear_everywhere = SAMPLES
        .iter()
        .all(|&x| close(eval(tree, x), a * x + b, (a * x).abs() + b.abs()));
    if !linear_everywhere {
        return None;
    }
    let inv = undo(tree, Node::X).unwrap_or_else(|| general(a, b));
    if stack(&inv) > MAX_STACK {
        return None;
    }
    let round_trips = SAMPLES.iter().all(|&x| {
        let y = eval(tree, x);
        close(eval(&inv, y), x, x.abs())
    });
    round_trips.then_some(inv)
}

fn general(a: f64, b: f64) -> Node {
    let shifted = if b == 0.0 {
        Node::X
    } else {
        Node::Bin(Op::Sub, Box::new(Node::X), Box::new(Node::Num(b)))
    };
    Node::Bin(Op::Div, Box::new(shifted), Box::new(Node::Num(a)))
}

/// Undoes `node`'s operations on the way down to its `x`, applying each
/// inverse to `inv` (what `node` evaluates to). None when both operands of
/// some step depend on `x`.
fn undo(node: &Node, inv: Node) -> Option<Node> {
    match node {
        Node::X => Some(inv),
        Node::Num(_) => None,
        Node::Neg(inner) => undo(inner, negate(inv)),
        Node::Bin(op, l, r) => {
            let (la, lb) = linear(l)?;
            let (ra, rb) = linear(r)?;
            if la != 0.0 && ra == 0.0 {
                let next = match op {
                    Op::Add => apply(Op::Sub, inv, rb),
                    Op::Sub => apply(Op::Add, inv, rb),
                    Op::Mul if rb != 0.0 => apply(Op::Div, inv, rb),
                    Op::Div => apply(Op::Mul, inv, rb),
                    Op::Mul => return None,
                };
                undo(l, next)
            } else if la == 0.0 && ra != 0.0 {
                let next = match op {
                    Op::Add => apply(Op::Sub, inv, lb),
                    Op::Sub => Node::Bin(Op::Sub, Box::new(Node::Num(lb)), Box::new(inv)),
                    Op::Mul if lb != 0.0 => apply(Op::Div, inv, lb),
                    Op::Mul | Op::Div => return None,
                };
                undo(r, next)
            } else {
                None
            }
        }
    }
}

fn negate(node: Node) -> Node {
    match node {
        Node::Neg(inner) => *inner,
        other => Node::Neg(Box::new(other)),
    }
}

/// `inv op c`, leaving out steps that change nothing (`+ 0`, `* 1`), which
/// generated equations such as `((1.0 * X) - 0.0) / (1.0 - (0.0 * X))`
/// are full of.
fn apply(op: Op, inv: Node, c: f64) -> Node {
    let identity = match op {
        Op::Add | Op::Sub => c == 0.0,
        Op::Mul | Op::Div => c == 1.0,
    };
    if identity {
        inv
    } else {
        Node::Bin(op, Box::new(inv), Box::new(Node::Num(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(eq: &str) -> Result<Scaling, String> {
        rewrite(eq, &[Var::own("x")])
    }

    fn both(eq: &str) -> (String, Option<String>) {
        let s = own(eq).unwrap();
        (s.to_physical, s.from_physical)
    }

    /// Evaluates a printed expression the way the tools do, to check that
    /// what is printed means what was parsed.
    fn eval_text(text: &str, x: f64) -> f64 {
        let s = rewrite(text, &[]).unwrap();
        let tokens = tokenize(&s.to_physical, &[]).unwrap();
        let tree = Parser {
            tokens: &tokens,
            pos: 0,
            nesting: 0,
        }
        .expr()
        .unwrap();
        eval(&tree, x)
    }

    #[test]
    fn fixture_equations_and_their_inverses() {
        assert_eq!(
            both("X/1023*5"),
            ("x/1023*5".into(), Some("x/5*1023".into()))
        );
        assert_eq!(both("x-48"), ("x-48".into(), Some("x+48".into())));
        assert_eq!(both("X"), ("x".into(), Some("x".into())));
        assert_eq!(
            both("1+(x/32768)"),
            ("1+x/32768".into(), Some("(x-1)*32768".into()))
        );
        assert_eq!(
            both("x*3+500"),
            ("x*3+500".into(), Some("(x-500)/3".into()))
        );
        assert_eq!(
            both("-x+1000"),
            ("-x+1000".into(), Some("-(x-1000)".into()))
        );
        assert_eq!(
            both("(((1/(x/512))/1023)*5)*1000").1,
            None,
            "x in a divisor"
        );
        // The fixture writes it with one `)` too many: refused, not repaired.
        let e = own("(((1/(x/512))/1023)*5)*1000)").unwrap_err();
        assert!(e.contains("unexpected `)`"), "{e}");
        // 25.6/x is not linear: the cells are read-only.
        assert_eq!(both("25.6/x"), ("25.6/x".into(), None));
        assert_eq!(both("x/655.36").1, Some("x*655.36".into()));
    }

    #[test]
    fn inverses_round_trip_numerically() {
        for eq in [
            "X/1023*5",
            "x-48",
            "1+(x/32768)",
            "x*100/32768",
            "-x+1000",
            "x - 2*x/4",
            "((1.0 * X) - 0.0 ) / (0.03125 - (0.0 * X))",
            "(x+3)*(2-1)",
        ] {
            let s = own(eq).unwrap();
            let inv = s
                .from_physical
                .unwrap_or_else(|| panic!("{eq}: no inverse"));
            for raw in [0.0, 1.0, 100.0, 1023.0, 65535.0] {
                let phys = eval_text(&s.to_physical, raw);
                let back = eval_text(&inv, phys);
                assert!((back - raw).abs() < 1e-6, "{eq}: {raw} -> {phys} -> {back}");
            }
        }
        // Generated A2L equations lose their no-op steps.
        assert_eq!(
            own("((1.0 * X) - 0.0 ) / (0.03125 - (0.0 * X))")
                .unwrap()
                .from_physical,
            Some("x*0.03125".into())
        );
        // x on two paths: the general form.
        assert_eq!(
            own("x - 2*x/4").unwrap().from_physical,
            Some("x/0.5".into())
        );
    }

    #[test]
    fn constant_and_degenerate_equations_have_no_inverse() {
        assert_eq!(both("5").1, None);
        assert_eq!(both("x*0").1, None);
        assert_eq!(both("x-x").1, None);
        assert_eq!(both("x*x").1, None);
        assert_eq!(both("x/0").1, None);
    }

    #[test]
    fn variables_bind_case_insensitively() {
        assert_eq!(rewrite("X*2", &[Var::own("x")]).unwrap().to_physical, "x*2");
        assert_eq!(rewrite("x*2", &[Var::own("X")]).unwrap().to_physical, "x*2");
        assert_eq!(rewrite("A*2", &[Var::own("A")]).unwrap().to_physical, "x*2");
        // An undeclared X is the item's own value; other letters are not.
        assert_eq!(rewrite("X", &[]).unwrap().to_physical, "x");
        let e = rewrite("Q*2", &[Var::own("x")]).unwrap_err();
        assert!(e.contains("variable Q is not declared"), "{e}");
    }

    #[test]
    fn variables_bound_elsewhere_are_refused() {
        let link = Var {
            id: "B".into(),
            source: Source::Link("0x1A2".into()),
        };
        let e = rewrite("X*B", &[Var::own("X"), link]).unwrap_err();
        assert_eq!(e, "equation variable B links another item (0x1A2)");
        let addr = Var {
            id: "Y".into(),
            source: Source::Address("0x7F00".into()),
        };
        let e = rewrite("x+y", &[Var::own("X"), addr]).unwrap_err();
        assert_eq!(e, "equation variable y reads the bin at 0x7F00");
    }

    #[test]
    fn operators_outside_the_subset_are_refused() {
        assert_eq!(
            own("x%256").unwrap_err(),
            "MATH uses the modulo operator `%`"
        );
        assert_eq!(own("x|1").unwrap_err(), "MATH uses a bitwise operator `|`");
        assert_eq!(
            own("x & 0xFF").unwrap_err(),
            "MATH uses a bitwise operator `&`"
        );
        assert_eq!(own("x^2").unwrap_err(), "MATH uses a bitwise operator `^`");
        let e = own("ABS(x)").unwrap_err();
        assert!(e.contains("function ABS()"), "{e}");
        let e = own("1e3*x").unwrap_err();
        assert!(e.contains("not a plain decimal"), "{e}");
        for bad in ["", "x+", "(x", "x)", "x 2", "*x", "1..2"] {
            assert!(own(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hostile_equations_are_bounded() {
        let deep = format!("{}x{}", "(".repeat(5000), ")".repeat(5000));
        assert!(own(&deep[..]).is_err());
        let signs = format!("{}x", "-".repeat(900));
        assert!(own(&signs).unwrap_err().contains("nests more than"));
        let long = "x+".repeat(600) + "x";
        assert!(own(&long).unwrap_err().contains("longer than"));
        // Right-nested within the nesting cap but too deep for the tools.
        let right = format!("{}x{}", "1-(".repeat(30), ")".repeat(30));
        assert!(own(&right).unwrap_err().contains("nests too deeply"));
        // A long left-leaning chain is fine.
        let chain = "x".to_string() + &"+1".repeat(400);
        assert!(own(&chain).is_ok());
    }

    #[test]
    fn printing_keeps_the_tree() {
        assert_eq!(own("x-(2-3)").unwrap().to_physical, "x-(2-3)");
        assert_eq!(own("(x-2)-3").unwrap().to_physical, "x-2-3");
        assert_eq!(own("x/(10*16)").unwrap().to_physical, "x/(10*16)");
        assert_eq!(own("x*-1").unwrap().to_physical, "x*(-1)");
        assert_eq!(own("-(x+1)").unwrap().to_physical, "-(x+1)");
        assert_eq!(own(" 0.5 * X ").unwrap().to_physical, "0.5*x");
        assert_eq!(own(".5*x").unwrap().to_physical, "0.5*x");
    }
}
