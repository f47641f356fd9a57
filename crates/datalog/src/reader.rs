//! Datalog reader: CSV logs (plain ones with a time column, EvoScan's
//! `LogEntrySeconds`, RomRaider's `Time (msec)` or clock time with `,` or
//! `;` and header lines repeated or changed mid-file, and the other
//! loggers [`crate::detect`] recognises), parsed once into columns; binary
//! logs (MLG, Link, EMU Black, Emerald) are recognised from their first
//! bytes and read by [`crate::binary`] into the same columns.
//!
//! The hot loop reads a numeric field and converts it in the same pass
//! (Clinger's fast path: an exact integer mantissa divided by an exact power
//! of ten is correctly rounded); anything else goes through the general
//! field reader (RFC 4180 quoting, decimal commas, thousands separators).

use crate::binary::{self, BinaryError};
use crate::column::Column;
use crate::detect;
pub use crate::detect::Encoding;
pub use crate::format::{DateKind, Format, TimeUnit, parse_clock};
use crate::format::{general_number, time_unit_of};
use crate::log::Times;
pub use crate::log::{Log, Marker, Need};
use crate::plan::{MAX_COLUMNS, Plan, too_many_columns};
use crate::separators::Separators;
use std::fmt;

/// Why a file is not a log the reader can parse.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// The file has no bytes.
    Empty,
    /// No line of the head looks like a header of column names.
    NoHeader,
    /// Detection found something that is not a log it understands (why).
    NotALog(String),
    /// A line (or an unclosed quoted field) longer than [`MAX_LINE`].
    LineTooLong,
    /// The file could not be read (the I/O error's message).
    Io(String),
    /// A binary log that cannot be read, and why.
    Binary(BinaryError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Empty => write!(f, "the file is empty"),
            ReadError::NoHeader => write!(f, "no header line with column names"),
            ReadError::NotALog(why) => write!(f, "{why}"),
            ReadError::LineTooLong => write!(
                f,
                "a line runs past {} MiB without ending (an unclosed quote, or not a CSV \
                 log); fix or remove the file",
                MAX_LINE >> 20
            ),
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Binary(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The longest line (or quoted field) read: past it the file is refused
/// rather than buffered whole.
pub const MAX_LINE: usize = 32 << 20;

/// Parses `MM:SS(.f)` (minutes of the hour and seconds, Excel's `mm:ss.0`
/// display of a clock) into seconds of the hour.
pub fn parse_min_sec(s: &str) -> Option<f64> {
    let (m, sec) = s.trim().split_once(':')?;
    if m.is_empty() || m.len() > 2 || !m.bytes().all(|b| b.is_ascii_digit()) || sec.contains(':') {
        return None;
    }
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    if whole.len() != 2
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let m: f64 = m.parse().ok()?;
    let sec: f64 = sec.parse().ok()?;
    ((0.0..60.0).contains(&m) && (0.0..60.0).contains(&sec)).then_some(m * 60.0 + sec)
}

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `mant / 10^frac` correctly rounded (`mant` below 2^53, `frac` at most
/// 22, so both are exact doubles and one division rounds once). Whole
/// numbers skip the division: its latency is on the path of every stored
/// value, and most channels (RPM, counts, flags) are whole. The conversion
/// is signed because `mant` fits: an unsigned one is a branch and a
/// fix-up in wasm.
#[inline(always)]
fn scaled(mant: u64, frac: usize) -> f64 {
    let v = mant as i64 as f64;
    if frac == 0 { v } else { v / POW10[frac] }
}

/// Tries the common numeric field `-?digits(.digits)?` (at most 15 digits),
/// the whole of `field`. Returns the value and its decimals.
#[inline(always)]
fn plain_number(field: &[u8]) -> Option<(f64, u8)> {
    let (neg, digits) = match field.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, field),
    };
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut mant: u64 = 0;
    let mut dot = None;
    for (at, &c) in digits.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d <= 9 {
            mant = mant * 10 + d as u64;
        } else if c == b'.' && dot.is_none() {
            dot = Some(at);
        } else {
            return None;
        }
    }
    let (int_digits, frac) = match dot {
        None => (digits.len(), 0),
        Some(at) if at + 1 < digits.len() => (at, digits.len() - at - 1),
        Some(_) => return None,
    };
    if int_digits == 0 || int_digits + frac > 15 {
        return None;
    }
    let v = scaled(mant, frac);
    Some((if neg { -v } else { v }, frac as u8))
}

/// [`plain_number`] of the field `b[at..end]` (not empty): eight bytes at
/// once when the field is that short.
#[inline(always)]
fn number_at(b: &[u8], at: usize, end: usize) -> Option<(f64, u8)> {
    let len = end - at;
    if len <= 8
        && let Some(word) = b.get(at..at + 8)
    {
        return short_number(u64::from_le_bytes(word.try_into().ok()?), len);
    }
    plain_number(&b[at..end])
}

/// [`plain_number`] of the first `len` (1 to 8) bytes of `word` (loaded
/// little-endian: the field's first byte is the lowest), without a branch
/// per byte.
#[inline(always)]
fn short_number(word: u64, len: usize) -> Option<(f64, u8)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let mut w = word & (u64::MAX >> (64 - 8 * len));
    let mut len = len;
    let neg = w & 0xFF == b'-' as u64;
    if neg {
        w >>= 8;
        len -= 1;
        if len == 0 {
            return None;
        }
    }
    // The high bit of each byte that is a point (exact: no carry crosses a
    // byte; the zero bytes past the field are not points).
    let x = w ^ (ONES * b'.' as u64);
    let points = !(((x & LOW7) + LOW7) | x | LOW7);
    let (digits, count, frac) = if points == 0 {
        (w, len, 0)
    } else {
        let at = (points.trailing_zeros() / 8) as usize;
        if points & (points - 1) != 0 || at == 0 || at + 1 == len {
            return None;
        }
        // Close the gap the point leaves.
        let before = w & ((1u64 << (8 * at)) - 1);
        let after = w >> (8 * (at + 1));
        (before | (after << (8 * at)), len - 1, len - 1 - at)
    };
    // Eight digits, most significant first: pad with leading '0's.
    let pad = 8 * (8 - count);
    let padded = if pad == 0 {
        digits
    } else {
        (digits << pad) | ((ONES * b'0' as u64) & ((1u64 << pad) - 1))
    };
    const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let all_digits = (padded & HIGH_NIBBLES)
        | ((padded.wrapping_add(ONES * 6) & HIGH_NIBBLES) >> 4)
        == ONES * 0x33;
    if !all_digits {
        return None;
    }
    let mut v = (padded & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561) >> 8;
    v = (v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    v = (v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
    let value = scaled(v, frac);
    Some((if neg { -value } else { value }, frac as u8))
}

/// The fast path of [`Reader::read_rows`]: reads rows from `i` while each
/// is plain (no quote, as many fields as the header, a first field that
/// cannot start a header line), looking only at the first field and the
/// converted ones and skipping the others. Returns where it stopped: the
/// start of a line it cannot take, or the end of `b`.
///
/// Not inlined into the row loop: in a component, Cranelift then keeps
/// this loop's values (the linear memory's base among them) in registers
/// instead of reloading them from the stack frame of the whole reader.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn plain_rows(
    b: &[u8],
    mut i: usize,
    delim: u8,
    seps: &Separators,
    lay: &Layout,
    spans: &mut [(usize, usize)],
    columns: &mut [Column],
    rows: &mut usize,
    next_quote: &mut usize,
    most: usize,
) -> usize {
    let mut done = 0;
    while i < b.len() && done < most {
        let c0 = b[i];
        if c0 == b'\n' || c0 == b'\r' {
            i += 1;
            continue;
        }
        let line_end = seps.lines.next_from(i);
        if line_end >= quote_from(seps, i, next_quote) {
            return i;
        }
        let mut row = seps.fields.cursor(i);
        let (mut at, mut next_k) = (i, 0);
        for (span, &(k, _)) in spans.iter_mut().zip(&lay.visits) {
            if k > next_k {
                at = row.nth_bit(k - next_k - 1) + 1;
            }
            let end = row.next_bit();
            *span = (at, end);
            at = end + 1;
            next_k = k + 1;
        }
        // The fields after the last one looked at: as many field ends up
        // to the line's end as there are fields left.
        let ncols = lay.map.len();
        let whole = if ncols > next_k {
            at <= line_end && seps.fields.count(at, line_end) == ncols - next_k
        } else {
            at == line_end + 1
        };
        if !whole {
            return i;
        }
        let (first_at, first_end) = spans[0];
        let Some(first) = first_field(b, first_at, first_end, &lay.header[0]) else {
            return i;
        };
        for (visit, (&(at, end), &(_, col))) in spans.iter().zip(&lay.visits).enumerate() {
            let Some(col) = col else { continue };
            let number = if visit == 0 {
                first
            } else {
                plain_field(b, at, end)
            };
            push_field(&mut columns[col], b, at, end, number, delim);
        }
        for &c in &lay.absent {
            columns[c].push_null();
        }
        *rows += 1;
        done += 1;
        i = next_line(b, line_end);
    }
    i
}

/// Rows [`uniform_rows`] takes in its first block; each block after a
/// whole one doubles, up to [`UNIFORM_MOST`], so a file whose rows are
/// rarely alike costs little when a block stops at its first row.
const UNIFORM_FIRST: usize = 4;
/// The most rows in one block of [`uniform_rows`] (its scratch is about
/// this many rows' field ends).
const UNIFORM_MOST: usize = 1024;

/// The columnar fast path of [`Reader::read_rows`]: reads from `i` blocks
/// of rows that are all alike (no quote, as many fields as the header,
/// each row ended by the same line end, `\n` or `\r\n`), and returns where
/// it stopped, at the first row that is not, which [`plain_rows`] and the
/// RFC 4180 path read as before.
///
/// A block's line ends are first written out in order, then for each row
/// the ends of its fields up to the last one converted (a query of two
/// channels of a 150-channel log looks at a few fields a row, not all).
/// Each converted column is then read down the block in a function of its
/// own ([`first_fields`], [`column_fields`]), whose few values a
/// component's compiler keeps in registers, where a loop over a row's
/// fields has every column's state live at once.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn uniform_rows(
    b: &[u8],
    mut i: usize,
    delim: u8,
    seps: &Separators,
    lay: &Layout,
    columns: &mut [Column],
    rows: &mut usize,
    next_quote: &mut usize,
    scratch: &mut BlockScratch,
) -> usize {
    let ncols = lay.map.len();
    // A single-column file's empty field is a blank line, which is skipped.
    if ncols < 2 {
        return i;
    }
    // The fields looked at: the first and the converted ones, so all up
    // to the last converted one.
    let width = lay.visits.last().map_or(1, |&(k, _)| k + 1);
    // Every field of a block ends before the first quote.
    let limit = quote_from(seps, i, next_quote).min(b.len());
    let mut block = UNIFORM_FIRST;
    loop {
        // Room for `block` rows with `\r\n` ends (two line ends a row).
        let room = 2 * block;
        let found = seps.lines.positions(i, limit, room, &mut scratch.lines);
        let lines = &scratch.lines[..found];
        let Some(&first) = lines.first() else {
            return i;
        };
        let crlf = b[first] == b'\r' && b.get(first + 1) == Some(&b'\n');
        let per_row = 1 + usize::from(crlf);
        let most = found / per_row;
        if scratch.ends.len() < most * width {
            scratch.ends.resize(most * width, 0);
        }
        // Rows ended as the first one is, with as many fields as the
        // header (which also leaves out blank lines), and their fields'
        // ends up to `width`.
        let (mut n, mut start) = (0, i);
        for (row, ends) in lines
            .chunks_exact(per_row)
            .zip(scratch.ends.chunks_exact_mut(width))
        {
            let end = row[0];
            let ended = if crlf {
                b[end] == b'\r' && row[1] == end + 1 && b[end + 1] == b'\n'
            } else {
                // A lone `\r` ends a row's fields, but its line runs on to
                // the next `\n` (as `next_line` reads it): not alike.
                b[end] == b'\n'
            };
            if !ended || seps.fields.count(start, end) != ncols {
                break;
            }
            let mut fields = seps.fields.cursor(start);
            // Four at a time, without a loop inside: in a component every
            // turn of a loop is also an interruption check.
            let (fours, rest) = ends.as_chunks_mut::<4>();
            for four in fours {
                *four = [(); 4].map(|_| fields.next_bit());
            }
            for field_end in rest {
                *field_end = fields.next_bit();
            }
            start = row[per_row - 1] + 1;
            n += 1;
        }
        if n == 0 {
            return i;
        }
        let ends = &scratch.ends[..n * width];
        // The first field: a line whose first field may start a header
        // ends the block before it.
        let first = lay.visits[0].1.map(|c| &mut columns[c]);
        n = first_fields(
            b,
            i,
            lines,
            per_row,
            ends,
            width,
            &lay.header[0],
            first,
            delim,
        );
        for &(k, col) in &lay.visits[1..] {
            if let Some(c) = col {
                column_fields(b, ends, width, k, n, &mut columns[c], delim);
            }
        }
        for &c in &lay.absent {
            columns[c].push_nulls(n);
        }
        *rows += n;
        i = row_start(i, lines, per_row, n);
        // On only after a whole block that filled `lines`: otherwise the
        // next row is not alike, or the lines before `limit` are used up.
        if n < most || found < room {
            return i;
        }
        block = (block * 2).min(UNIFORM_MOST);
    }
}

/// The scratch space of [`uniform_rows`], kept from block to block.
#[derive(Default)]
struct BlockScratch {
    /// A block's line ends, in order.
    lines: Vec<usize>,
    /// Each row's field ends up to the last field looked at.
    ends: Vec<usize>,
}

/// Where row `r` of a block that starts at `i` starts: one past the line
/// end (`per_row` bytes of it) of the row before.
#[inline(always)]
fn row_start(i: usize, lines: &[usize], per_row: usize, r: usize) -> usize {
    if r == 0 {
        i
    } else {
        lines[r * per_row - 1] + 1
    }
}

/// The first fields of a block's `n` rows (see [`row_start`]), stored in
/// `column` when it is converted. Returns how many rows it took: it stops
/// before a row whose first field may start a header line.
///
/// This and [`column_fields`] are functions of their own so that
/// Cranelift keeps each loop's few values in registers.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn first_fields(
    b: &[u8],
    i: usize,
    lines: &[usize],
    per_row: usize,
    ends: &[usize],
    width: usize,
    first_name: &str,
    column: Option<&mut Column>,
    delim: u8,
) -> usize {
    let n = ends.len() / width;
    let field = |r: usize| (row_start(i, lines, per_row, r), ends[r * width]);
    let Some(column) = column else {
        return (0..n)
            .position(|r| {
                let (at, end) = field(r);
                first_field(b, at, end, first_name).is_none()
            })
            .unwrap_or(n);
    };
    store_cells(column, n, b, delim, |r| {
        let (at, end) = field(r);
        match first_field(b, at, end, first_name) {
            Some(Some((v, d))) => Stored::Number(v, d),
            Some(None) => Stored::Other(at, end),
            // A line that may start a header ends the block here.
            None => Stored::Stop,
        }
    })
}

/// Field `k` (not the first) of a block's first `n` rows, into `column`.
#[inline(never)]
fn column_fields(
    b: &[u8],
    ends: &[usize],
    width: usize,
    k: usize,
    n: usize,
    column: &mut Column,
    delim: u8,
) {
    store_cells(column, n, b, delim, |r| {
        let row = &ends[r * width..];
        let (at, end) = (row[k - 1] + 1, row[k]);
        match plain_field(b, at, end) {
            Some((v, d)) => Stored::Number(v, d),
            None => Stored::Other(at, end),
        }
    });
}

/// One cell of a block as [`store_cells`] stores it.
enum Stored {
    /// A number and its decimals.
    Number(f64, u8),
    /// An empty or text cell, `b[at..end]`.
    Other(usize, usize),
    /// Not a row of the block: it ends before this one.
    Stop,
}

/// Stores the cells of a block's rows `0..n`, `cell(r)` telling what each
/// is, into `column`; returns the rows stored (`n`, or the row `cell`
/// stopped at).
///
/// Numbers are written straight into the room reserved, their count and
/// decimals kept in locals and set once: in a component a push per cell
/// loads and stores the vector's length around the value's store (linear
/// memory might alias it). An empty or text cell goes through
/// `push_field`, and the numbers after it start again.
#[inline(always)]
fn store_cells(
    column: &mut Column,
    n: usize,
    b: &[u8],
    delim: u8,
    mut cell: impl FnMut(usize) -> Stored,
) -> usize {
    column.values.reserve(n);
    let mut r = 0;
    loop {
        let (len, mut decimals) = (column.values.len(), column.decimals);
        let room = column.values.spare_capacity_mut();
        let mut written = 0;
        let mut other = None;
        while r < n {
            match cell(r) {
                Stored::Number(v, d) => {
                    room[written].write(v);
                    written += 1;
                    decimals = decimals.max(d);
                    r += 1;
                }
                Stored::Other(at, end) => {
                    other = Some((at, end));
                    break;
                }
                Stored::Stop => break,
            }
        }
        // SAFETY: `room[..written]` was written just above, and `room` is
        // the spare capacity past `len`.
        unsafe { column.values.set_len(len + written) };
        column.decimals = decimals;
        let Some((at, end)) = other else { return r };
        push_field(column, b, at, end, None, delim);
        r += 1;
    }
}

/// The first quote at or after `i`, looked for again only once the rows
/// read have passed the last one found (`next_quote`, shared by
/// [`uniform_rows`] and [`plain_rows`]).
#[inline(always)]
fn quote_from(seps: &Separators, i: usize, next_quote: &mut usize) -> usize {
    if *next_quote < i {
        *next_quote = seps.quotes.next_from(i);
    }
    *next_quote
}

/// The number a plain row's field `b[at..end]` holds: `None` when it is
/// empty or text.
#[inline(always)]
fn plain_field(b: &[u8], at: usize, end: usize) -> Option<(f64, u8)> {
    if at == end {
        None
    } else {
        number_at(b, at, end)
    }
}

/// [`plain_field`] of a row's first field, or `None` when that field may
/// start a header line (the row is then left to the RFC 4180 path).
#[inline(always)]
fn first_field(b: &[u8], at: usize, end: usize, first_name: &str) -> Option<Option<(f64, u8)>> {
    let number = plain_field(b, at, end);
    if number.is_none() && at != end && header_like(&b[at..end], first_name) {
        return None;
    }
    Some(number)
}

/// Stores a plain row's field `b[at..end]`, whose [`plain_field`] is
/// `number`: an empty cell, the number, or text. With branches: in a
/// component a `match` on an enum of the three became a jump table, an
/// indirect jump per cell.
#[inline(always)]
fn push_field(
    column: &mut Column,
    b: &[u8],
    at: usize,
    end: usize,
    number: Option<(f64, u8)>,
    delim: u8,
) {
    if at == end {
        column.push_null();
    } else if let Some((v, decimals)) = number {
        column.push_num(v, decimals);
    } else {
        push_text(column, &b[at..end], delim);
    }
}

/// Whether a first field that is not a number may start a header line:
/// a time axis name (a new header) or the current header's first name.
/// Rare, so kept out of [`plain_rows`]' loop.
#[cold]
#[inline(never)]
fn header_like(field: &[u8], first_name: &str) -> bool {
    let text = String::from_utf8_lossy(field);
    time_unit_of(&text).is_some() || text.trim() == first_name
}

/// A plain row's field that is not a number, stored through
/// [`push_general`]. Rare, so kept out of [`plain_rows`]' loop.
#[cold]
#[inline(never)]
fn push_text(column: &mut Column, field: &[u8], delim: u8) {
    push_general(column, &String::from_utf8_lossy(field), false, delim);
}

/// One field as [`read_field`] found it.
struct Field<'a> {
    /// The raw text (unquoted, `""` unescaped).
    text: std::borrow::Cow<'a, str>,
    quoted: bool,
    /// False when a quoted field runs to the end of the data unclosed.
    closed: bool,
    /// The index of the byte after the field (a delimiter, a line end, or the end).
    end: usize,
}

/// Reads one field starting at `i` (quoted or not).
fn read_field(b: &[u8], mut i: usize, delim: u8) -> Field<'_> {
    if b.get(i) == Some(&b'"') {
        i += 1;
        let mut out = Vec::new();
        let mut closed = false;
        while i < b.len() {
            if b[i] == b'"' {
                if b.get(i + 1) == Some(&b'"') {
                    out.push(b'"');
                    i += 2;
                    continue;
                }
                i += 1;
                closed = true;
                break;
            }
            out.push(b[i]);
            i += 1;
        }
        // Anything between the closing quote and the delimiter is kept.
        while i < b.len() && b[i] != delim && b[i] != b'\n' && b[i] != b'\r' {
            out.push(b[i]);
            i += 1;
        }
        let s = String::from_utf8_lossy(&out).into_owned();
        return Field {
            text: std::borrow::Cow::Owned(s),
            quoted: true,
            closed,
            end: i,
        };
    }
    let start = i;
    while i < b.len() && b[i] != delim && b[i] != b'\n' && b[i] != b'\r' {
        i += 1;
    }
    Field {
        text: String::from_utf8_lossy(&b[start..i]),
        quoted: false,
        closed: true,
        end: i,
    }
}

/// Splits the line at `i` into its fields (text, quoted) and returns them
/// with the start of the next line; `None` when a quoted field is still
/// open at the end of `b` and more data is to come (`!eof`).
fn split_line(
    b: &[u8],
    mut i: usize,
    delim: u8,
    eof: bool,
    keep: usize,
) -> Option<(Vec<(String, bool)>, usize)> {
    let mut fields = Vec::new();
    loop {
        let field = read_field(b, i, delim);
        if !field.closed && !eof {
            return None;
        }
        // Past `keep` fields only that there are more matters: a line of
        // a million empty fields must not become a million strings.
        if fields.len() <= keep {
            fields.push((field.text.into_owned(), field.quoted));
        }
        i = field.end;
        if i < b.len() && b[i] == delim {
            i += 1;
            continue;
        }
        break;
    }
    Some((fields, next_line(b, i)))
}

fn next_line(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\n' {
        i += 1;
    }
    (i + 1).min(b.len())
}

fn sniff_delimiter(line: &[u8]) -> u8 {
    let line = line.split(|&c| c == b'\n').next().unwrap_or(line);
    let counts = detect::count_fields(line);
    let best = (0..3).max_by_key(|&k| (counts[k], 3 - k)).unwrap_or(0);
    detect::SEPARATORS[best]
}

struct Layout {
    /// Column index of each field of the current header.
    map: Vec<usize>,
    /// Whether each field of the current header is converted.
    load: Vec<bool>,
    /// Columns the current header lacks (filled with empty cells).
    absent: Vec<usize>,
    header: Vec<String>,
    /// The fields a plain row's fast path looks at, in order: the first one
    /// (it may start a header line) and the converted ones, each with its
    /// column when converted.
    visits: Vec<(usize, Option<usize>)>,
}

fn layout(columns: &mut Vec<Column>, header: &[String], rows: usize, need: &Need) -> Layout {
    use std::collections::{HashMap, HashSet};
    // Hash lookups throughout: a header of thousands of (repeated) names
    // must not cost quadratic time, and RomRaider repeats headers mid-file.
    let mut existing: HashMap<String, usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    let mut used: HashSet<String> = HashSet::with_capacity(header.len());
    let mut next_suffix: HashMap<&str, usize> = HashMap::new();
    let mut map = Vec::with_capacity(header.len());
    for name in header {
        let mut unique = name.clone();
        if used.contains(&unique) {
            let k = next_suffix.entry(name).or_insert(2);
            loop {
                unique = format!("{name} #{k}");
                *k += 1;
                if !used.contains(&unique) {
                    break;
                }
            }
        }
        used.insert(unique.clone());
        let idx = match existing.get(&unique) {
            Some(&i) => i,
            None => {
                let mut c = Column::new(unique.clone());
                c.loaded = need.wants(&c.name);
                if c.loaded {
                    c.values.reserve(rows.max(1024));
                    c.push_nulls(rows);
                }
                columns.push(c);
                existing.insert(unique, columns.len() - 1);
                columns.len() - 1
            }
        };
        map.push(idx);
    }
    let mut present = vec![false; columns.len()];
    for &c in &map {
        present[c] = true;
    }
    let absent = (0..columns.len())
        .filter(|&c| !present[c] && columns[c].loaded)
        .collect();
    let load: Vec<bool> = map.iter().map(|&c| columns[c].loaded).collect();
    let visits = (0..map.len())
        .filter(|&k| k == 0 || load[k])
        .map(|k| (k, load[k].then_some(map[k])))
        .collect();
    Layout {
        load,
        map,
        absent,
        header: header.to_vec(),
        visits,
    }
}

fn push_general(col: &mut Column, text: &str, quoted: bool, delim: u8) {
    let t = text.trim();
    if t.is_empty() {
        col.push_null();
    } else if let Some((v, d)) = general_number(t, delim, quoted) {
        col.push_num(v, d);
    } else {
        col.push_text(t);
    }
}

/// Parses a whole CSV log.
pub fn parse(data: &[u8], file_name: &str) -> Result<Log, ReadError> {
    parse_columns(data, file_name, &Need::All)
}

/// Parses a CSV log held in memory, converting only the columns `need` names.
pub fn parse_columns(data: &[u8], file_name: &str, need: &Need) -> Result<Log, ReadError> {
    read_in_steps(
        data,
        data.len() as u64,
        file_name,
        need,
        data.len().max(READ_STEP),
    )
}

/// Bytes read from the file per step of [`read_columns`]: small enough to be
/// parsed while still in cache, large enough that the calls are few.
const READ_STEP: usize = 64 << 10;

/// Reads and parses a CSV log from `source` a piece at a time, converting
/// only the columns `need` names. `size_hint` (the file's size) sizes the
/// columns up front.
///
/// The file is never held whole: reading a large log into one buffer costs
/// as much in fresh memory pages as parsing it does.
pub fn read_columns(
    source: impl std::io::Read,
    size_hint: u64,
    file_name: &str,
    need: &Need,
) -> Result<Log, ReadError> {
    read_log(source, size_hint, file_name, need, None)
}

/// [`read_columns`] for any log, CSV or binary; `companion` is the content
/// of a file read with it (an Emerald `.lg1`'s `.lg2` channel list).
pub fn read_log(
    source: impl std::io::Read,
    size_hint: u64,
    file_name: &str,
    need: &Need,
    companion: Option<&[u8]>,
) -> Result<Log, ReadError> {
    read_steps(
        source, size_hint, file_name, need, READ_STEP, false, companion,
    )
}

/// Reads only the start of a log: its layout, channel names and units, and
/// the rows of the first piece, none of them converted but the time axis.
/// What a caller needs to choose channels by name before paying for
/// [`read_columns`] once with exactly those (a header change later in the
/// file is not seen). A binary log is read whole, its channels unconverted.
pub fn read_head(source: impl std::io::Read, file_name: &str) -> Result<Log, ReadError> {
    read_head_with(source, file_name, None)
}

/// [`read_head`] with a companion file (see [`read_log`]).
pub fn read_head_with(
    source: impl std::io::Read,
    file_name: &str,
    companion: Option<&[u8]>,
) -> Result<Log, ReadError> {
    read_steps(
        source,
        0,
        file_name,
        &Need::named::<&str>([]),
        READ_STEP,
        true,
        companion,
    )
}

fn read_in_steps(
    source: impl std::io::Read,
    size_hint: u64,
    file_name: &str,
    need: &Need,
    step: usize,
) -> Result<Log, ReadError> {
    read_steps(source, size_hint, file_name, need, step, false, None)
}

/// [`read_in_steps`], stopping after the header (and a units row) when
/// `head_only`.
fn read_steps(
    mut source: impl std::io::Read,
    size_hint: u64,
    file_name: &str,
    need: &Need,
    step: usize,
    head_only: bool,
    companion: Option<&[u8]>,
) -> Result<Log, ReadError> {
    // The layout is detected once, from the file's first bytes.
    let mut head = Vec::new();
    let mut eof = read_up_to(&mut source, &mut head, detect::HEAD)?;
    if !head.is_empty()
        && let Some(kind) = binary::sniff(&head, file_name)
    {
        let whole = std::io::Read::chain(std::io::Cursor::new(head), source);
        return binary::read(kind, whole, file_name, need, companion).map_err(ReadError::Binary);
    }
    let encoding = detect::sniff_encoding(&head);
    if !encoding.transcodes() {
        eof = eof || read_longer_head(&mut source, &mut head)?;
        return read_detected(
            source, head, eof, encoding, size_hint, file_name, need, step, head_only,
        );
    }
    let mut text = detect::Transcode::new(
        std::io::Read::chain(std::io::Cursor::new(head), source),
        encoding,
    );
    let mut head = Vec::new();
    let eof =
        read_up_to(&mut text, &mut head, detect::HEAD)? || read_longer_head(&mut text, &mut head)?;
    read_detected(
        text, head, eof, encoding, size_hint, file_name, need, step, head_only,
    )
}

/// Reads on to [`detect::LONG_HEAD`] bytes when the head starts a layout
/// whose header block can be longer than [`detect::HEAD`] (a Haltech
/// preamble declares every channel in four lines); true at the file's end.
fn read_longer_head(
    source: &mut impl std::io::Read,
    head: &mut Vec<u8>,
) -> Result<bool, ReadError> {
    if head.len() < detect::HEAD || !detect::needs_longer_head(head) {
        return Ok(false);
    }
    read_up_to(source, head, detect::LONG_HEAD - head.len())
}

/// Appends up to `most` bytes of `source` to `buf`; true at its end.
fn read_up_to(
    source: &mut impl std::io::Read,
    buf: &mut Vec<u8>,
    most: usize,
) -> Result<bool, ReadError> {
    let start = buf.len();
    buf.resize(start + most, 0);
    let mut at = start;
    while at < buf.len() {
        match source.read(&mut buf[at..]) {
            Ok(0) => {
                buf.truncate(at);
                return Ok(true);
            }
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadError::Io(e.to_string())),
        }
    }
    Ok(false)
}

#[allow(clippy::too_many_arguments)]
fn read_detected(
    mut source: impl std::io::Read,
    mut buf: Vec<u8>,
    mut eof: bool,
    encoding: Encoding,
    size_hint: u64,
    file_name: &str,
    need: &Need,
    step: usize,
    head_only: bool,
) -> Result<Log, ReadError> {
    let plan = detect::detect(&buf, eof, file_name).map_err(ReadError::NotALog)?;
    let mut reader = Reader::new(file_name, need.clone(), size_hint);
    reader.plan = plan;
    reader.encoding = encoding;
    // `buf[..filled]` holds the bytes read and not yet parsed. The rest of
    // `buf` is room to read into, zeroed once when it grows rather than at
    // every read (a pass over the whole file otherwise).
    let mut filled = buf.len();
    let mut want = 1;
    loop {
        while !eof && filled < want {
            let end = filled + step.max(want - filled);
            if buf.len() < end {
                buf.resize(end, 0);
            }
            let n = loop {
                match source.read(&mut buf[filled..end]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(ReadError::Io(e.to_string())),
                }
            };
            filled += n;
            eof = n == 0;
        }
        // Parse as soon as a read brings anything (in a component, one
        // host piece of 64 KiB): the bytes are still in the cache.
        let used = reader.feed(&buf[..filled], eof)?;
        if eof || (head_only && reader.lay.is_some() && !reader.units_row_possible) {
            return reader.finish();
        }
        buf.copy_within(used..filled, 0);
        filled -= used;
        // Nothing parsed means a line longer than the buffer (or a quoted
        // field still open): grow geometrically, so it is rescanned only
        // O(log n) times, up to a bound.
        want = if used == 0 {
            if filled > MAX_LINE {
                return Err(ReadError::LineTooLong);
            }
            (filled * 2).max(filled + 1)
        } else {
            filled + 1
        };
    }
}

/// An in-memory source that hands out at most `most` bytes per read: how
/// the tests and the `csv_log` fuzz target make [`read_columns`] meet every
/// piece boundary.
pub struct Trickle<'a> {
    /// The file's remaining bytes.
    pub data: &'a [u8],
    /// Bytes handed out per read at most (at least 1 for progress).
    pub most: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.most).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// An incremental CSV log parser: [`Reader::feed`] it the file in pieces,
/// then [`Reader::finish`] it.
pub struct Reader {
    file_name: String,
    need: Need,
    /// The file's expected size, for sizing the columns.
    size_hint: u64,
    /// Bytes consumed by earlier pieces.
    consumed: u64,
    delim: u8,
    /// The current header's layout, once the header line has been read.
    lay: Option<Layout>,
    /// The line after the header is yet to be read (it may be a units row).
    units_row_possible: bool,
    columns: Vec<Column>,
    rows: usize,
    header_changes: usize,
    ragged: usize,
    seps: Separators,
    /// What detection found (None: the first line is the header).
    plan: Option<Plan>,
    encoding: Encoding,
}

impl Reader {
    /// A parser for `file_name` (its name helps detect RomRaider and Zeitronix
    /// and date the log), converting the columns `need` names; `size_hint` is
    /// the file's size in bytes, for sizing the columns.
    pub fn new(file_name: &str, need: Need, size_hint: u64) -> Reader {
        Reader {
            file_name: file_name.to_string(),
            need,
            size_hint,
            consumed: 0,
            delim: b',',
            lay: None,
            units_row_possible: false,
            columns: Vec::new(),
            rows: 0,
            header_changes: 0,
            ragged: 0,
            seps: Separators::default(),
            plan: None,
            encoding: Encoding::Utf8,
        }
    }

    /// Parses the whole lines at the start of `data` (all of it when `eof`:
    /// nothing follows) and returns how many bytes it used. The caller
    /// passes the rest again, with more after it.
    pub fn feed(&mut self, data: &[u8], eof: bool) -> Result<usize, ReadError> {
        // Only whole lines are parsed before the end of the file.
        let b = if eof {
            data
        } else {
            match data.iter().rposition(|&c| c == b'\n') {
                Some(last) => &data[..=last],
                None => return Ok(0),
            }
        };
        let mut i = 0;
        if self.lay.is_none()
            && let Some(plan) = self.plan.take()
        {
            if b.len() < plan.body_start {
                self.plan = Some(plan);
                return if eof { Err(ReadError::Empty) } else { Ok(0) };
            }
            // Detection can take a preamble for the whole header block and
            // leave no channel names (found by fuzzing a VCDS-like file).
            if plan.names.is_empty() {
                return Err(ReadError::NoHeader);
            }
            self.start_with_plan(&plan, b);
            i = plan.body_start;
            self.plan = Some(plan);
        }
        if self.lay.is_none() {
            if self.consumed == 0 && b.starts_with(b"\xEF\xBB\xBF") {
                i = 3;
            }
            match self.read_header(b, i, eof)? {
                Some(next) => i = next,
                None => {
                    self.consumed += i as u64;
                    return Ok(i);
                }
            }
        }
        let used = self.read_rows(b, i, eof);
        self.consumed += used as u64;
        Ok(used)
    }

    /// Lays out the columns detection named; the rows start at `body_start`.
    fn start_with_plan(&mut self, plan: &Plan, b: &[u8]) {
        let rest = self.size_hint.saturating_sub(plan.body_start as u64);
        let estimate = estimate_rows(&b[plan.body_start..], rest);
        let lay = layout(&mut self.columns, &plan.names, 0, &self.need);
        for c in self.columns.iter_mut().filter(|c| c.loaded) {
            c.values.reserve(estimate);
        }
        for &h in &plan.hidden {
            if let Some(&c) = lay.map.get(h) {
                self.columns[c].hidden = true;
            }
        }
        for (k, u) in plan.units.iter().enumerate() {
            if let Some(&c) = lay.map.get(k) {
                self.columns[c].unit = u.clone();
            }
        }
        self.delim = plan.delimiter;
        self.lay = Some(lay);
        self.units_row_possible = false;
    }

    /// Reads the header line at `i` (after any blank lines); returns the
    /// start of the line after it, or `None` if the data ends first.
    fn read_header(
        &mut self,
        b: &[u8],
        mut i: usize,
        eof: bool,
    ) -> Result<Option<usize>, ReadError> {
        while i < b.len() && (b[i] == b'\n' || b[i] == b'\r' || b[i] == b' ') {
            i += 1;
        }
        if i >= b.len() {
            return Ok(None);
        }
        let delim = sniff_delimiter(&b[i..]);
        // Refuse a too-wide header before splitting it.
        let line_end = b[i..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |p| i + p);
        let width = 1 + b[i..line_end].iter().filter(|&&c| c == delim).count();
        if width > MAX_COLUMNS {
            return Err(ReadError::NotALog(too_many_columns(width, false)));
        }
        let Some((fields, next)) = split_line(b, i, delim, eof, usize::MAX) else {
            return Ok(None);
        };
        let header: Vec<String> = fields
            .into_iter()
            .map(|(s, _)| s.trim().to_string())
            .collect();
        if header.iter().all(|h| h.is_empty())
            || header
                .iter()
                .all(|h| general_number(h, delim, false).is_some())
        {
            return Err(ReadError::NoHeader);
        }
        let rest = self.size_hint.saturating_sub(self.consumed + next as u64);
        let estimate = estimate_rows(&b[next..], rest);
        let lay = layout(&mut self.columns, &header, 0, &self.need);
        for c in self.columns.iter_mut().filter(|c| c.loaded) {
            c.values.reserve(estimate);
        }
        self.delim = delim;
        self.lay = Some(lay);
        self.units_row_possible = true;
        Ok(Some(next))
    }

    /// Reads the rows from `i` on; returns where it stopped: the end of
    /// `b`, or the start of a line with a quoted field `b` ends inside.
    fn read_rows(&mut self, b: &[u8], mut i: usize, eof: bool) -> usize {
        let delim = self.delim;
        let Some(mut lay) = self.lay.take() else {
            return i;
        };
        let columns = &mut self.columns;
        let need = &self.need;
        let (mut rows, mut ragged, mut header_changes) =
            (self.rows, self.ragged, self.header_changes);
        // A units row right after the header (ECU Explorer's native logs).
        if self.units_row_possible && i < b.len() {
            self.units_row_possible = false;
            let first = read_field(b, i, delim);
            if matches!(first.text.trim(), "Unit" | "Units" | "unit" | "units") {
                i = next_line(b, i);
            }
        }
        // A line can repeat or change the header when its first field is
        // quoted or is text that is not a number: a time axis name (a new
        // header) or the current header line again.
        let is_header_line = |fields: &[(String, bool)], current: &[String]| {
            let Some((first, quoted)) = fields.first() else {
                return false;
            };
            if !quoted && (first.is_empty() || plain_number(first.as_bytes()).is_some()) {
                return false;
            }
            (time_unit_of(first.trim()).is_some() && general_number(first, delim, false).is_none())
                || (fields.len() == current.len()
                    && fields.iter().zip(current).all(|(f, h)| f.0.trim() == h))
        };
        self.seps.index(b, delim);
        let seps = &self.seps;
        // Where the fields the fast path looks at start and end.
        let mut spans: Vec<(usize, usize)> = vec![(0, 0); lay.visits.len()];
        let mut stop = b.len();
        let mut scratch = BlockScratch::default();
        let mut next_quote = seps.quotes.next_from(i);
        // Rows the row-by-row path reads before the columnar one tries
        // again: one after it read a block, twice as many after each try
        // that read none (a file whose rows are rarely alike).
        let mut plain_most = 1;
        #[cfg(test)]
        let columnar = !tests::ROW_BY_ROW.get();
        #[cfg(not(test))]
        let columnar = true;
        loop {
            let from = i;
            if columnar {
                i = uniform_rows(
                    b,
                    i,
                    delim,
                    seps,
                    &lay,
                    columns,
                    &mut rows,
                    &mut next_quote,
                    &mut scratch,
                );
            }
            plain_most = if i == from {
                (plain_most * 2).min(1 << 16)
            } else {
                1
            };
            i = plain_rows(
                b,
                i,
                delim,
                seps,
                &lay,
                &mut spans,
                columns,
                &mut rows,
                &mut next_quote,
                plain_most,
            );
            if i >= b.len() {
                break;
            }
            if i != from {
                continue;
            }
            // Any other line (quotes, too few or too many fields, a header
            // line) is split field by field, as RFC 4180 reads it.
            let Some((fields, next)) = split_line(b, i, delim, eof, MAX_COLUMNS) else {
                stop = i;
                break;
            };
            i = next;
            if is_header_line(&fields, &lay.header) {
                let header: Vec<String> = fields
                    .into_iter()
                    .map(|(s, _)| s.trim().to_string())
                    .collect();
                if header != lay.header {
                    header_changes += 1;
                    lay = layout(columns, &header, rows, need);
                    spans.resize(lay.visits.len(), (0, 0));
                }
                continue;
            }
            if fields.len() > lay.map.len() {
                ragged += 1;
            }
            for (k, &c) in lay.map.iter().enumerate().filter(|&(k, _)| lay.load[k]) {
                let column = &mut columns[c];
                match fields.get(k) {
                    None => column.push_null(),
                    Some((text, false)) if text.is_empty() => column.push_null(),
                    Some((text, false)) => match plain_number(text.as_bytes()) {
                        Some((v, d)) => column.push_num(v, d),
                        None => push_general(column, text, false, delim),
                    },
                    Some((text, true)) => push_general(column, text, true, delim),
                }
            }
            for &c in &lay.absent {
                columns[c].push_null();
            }
            rows += 1;
        }
        self.lay = Some(lay);
        (self.rows, self.ragged, self.header_changes) = (rows, ragged, header_changes);
        stop
    }

    /// The parsed log, once every piece has been fed.
    pub fn finish(self) -> Result<Log, ReadError> {
        if self.lay.is_none() {
            return Err(ReadError::Empty);
        }
        let rows = self.rows;
        let columns = self.columns;
        let format = match &self.plan {
            Some(p) => p.format,
            None => detect_format(&columns, &self.file_name),
        };
        let (time_column, time_unit) = match self.plan.as_ref().and_then(|p| p.time) {
            Some((c, unit)) if c < columns.len() => (Some(c), Some(unit)),
            _ => pick_time_column(&columns),
        };
        let plan = self.plan.as_ref();
        let mut log = Log {
            time: Times::Own(Vec::new()),
            bounds: Default::default(),
            time_column,
            time_unit,
            time_decimals: 2,
            format,
            delimiter: self.delim,
            header_changes: self.header_changes,
            ragged_lines: self.ragged,
            start_clock: None,
            start_date: plan.and_then(|p| p.date),
            encoding: self.encoding,
            time_origin: 0.0,
            columns,
            start_date_kind: plan.map_or(DateKind::Local, |p| p.date_kind),
            source: plan.and_then(|p| p.source.clone()),
            markers: Vec::new(),
            notes: plan.map_or_else(Vec::new, |p| p.notes.clone()),
        };
        if let Some(p) = plan {
            crate::haltech::apply_scales(&mut log.columns, &p.scales);
        }
        if format == Format::EcuMaster {
            // ECUMaster writes a cell only when its value changes.
            for (i, c) in log.columns.iter_mut().enumerate() {
                if Some(i) != time_column && c.loaded {
                    c.hold_empty();
                }
            }
            log.notes.push(
                "empty cells hold the channel's previous value (ECUMaster writes a value only \
                 when it changes)"
                    .to_string(),
            );
        }
        fill_time(&mut log, rows);
        if format == Format::EvoScan
            && let (Some(d), Some(t)) = (log.column("LogEntryDate"), log.column("LogEntryTime"))
            && rows > 0
        {
            log.start_clock = Some(format!("{} {}", d.display(0), t.display(0)));
        }
        Ok(log)
    }
}

/// Rows to reserve for: the `rest` bytes still to come over the mean length
/// of the lines in `sample`, plus a margin (reserved memory counts against
/// the guest's cap). Nothing when `sample` holds no whole line.
fn estimate_rows(sample: &[u8], rest: u64) -> usize {
    let sample = &sample[..sample.len().min(64 * 1024)];
    let lines = sample.iter().filter(|&&c| c == b'\n').count();
    if lines == 0 {
        return 0;
    }
    let per_line = (sample.len() / lines).max(1) as u64;
    let rows = rest / per_line;
    (rows + rows / 20 + 16).min(usize::MAX as u64) as usize
}

fn detect_format(columns: &[Column], file_name: &str) -> Format {
    let has = |n: &str| columns.iter().any(|c| c.name == n);
    if has("LogEntrySeconds") || (has("LogID") && has("LogEntryDate")) {
        Format::EvoScan
    } else if file_name.to_ascii_lowercase().starts_with("romraiderlog") || has("Time (msec)") {
        Format::RomRaider
    } else {
        Format::Plain
    }
}

fn pick_time_column(columns: &[Column]) -> (Option<usize>, Option<TimeUnit>) {
    let best = columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| time_unit_of(&c.name).map(|(rank, unit)| (rank, i, unit)))
        .min_by_key(|(rank, i, _)| (*rank, *i));
    match best {
        None => (None, None),
        Some((_, i, unit)) => {
            let col = &columns[i];
            // A "Time" column holding wall-clock text (RomRaider absolute
            // mode), or that clock as Excel re-saves it (`mm:ss.0`).
            let first = col.strings.first().filter(|_| col.text_cells > 0);
            let unit = if first.is_some_and(|s| parse_clock(s).is_some()) {
                TimeUnit::Clock
            } else if first.is_some_and(|s| parse_min_sec(s).is_some()) {
                TimeUnit::MinSec
            } else {
                unit
            };
            (Some(i), Some(unit))
        }
    }
}

fn fill_time(log: &mut Log, rows: usize) {
    let Some(tc) = log.time_column else {
        log.time = Times::Own(vec![f64::NAN; rows]);
        return;
    };
    let col = &log.columns[tc];
    match log.time_unit {
        Some(TimeUnit::Millis) => {
            log.time = Times::Own(
                col.values
                    .iter()
                    .map(|&v| if v.is_nan() { v } else { v / 1000.0 })
                    .collect(),
            );
            log.time_decimals = (col.decimals + 3).min(6);
        }
        Some(unit @ (TimeUnit::Clock | TimeUnit::MinSec)) => {
            // A clock restarts past midnight; minutes and seconds restart
            // every hour: a step back of more than half the period is one
            // more period.
            let (parse, period): (fn(&str) -> Option<f64>, f64) = if unit == TimeUnit::Clock {
                (parse_clock, 86_400.0)
            } else {
                (parse_min_sec, 3_600.0)
            };
            let mut first: Option<f64> = None;
            let mut wraps = 0.0;
            let mut prev = f64::NAN;
            let mut unread = 0usize;
            log.time = Times::Own(
                (0..rows)
                    .map(|r| {
                        let t = match col.cell(r) {
                            crate::column::Cell::Str(s) => parse(s),
                            _ => None,
                        };
                        match t {
                            None => {
                                unread += 1;
                                f64::NAN
                            }
                            Some(mut t) => {
                                if !prev.is_nan() && t + wraps < prev - period / 2.0 {
                                    wraps += period;
                                }
                                t += wraps;
                                prev = t;
                                let f = *first.get_or_insert(t);
                                // 3600.1 − 3600.0 is 0.1 to three places.
                                crate::format::round_to(t - f, 3)
                            }
                        }
                    })
                    .collect(),
            );
            log.time_decimals = if unit == TimeUnit::Clock {
                3
            } else {
                col.strings
                    .first()
                    .and_then(|s| s.split_once('.'))
                    .map_or(0, |(_, f)| f.len().min(3) as u8)
                    .max(1)
            };
            if unit == TimeUnit::MinSec {
                let name = col.name.clone();
                log.notes.push(format!(
                    "its time column `{name}` holds minutes:seconds (`mm:ss.0`, as Excel \
                     re-saves a clock), so hours are not in the file: times count on from the \
                     first row, adding an hour whenever the minutes wrap, and hold to a tenth \
                     of a second. A gap of 30 minutes or more between rows cannot be seen."
                ));
            }
            if unread > 0 {
                log.notes.push(format!(
                    "{unread} rows have no time the clock column can read; they are untimed"
                ));
            }
        }
        _ => {
            // Only numbers: the column is the time axis as it is.
            log.time = if col.special == 0 {
                Times::Column
            } else {
                Times::Own(
                    col.values
                        .iter()
                        .map(|&v| if v.is_nan() { f64::NAN } else { v })
                        .collect(),
                )
            };
            log.time_decimals = col.decimals.clamp(2, 6);
        }
    }
    // A clock that does not start near zero (OpenPort's seconds since the
    // logger powered up): time counts from the log's start, and the clock
    // stays queryable as a channel.
    if matches!(log.time_unit, Some(TimeUnit::Seconds | TimeUnit::Millis))
        && let Some(&t0) = log.time().iter().find(|t| !t.is_nan())
        && t0 > ABSOLUTE_AFTER_S
    {
        match &mut log.time {
            Times::Own(times) => times.iter_mut().for_each(|t| *t -= t0),
            Times::Column => {
                log.time = Times::Own(log.time().iter().map(|t| t - t0).collect());
            }
        }
        log.time_origin = t0;
    }
}

/// A first time stamp past this many seconds is a clock, not time since
/// the log started.
const ABSOLUTE_AFTER_S: f64 = 60.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Cell;

    thread_local! {
        /// Reads without [`uniform_rows`], for comparing the two paths.
        pub(super) static ROW_BY_ROW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// A log as text, with each cell's bits (the tagged NaNs of empty and
    /// text cells are not told apart by `Debug`).
    fn read_both_ways(data: &[u8], step: usize, need: &Need) -> [String; 2] {
        [true, false].map(|row_by_row| {
            ROW_BY_ROW.set(row_by_row);
            let log = read_in_steps(data, data.len() as u64, "x.csv", need, step);
            ROW_BY_ROW.set(false);
            let bits: Vec<Vec<u64>> = log
                .iter()
                .flat_map(|l| &l.columns)
                .map(|c| c.values.iter().map(|v| v.to_bits()).collect())
                .collect();
            format!("{log:?} {bits:?}")
        })
    }

    #[test]
    fn blocks_of_alike_rows_read_as_row_by_row() {
        // Rows mostly alike, with what ends a block of them anywhere: short
        // and long rows, blank lines, quotes, lone `\r`s, header lines, text
        // and empty cells, mixed line ends; long runs to fill whole blocks.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut below = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..120 {
            let ncols = 1 + below(5) as usize;
            let header = ["Time", "RPM", "Knock", "MAP", "AFR"][..ncols].join(",");
            let rare = [8, 40, 400, 4000][case % 4];
            let eol = if below(2) == 0 { "\r\n" } else { "\n" };
            let mut csv = format!("{header}{eol}");
            for _ in 0..below(2500) {
                let mut fields = ncols;
                match below(rare) {
                    0 => fields += 1,
                    1 => fields -= 1,
                    2 => csv.push_str(eol),
                    3 => csv.push_str(&format!("{header}\n")),
                    _ => {}
                }
                let cells: Vec<String> = (0..fields)
                    .map(|_| match below(rare.max(10)) {
                        0 => String::new(),
                        1 => "\"q,1\"".into(),
                        2 => "abc".into(),
                        3 => "Time".into(),
                        4 => "-".into(),
                        5 => "12345678901234567".into(),
                        _ => format!("{}.{}", below(10_000), below(100)),
                    })
                    .collect();
                csv.push_str(&cells.join(","));
                csv.push_str(match below(rare / 4 + 2) {
                    0 => ["\r", "\n", "\r\n"][below(3) as usize],
                    _ => eol,
                });
            }
            // All columns, and one in the middle (the fields after the
            // last converted one are counted, not looked at).
            for need in [Need::All, Need::named(["RPM"])] {
                for step in [61, 4096, csv.len() + 1] {
                    let [want, got] = read_both_ways(csv.as_bytes(), step, &need);
                    assert!(want == got, "case {case}, step {step}, {need:?}:\n{csv}");
                }
            }
        }
    }

    #[test]
    fn a_head_read_names_the_channels_without_reading_the_file() {
        let mut csv = String::from("Time,RPM,Engine Load (%)\n");
        for i in 0..20_000 {
            csv.push_str(&format!("{}.0,{},{}\n", i, 800 + i % 5000, i % 200));
        }
        let whole = parse(csv.as_bytes(), "drive.csv").unwrap();
        let head = read_head(csv.as_bytes(), "drive.csv").unwrap();
        let names = |l: &Log| l.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&head), names(&whole));
        assert!(
            head.rows() > 0 && head.rows() < whole.rows(),
            "{}",
            head.rows()
        );
        assert!(!head.columns[1].loaded && !head.columns[2].loaded);
        // A log shorter than one piece is read to its end.
        let short = read_head(&b"RPM;Load\n1000;20\n"[..], "x.csv").unwrap();
        assert_eq!(
            (names(&short), short.rows()),
            (vec!["RPM".into(), "Load".into()], 1)
        );
        assert!(read_head(&b""[..], "x.csv").is_err());
    }

    /// A fuzzed VCDS-like preamble (kept as a fuzz seed) whose detected
    /// header block names no channel: refused as having no header, whole
    /// and in pieces alike, instead of indexing an empty layout.
    #[test]
    fn a_header_block_without_channel_names_is_refused() {
        let input = include_bytes!("../../../fuzz/corpus-seed/csv_log/vcds-no-channel-names");
        let file = &input[1..];
        assert!(matches!(parse(file, "fuzz.csv"), Err(ReadError::NoHeader)));
        let source = Trickle {
            data: file,
            most: 1,
        };
        let pieces = read_columns(source, file.len() as u64, "fuzz.csv", &Need::All);
        assert!(matches!(pieces, Err(ReadError::NoHeader)));
    }

    #[test]
    fn plain_log_with_empty_and_text_cells() {
        let csv = "Time,RPM,AFR,Phase\n0.00,850,,idle\n0.01,900,14.7,idle\r\n0.02,-3.5,\"12,5\",\"pull \"\"1\"\"\"\n";
        let log = parse(csv.as_bytes(), "log.csv").unwrap();
        assert_eq!(log.rows(), 3);
        assert_eq!(log.format, Format::Plain);
        assert_eq!(log.time_column, Some(0));
        assert_eq!(log.channels(), vec!["RPM", "AFR", "Phase"]);
        let afr = log.column("AFR").unwrap();
        assert_eq!(afr.cell(0), Cell::Null);
        assert_eq!(afr.cell(1), Cell::Num(14.7));
        assert_eq!(afr.cell(2), Cell::Str("12,5"));
        assert_eq!(
            log.column("Phase").unwrap().cell(2),
            Cell::Str("pull \"1\"")
        );
        assert_eq!(log.column("RPM").unwrap().cell(2), Cell::Num(-3.5));
        assert!((log.sample_rate_hz().unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn romraider_semicolons_decimal_commas_and_header_changes() {
        let csv = "Time (msec);Engine Speed (rpm);Knock Sum* (count)\n0;850,5;0\n40;900;1\nTime (msec);Engine Speed (rpm);Boost (psi)\n80;950;3,25\n120;1000;4\n";
        let log = parse(csv.as_bytes(), "romraiderlog_20240601_102500.csv").unwrap();
        assert_eq!(log.delimiter, b';');
        assert_eq!(log.format, Format::RomRaider);
        assert_eq!(log.rows(), 4);
        assert_eq!(log.header_changes, 1);
        assert_eq!(log.time(), vec![0.0, 0.04, 0.08, 0.12]);
        let rpm = log.column("Engine Speed (rpm)").unwrap();
        assert_eq!(rpm.cell(0), Cell::Num(850.5));
        let knock = log.column("Knock Sum* (count)").unwrap();
        assert_eq!(knock.cell(1), Cell::Num(1.0));
        assert_eq!(knock.cell(2), Cell::Null);
        let boost = log.column("Boost (psi)").unwrap();
        assert_eq!(boost.cell(0), Cell::Null);
        assert_eq!(boost.cell(2), Cell::Num(3.25));
        assert!((log.sample_rate_hz().unwrap() - 25.0).abs() < 1e-9);
    }

    /// A time column of plain seconds is the time axis itself, not a
    /// copy; an empty cell, or a clock far from zero, makes times of
    /// their own, as before.
    #[test]
    fn seconds_from_zero_are_the_time_column_itself() {
        let plain = parse(b"Time,RPM\n0.00,800\n0.01,810\n0.02,820\n", "a.csv").unwrap();
        assert_eq!(plain.time(), [0.0, 0.01, 0.02]);
        assert_eq!(
            plain.time().as_ptr(),
            plain.column("Time").unwrap().values.as_ptr()
        );
        let columns_only: usize = plain.columns.iter().map(|c| c.values.len() * 8).sum();
        assert_eq!(plain.heap_bytes(), columns_only);

        // Its bounds are read off its ends; a gap's are counted.
        assert_eq!(plain.duration_s(), Some(0.02));
        assert!((plain.sample_rate_hz().unwrap() - 100.0).abs() < 1e-9);

        let gap = parse(b"Time,RPM\n0.00,800\n,810\n0.02,820\n", "a.csv").unwrap();
        assert!((gap.sample_rate_hz().unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(gap.time()[0], 0.0);
        assert!(gap.time()[1].is_nan());
        assert_ne!(
            gap.time().as_ptr(),
            gap.column("Time").unwrap().values.as_ptr()
        );

        let clock = parse(b"Time,RPM\n5000.5,800\n5000.6,810\n", "a.csv").unwrap();
        assert_eq!(clock.time_origin, 5000.5);
        assert_eq!(clock.time()[0], 0.0);
        assert!((clock.time()[1] - 0.1).abs() < 1e-9);
        assert_eq!(clock.column("Time").unwrap().cell(1), Cell::Num(5000.6));
    }

    #[test]
    fn romraider_clock_time() {
        let csv = "Time,Engine Speed (rpm)\n23:59:59.900,800\n23:59:59.950,810\n00:00:00.000,820\n";
        let log = parse(csv.as_bytes(), "romraiderlog_x.csv").unwrap();
        assert_eq!(log.time_unit, Some(TimeUnit::Clock));
        assert!((log.time()[2] - 0.1).abs() < 1e-9);
    }

    #[test]
    fn evoscan_uses_log_entry_seconds() {
        let csv = "LogID,LogEntryDate,LogEntryTime,LogEntrySeconds,LogNotes,01_LogMark,RPM\n1,2024-06-01,10:20:00.03125,0.03125,,0,843.8\n2,2024-06-01,10:20:00.11225,0.11225,pull 1,0,859.4\n";
        let log = parse(csv.as_bytes(), "EvoScanDataLog_2024.06.01_10.20.00.csv").unwrap();
        assert_eq!(log.format, Format::EvoScan);
        assert_eq!(log.time(), vec![0.03125, 0.11225]);
        assert_eq!(log.channels(), vec!["LogNotes", "01_LogMark", "RPM"]);
        assert_eq!(
            log.start_clock.as_deref(),
            Some("2024-06-01 10:20:00.03125")
        );
    }

    #[test]
    fn fast_numbers_are_correctly_rounded() {
        for s in [
            "0.1",
            "14.75",
            "123456.789012",
            "-0.0001",
            "7005",
            "0.30000000000000004",
        ] {
            let want: f64 = s.parse().unwrap();
            match plain_number(s.as_bytes()) {
                Some((v, _)) => assert_eq!(v, want, "{s}"),
                None => assert_eq!(general_number(s, b',', false).unwrap().0, want),
            }
        }
        assert_eq!(general_number("2,000.50", b',', true).unwrap().0, 2000.5);
        assert!(general_number("NaN", b',', false).is_none());
        assert!(general_number("inf", b',', false).is_none());
        assert_eq!(general_number("1e3", b',', false).unwrap().0, 1000.0);
    }

    #[test]
    fn short_numbers_match_the_byte_loop() {
        let alphabet = b"-.0123456789x";
        let mut field = Vec::new();
        let check = |field: &[u8]| {
            let mut word = [b'?'; 8];
            word[..field.len()].copy_from_slice(field);
            let swar = short_number(u64::from_le_bytes(word), field.len());
            let want = plain_number(field);
            assert_eq!(
                swar.map(|(v, d)| (v.to_bits(), d)),
                want.map(|(v, d)| (v.to_bits(), d)),
                "{}",
                String::from_utf8_lossy(field)
            );
        };
        // Every field of up to five bytes over the alphabet...
        for len in 1..=5u32 {
            for mut n in 0..alphabet.len().pow(len) {
                field.clear();
                for _ in 0..len {
                    field.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                check(&field);
            }
        }
        // ...and a spread of longer ones.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = 6 + (seed % 3) as usize;
            field.clear();
            for k in 0..len {
                let pick = (seed >> (8 + 5 * k)) as usize % 16;
                field.push(*alphabet.get(pick).unwrap_or(&b'7'));
            }
            check(&field);
        }
        for s in ["99999999", "-9999999", "1234.567", "-0.00001", "0", "-0"] {
            check(s.as_bytes());
        }
    }

    #[test]
    fn short_and_long_lines() {
        let csv = "time,a,b\n0,1\n1,2,3,4\n";
        let log = parse(csv.as_bytes(), "x.csv").unwrap();
        assert_eq!(log.rows(), 2);
        assert_eq!(log.column("b").unwrap().cell(0), Cell::Null);
        assert_eq!(log.column("b").unwrap().cell(1), Cell::Num(3.0));
        assert_eq!(log.ragged_lines, 1);
        // A quoted field past the header's width still holds its line
        // breaks: the line is one ragged row.
        let log = parse(b"t,a\n1,2,\"x\ny\"\n3,4\n", "x.csv").unwrap();
        assert_eq!(log.rows(), 2);
        assert_eq!(log.ragged_lines, 1);
        assert_eq!(log.column("t").unwrap().cell(1), Cell::Num(3.0));
        assert!(parse(b"", "x.csv").is_err());
        assert!(parse(b"1,2,3\n", "x.csv").is_err());
    }

    #[test]
    fn skipped_columns_keep_their_names_only() {
        let csv = "Time,RPM,AFR,Phase,Knock\n\
                   0.00,850,,idle,0\n\
                   0.01,900,14.7,\"a,b\",1\n\
                   Time,Knock,Boost,RPM\n\
                   0.02,2,3.5,1000\n\
                   0.03,3\n\
                   0.04,4,5,1200,99\n";
        let all = parse(csv.as_bytes(), "x.csv").unwrap();
        let some = parse_columns(csv.as_bytes(), "x.csv", &Need::named(["RPM", "Knock"])).unwrap();
        assert_eq!(some.rows(), all.rows());
        assert_eq!(some.time(), all.time());
        assert_eq!(some.ragged_lines, all.ragged_lines);
        assert_eq!(some.header_changes, all.header_changes);
        let names = |l: &Log| l.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&some), names(&all));
        for c in &some.columns {
            let full = all.column(&c.name).unwrap();
            if ["Time", "RPM", "Knock"].contains(&c.name.as_str()) {
                assert!(c.loaded, "{}", c.name);
                assert_eq!(
                    (0..all.rows()).map(|r| c.cell(r)).collect::<Vec<_>>(),
                    (0..all.rows()).map(|r| full.cell(r)).collect::<Vec<_>>(),
                    "{}",
                    c.name
                );
                assert_eq!(c.decimals, full.decimals);
            } else {
                assert!(!c.loaded && c.values.is_empty(), "{}", c.name);
            }
        }
        let need = Need::named(["AFR"]);
        assert!(!need.met_by(&some));
        let need = need.with_loaded(&some);
        assert!(need.wants("RPM") && need.wants("AFR") && !need.wants("Phase"));
        assert!(Need::named(["RPM"]).met_by(&some));
    }

    /// Everything a parse produced, cell by cell.
    fn dump(log: &Log) -> String {
        let mut out = format!(
            "{:?} {:?} {:?} {} {} {} {} {:?} {:?}\n",
            log.format,
            log.time_column,
            log.time_unit,
            log.time_decimals,
            log.delimiter,
            log.header_changes,
            log.ragged_lines,
            log.start_clock,
            log.time()
        );
        for c in &log.columns {
            let cells: Vec<_> = (0..c.values.len()).map(|r| c.cell(r)).collect();
            out += &format!(
                "{} {} {} {} {} {:?}\n",
                c.name, c.loaded, c.special, c.text_cells, c.decimals, cells
            );
        }
        out
    }

    /// Reading in pieces of any size gives what parsing the whole file does.
    fn assert_pieces_agree(csv: &[u8], name: &str, need: &Need) {
        let whole = parse_columns(csv, name, need).map(|l| dump(&l));
        for step in 1..=csv.len().min(96) + 1 {
            for most in [1, 7, usize::MAX] {
                let source = Trickle { data: csv, most };
                let pieces =
                    read_in_steps(source, csv.len() as u64, name, need, step).map(|l| dump(&l));
                assert_eq!(pieces, whole, "step {step}, reads of {most}");
            }
        }
    }

    #[test]
    fn reading_in_pieces_matches_parsing_whole() {
        let cases: [&[u8]; 10] = [
            b"Time,RPM\n0,1\nTime,RPM,Boost,AFR\n1,2,3,4\n2,3,4,5\nTime,AFR\n3,14.7\n",
            b"\xEF\xBB\xBFTime,RPM,AFR,Phase,Knock\r\nUnits,rpm,,,\r\n0.00,850,,idle,0\r\n0.01,900,14.7,\"a,b\",1\r\n",
            b"Time,RPM,Note\n0,1,\"two\nlines\"\n1,2,\"x\"\"y\"\n2,3,\"open to the end\n3,4,5\n",
            b"Time (msec);Engine Speed (rpm);Knock Sum* (count)\n0;850,5;0\n40;900;1\nTime (msec);Engine Speed (rpm);Boost (psi)\n80;950;3,25\n120;1000;4",
            b"\n\n  \ntime,a,b\n0,1\n1,2,3,4\n\n2,,\n",
            b"LogID,LogEntryDate,LogEntryTime,LogEntrySeconds,RPM\n1,2024-06-01,10:20:00.03125,0.03125,843.8\n2,2024-06-01,10:20:00.11225,0.11225,859.4\n",
            b"Time,x\n0,1e3\n0.5,-0\n1,12345678901234567\n1.5,\" 7\"\n2,.5\n2.5,5.\n3,1.2.3\n",
            b"1,2,3\n4,5,6\n",
            b"",
            b"Time,Clock\r00:00:01,1\r00:00:02,2\r",
        ];
        for csv in cases {
            for need in [Need::All, Need::named(["RPM", "Knock", "x", "b"])] {
                assert_pieces_agree(csv, "romraiderlog_x.csv", &need);
                assert_pieces_agree(csv, "log.csv", &need);
            }
        }
        // Long fields and lines across pieces and bitmap words.
        let mut long = String::from("Time,Text,Value\n");
        for r in 0..40 {
            long += &format!("{r},{},{}.25\n", "w".repeat(r * 7 % 150), r * 3);
        }
        assert_pieces_agree(long.as_bytes(), "long.csv", &Need::named(["Value"]));
    }

    fn utf16(text: &str, le: bool, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let units = bom
            .then_some(0xFEFFu16)
            .into_iter()
            .chain(text.encode_utf16());
        for u in units {
            out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        out
    }

    #[test]
    fn cobb_in_windows_1252_keeps_its_degree_signs() {
        let csv = b"Time (sec),Coolant Temp (\xB0 F),Boost Press. (psi),AP Info:[AP3-VLK-002 v1.7.3.1][USDM Volkswagen]\r\n0.000,115,-0.0,0\r\n0.008,116,1.5,0\r\n0.042,117,2.5,0\r\n";
        let log = parse(csv, "datalog1.csv").unwrap();
        assert_eq!(log.encoding, Encoding::Windows1252);
        assert_eq!(log.format, Format::Cobb);
        assert_eq!(log.channels(), ["Coolant Temp (° F)", "Boost Press. (psi)"]);
        assert_eq!(
            log.column("Coolant Temp (° F)").unwrap().cell(2),
            Cell::Num(117.0)
        );
        assert_eq!(log.rows(), 3);
        assert!((log.duration_s().unwrap() - 0.042).abs() < 1e-9);
        assert_pieces_agree(csv, "datalog1.csv", &Need::All);
    }

    #[test]
    fn utf16_and_bom_logs_read_as_utf8_ones() {
        let text = "Time,Temp (°C),RPM\n0.0,20,800\n0.5,21,810\n1.0,22,820\n";
        let want = dump(&parse(text.as_bytes(), "t.csv").unwrap());
        for (bytes, enc) in [
            (utf16(text, true, true), Encoding::Utf16Le),
            (utf16(text, false, true), Encoding::Utf16Be),
            (utf16(text, true, false), Encoding::Utf16Le),
            (
                [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat(),
                Encoding::Utf8Bom,
            ),
        ] {
            let log = parse(&bytes, "t.csv").unwrap();
            assert_eq!(log.encoding, enc);
            assert_eq!(dump(&log), want, "{enc:?}");
            assert_eq!(log.channels(), ["Temp (°C)", "RPM"]);
            assert_pieces_agree(&bytes, "t.csv", &Need::named(["RPM"]));
        }
    }

    #[test]
    fn me7logger_log_with_preamble_units_and_aliases() {
        let csv = "#####################\nLogfile created by ME7-Logger v1.20 (c) mki, 12/2010-07/2013\n\nUsed EcuDefinition file: 8D0907551M.ecu\nLogging with:    20 samples/second\nLog started at:  22.02.2014 17:47:01.046\n\nTimeStamp; nmot_w    ; dwkrz_0   ; fr_w\n  sec.ms ; 1/min     ; °KW       ; -\n\"TIME\";\"EngineSpeed\";\"IgnitionRetardCyl1\";\"\"\n    0.000; 800       ; 0         ; 0.978791\n    0.050; 810       ; -0.75     ; 1.0029\n    0.100; 820       ; 0         ; 1.01\n";
        let log = parse(csv.as_bytes(), "me7.csv").unwrap();
        assert_eq!(log.format, Format::Me7Logger);
        assert_eq!(log.rows(), 3);
        assert_eq!(
            log.channels(),
            ["EngineSpeed", "IgnitionRetardCyl1", "fr_w"]
        );
        assert_eq!(log.column("IgnitionRetardCyl1").unwrap().unit, "°KW");
        assert_eq!(
            log.column("IgnitionRetardCyl1").unwrap().cell(1),
            Cell::Num(-0.75)
        );
        assert_eq!(log.time(), vec![0.0, 0.05, 0.1]);
        assert!((log.sample_rate_hz().unwrap() - 20.0).abs() < 1e-9);
        assert!(log.start_date.is_some());
        assert_pieces_agree(csv.as_bytes(), "me7.csv", &Need::All);
    }

    #[test]
    fn vcds_log_with_groups() {
        let csv = "Tuesday,23,December,2025,13:30:13:40001-VCID:2A066900CC76ED4AF07-807E,VCDS Version: Release 25.3.2 (x64),Data version: 20250822 DS365.0\n05L 906 022 F,ADVMB,R4 2.0l TDI   H30 0987,\n,,G004,F0,G008,F0,G016,F0,\n\nMarker,TIME,Loc. IDE00021,TIME,Loc. IDE00075,TIME,Loc. IDE00100\n,STAMP,Engine speed,STAMP,Vehicle speed,STAMP,Engine torque\n,, /min,, km/h,, Nm\n,0.44,0,0.47,0,0.51,-500.0\n,0.96,800,0.98,0,1.02,-500.0\n,1.47,900,1.50,5,1.54,-450.5\n";
        let log = parse(csv.as_bytes(), "LOG-01-IDE00149.CSV").unwrap();
        assert_eq!(log.format, Format::Vcds);
        assert_eq!(
            log.channels(),
            ["Engine speed", "Vehicle speed", "Engine torque"]
        );
        assert_eq!(log.rows(), 3);
        assert_eq!(log.column("Engine speed").unwrap().unit, "/min");
        assert_eq!(
            log.column("Engine torque").unwrap().cell(2),
            Cell::Num(-450.5)
        );
        assert_eq!(log.time(), vec![0.44, 0.96, 1.47]);
        assert!((log.duration_s().unwrap() - 1.03).abs() < 1e-9);
        let d = crate::logs::LogDate::local(log.start_date.unwrap());
        assert_eq!(d.display(), "2025-12-23 13:30");
    }

    #[test]
    fn logworks_and_zeitronix_preambles_and_units_rows() {
        let lw = "Session: Session 8,,,,,\r\ntime,LC1_O2WB,RPM,EGT,Oil_Press,Boost\r\n(sec),(AFR),(RPM),(degC),(PSI),(PSI)\r\n0.00000,14.74,1173,440,62.0,-7.48\r\n0.08192,14.80,1195,440,62.9,-7.48\r\n0.16384,14.77,1210,440,63.7,-7.52\r\n";
        let log = parse(lw.as_bytes(), "logworks.csv").unwrap();
        assert_eq!(log.format, Format::LogWorks);
        assert_eq!(log.rows(), 3);
        assert_eq!(
            log.channels(),
            ["LC1_O2WB", "RPM", "EGT", "Oil_Press", "Boost"]
        );
        assert_eq!(log.column("Boost").unwrap().unit, "(PSI)");
        assert!((log.sample_rate_hz().unwrap() - 12.207).abs() < 0.001);
        let zt = "Zeitronix ZT-2 Data Log\nFilename:C:\\Program Files\\Zeitronix\\run3.zto\nDate: 2012-05-06 10:11:12\n\nTime,RPM,AFR,Boost,EGT\nsec,rpm,AFR,psi,C\n0.00,1000,14.7,-5.0,400\n0.05,1100,14.6,-4.0,410\n";
        let log = parse(zt.as_bytes(), "run3.csv").unwrap();
        assert_eq!(log.format, Format::Zeitronix);
        assert_eq!(log.rows(), 2);
        assert_eq!(log.channels(), ["RPM", "AFR", "Boost", "EGT"]);
        let d = crate::logs::LogDate::local(log.start_date.unwrap());
        assert_eq!(d.display(), "2012-05-06 10:11");
    }

    #[test]
    fn absolute_clocks_count_from_the_start() {
        let csv = "sample,time,RPM\n0,102183.500,963.75\n1,102183.750,1605\n2,102184.000,1634.25\n";
        let log = parse(csv.as_bytes(), "log0182.csv").unwrap();
        assert_eq!(log.format, Format::OpenPort);
        assert_eq!(log.time(), vec![0.0, 0.25, 0.5]);
        assert_eq!(log.time_origin, 102183.5);
        assert_eq!(log.channels(), ["sample", "time", "RPM"]);
        assert!((log.sample_rate_hz().unwrap() - 4.0).abs() < 1e-9);
    }

    #[test]
    fn tabs_with_decimal_commas_and_files_that_are_not_logs() {
        let log = parse(
            b"Zeit\tDrehzahl\nZeit (s)\t1/min\n0,0\t800,5\n0,1\t810\n",
            "x.csv",
        );
        // A unit-less "Zeit" is not a known time name: the units row says seconds.
        let log = log.unwrap();
        assert_eq!(log.rows(), 2);
        assert_eq!(log.column("Drehzahl").unwrap().cell(0), Cell::Num(800.5));
        let e = parse(
            b"Dear reader,\nthis, is not a log\nregards,\nme\n",
            "letter.csv",
        )
        .unwrap_err();
        assert!(matches!(e, ReadError::NotALog(_)), "{e}");
        let e = parse(b"\x00\x01\x02,\x03\n\x00,\x00\n", "bin.csv").unwrap_err();
        assert!(e.to_string().contains("binary"), "{e}");
    }

    #[test]
    fn a_million_columns_are_refused_without_reading_them() {
        let mut csv = String::from("t");
        for k in 0..1_000_000 {
            csv.push_str(&format!(",c{k}"));
        }
        csv.push_str("\n0");
        let Err(e) = parse(csv.as_bytes(), "wide.csv") else {
            panic!("not refused")
        };
        assert!(
            e.to_string().contains("columns") && e.to_string().contains("cut"),
            "{e}"
        );
        // Names long enough that the head holds few of them: refused when
        // the header line is complete, before it is split.
        let mut csv = String::from("t");
        for k in 0..40_000 {
            csv.push_str(&format!(",{}{k}", "n".repeat(20)));
        }
        csv.push_str("\n0\n");
        let Err(e) = parse(csv.as_bytes(), "wide.csv") else {
            panic!("not refused")
        };
        assert!(e.to_string().contains("40001 columns"), "{e}");
    }

    #[test]
    fn an_unclosed_quote_costs_linear_time() {
        let mut csv = b"Time,Note\n0,\"open".to_vec();
        csv.extend(std::iter::repeat_n(b"1,2\n".as_slice(), 200_000).flatten());
        let t = std::time::Instant::now();
        let log = read_in_steps(&csv[..], csv.len() as u64, "x.csv", &Need::All, 4096).unwrap();
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert_eq!(log.rows(), 1);
        assert_eq!(dump(&log), dump(&parse(&csv, "x.csv").unwrap()));
    }

    #[test]
    fn wide_headers_of_repeated_names_are_linear() {
        // Found by fuzzing: renaming duplicates was cubic in the width.
        let mut csv = String::from("Time");
        for _ in 0..20_000 {
            csv.push_str(",x");
        }
        csv.push_str("\n0");
        csv.push_str(&",1".repeat(20_000));
        csv.push('\n');
        let t = std::time::Instant::now();
        let log = parse(csv.as_bytes(), "wide.csv").unwrap();
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert_eq!(log.columns.len(), 20_001);
        assert_eq!(log.columns[1].name, "x");
        assert_eq!(log.columns[2].name, "x #2");
        assert_eq!(log.columns[20_000].name, "x #20000");
        let dup = parse(b"t,a,a,a #2\n0,1,2,3\n", "d.csv").unwrap();
        let names: Vec<&str> = dup.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["t", "a", "a #2", "a #2 #2"]);
    }

    /// Issue 38 item 2: binary logs come through the same entry points as
    /// CSV ones, whole or in pieces of any size, with `need` honoured.
    #[test]
    fn binary_logs_read_through_the_reader_in_any_pieces() {
        let fields = [(7u8, "Time", "s", 1.0f32), (2, "RPM", "rpm", 1.0)];
        let records: Vec<Vec<u8>> = (0..50u16)
            .map(|k| {
                let mut r = (f32::from(k) * 0.05).to_be_bytes().to_vec();
                r.extend((800 + k * 100).to_be_bytes());
                r
            })
            .collect();
        let file = crate::binary::mlg::tests::mlg(2, &fields, &records, &[(10, "pull")]);
        let whole = parse(&file, "renamed.bin").unwrap();
        assert_eq!((whole.format, whole.rows()), (Format::Mlg, 50));
        assert_eq!(whole.channels(), ["RPM", "Marker"]);
        for most in [1, 7, 4096] {
            let source = Trickle { data: &file, most };
            let log = read_columns(source, file.len() as u64, "x.mlg", &Need::All).unwrap();
            assert_eq!(dump(&log), dump(&whole), "reads of {most}");
        }
        let head = read_head(&file[..], "x.mlg").unwrap();
        assert_eq!(head.rows(), 50);
        assert!(!head.column("RPM").unwrap().loaded);
        // An Emerald .lg1 takes its .lg2 as the companion.
        let lg1 = crate::binary::emerald::tests::lg1(4);
        let lg2 = crate::binary::emerald::tests::LG2;
        let log = read_log(&lg1[..], 96, "EM Log.lg1", &Need::All, Some(lg2)).unwrap();
        assert_eq!(log.channels()[0], "id19");
        // What the old reader said of binary files is gone.
        for e in [parse(&file, "x.mlg"), parse(&lg1, "x.lg1")] {
            assert!(e.is_ok(), "{:?}", e.err());
        }
    }

    /// Issue 38 item 4: a RomRaider clock column re-saved by Excel as
    /// `mm:ss.0` gives durations and rates (across an hour's wrap), with a
    /// note saying what the time axis cannot know.
    #[test]
    fn an_excel_mm_ss_time_column_is_timed() {
        let mut csv = String::from("Time,Engine Speed (rpm),Throttle Opening Angle (%)\n");
        // 59:58.0 → 00:02.0 crosses the hour: 41 rows at 10 Hz = 4 s.
        for k in 0..41 {
            let t = 3598.0 + f64::from(k) * 0.1;
            let t = t % 3600.0;
            csv += &format!(
                "{:02}:{:04.1},{},{}\n",
                (t / 60.0).floor(),
                t % 60.0,
                800 + k * 10,
                k
            );
        }
        assert!(
            csv.contains("\n59:58.0,") && csv.contains("\n00:02.0,"),
            "{csv}"
        );
        let log = parse(csv.as_bytes(), "romraiderlog_20241016_113910.csv").unwrap();
        assert_eq!(log.rows(), 41);
        assert_eq!(log.time_unit, Some(TimeUnit::MinSec));
        assert!(
            (log.duration_s().unwrap() - 4.0).abs() < 1e-9,
            "{:?}",
            log.time()
        );
        assert!((log.sample_rate_hz().unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(log.time()[21], 2.1);
        assert!(log.notes[0].contains("mm:ss.0"), "{:?}", log.notes);
        assert_eq!(log.channels()[0], "Engine Speed (rpm)");
        assert_eq!(parse_min_sec("59:58.3"), Some(3598.3));
        for bad in ["1:2:3", "5:7", "60:00.0", "a:00", "12:3x"] {
            assert_eq!(parse_min_sec(bad), None, "{bad}");
        }
    }

    /// Issue 38 items 2 and 5: an ECUMaster export (`TIME`, slash paths)
    /// is named, its empty cells hold the value above; BlueDriver's UTF-16
    /// title lines and day are read.
    #[test]
    fn ecumaster_holds_values_and_bluedriver_states_its_day() {
        let csv = "TIME;engine/rpm;sensors/gear;ignition/angle\r\n0.000;1113;;10.900\r\n0.020;1116;;\r\n0.040;1122;3;10.500\r\n0.060;;;\r\n";
        let log = parse(csv.as_bytes(), "2025_1218_1904.csv").unwrap();
        assert_eq!(log.format, Format::EcuMaster);
        let gear = log.column("sensors/gear").unwrap();
        assert_eq!(
            (0..4).map(|r| gear.cell(r)).collect::<Vec<_>>(),
            [Cell::Null, Cell::Null, Cell::Num(3.0), Cell::Num(3.0)]
        );
        assert_eq!(log.column("engine/rpm").unwrap().cell(3), Cell::Num(1122.0));
        assert_eq!(gear.special, 2);
        assert!(log.notes[0].contains("previous value"), "{:?}", log.notes);
        let text = "BlueDriver Data Log\nAug 17, 2025\nTime(s), O2 Bank 1 - Sensor 2 (V), Trim (%)\n0.00, 0.301, 0.8\n0.40, 0.150, 0.8\n";
        let log = parse(
            &utf16(text, true, true),
            "SBM_Aug_17__2025_08_45_PM_LiveData.csv",
        )
        .unwrap();
        assert_eq!(log.format, Format::BlueDriver);
        assert_eq!(log.channels(), ["O2 Bank 1 - Sensor 2 (V)", "Trim (%)"]);
        assert_eq!(log.start_date_kind, DateKind::Day);
        let day = crate::logs::LogDate {
            day_only: true,
            ..crate::logs::LogDate::local(log.start_date.unwrap())
        };
        assert_eq!(day.display(), "2025-08-17");
    }
}
