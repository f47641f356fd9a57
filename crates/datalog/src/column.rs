//! Columnar storage of a parsed log.
//!
//! Every column is one `Vec<f64>`. Numbers parsed from the CSV are never NaN
//! (the text `NaN` stays text), so NaN values are free to tag the other kinds
//! of cell: an empty cell, or an index into the column's string table. The
//! filter's fast path can then read numbers straight from the slice and send
//! only the rare tagged rows to the general interpreter.

const TAG: u64 = 0x7FFA_0000_0000_0000;
const NULL_BITS: u64 = TAG | 0xFFFF_FFFF;

/// The value stored for an empty cell.
pub fn null() -> f64 {
    f64::from_bits(NULL_BITS)
}

fn string_ref(index: u32) -> f64 {
    f64::from_bits(TAG | index as u64)
}

/// One cell as the filter language sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// A number as parsed (never NaN: the text `NaN` is a `Str`).
    Num(f64),
    /// An empty cell (filtrex's `null`).
    Null,
    /// Any cell that is not a number, as written in the log.
    Str(&'a str),
}

/// One named column of a log.
#[derive(Debug, Clone, Default)]
pub struct Column {
    /// The header's name for the column, exactly as written (filters and
    /// `channels` match it case-sensitively).
    pub name: String,
    /// One value per row (numbers, or tagged NaNs for empty and text cells).
    pub values: Vec<f64>,
    /// Text cells, referenced from `values`.
    pub strings: Vec<String>,
    /// Number of cells that are not numbers (empty or text).
    pub special: usize,
    /// Number of text cells.
    pub text_cells: usize,
    /// Most fraction digits seen in a numeric cell: how numbers are printed back.
    pub decimals: u8,
    /// False when the reader skipped this column's cells (see
    /// [`crate::reader::Need`]): only the name is known, `values` is empty.
    pub loaded: bool,
    /// Not a channel (COBB's `AP Info`, VCDS's markers): kept, not listed.
    pub hidden: bool,
    /// The units row's text for this column, when the log has one.
    pub unit: String,
}

impl Column {
    /// An empty, loaded column; the reader fills it row by row.
    pub(crate) fn new(name: impl Into<String>) -> Self {
        Column {
            name: name.into(),
            loaded: true,
            ..Default::default()
        }
    }

    /// Appends a number parsed with `decimals` fraction digits.
    #[inline]
    pub(crate) fn push_num(&mut self, v: f64, decimals: u8) {
        self.values.push(v);
        if decimals > self.decimals {
            self.decimals = decimals;
        }
    }

    /// Appends an empty cell.
    pub(crate) fn push_null(&mut self) {
        self.values.push(null());
        self.special += 1;
    }

    /// Appends `n` empty cells.
    pub(crate) fn push_nulls(&mut self, n: usize) {
        self.values.resize(self.values.len() + n, null());
        self.special += n;
    }

    /// Appends a text cell (anything that did not parse as a number).
    pub(crate) fn push_text(&mut self, s: &str) {
        // Text columns usually repeat a few labels: reuse the last equal one.
        let index = match self.strings.iter().rposition(|x| x == s) {
            Some(i) if self.strings.len() - i <= 64 => i,
            _ => {
                self.strings.push(s.to_string());
                self.strings.len() - 1
            }
        };
        self.values.push(string_ref(index as u32));
        self.special += 1;
        self.text_cells += 1;
    }

    /// Fills each empty cell with the cell above it (loggers that write a
    /// value only when it changes); returns how many cells were filled.
    /// Cells before the first value stay empty.
    pub(crate) fn hold_empty(&mut self) -> usize {
        let mut filled = 0;
        let mut last: Option<f64> = None;
        for v in &mut self.values {
            if v.to_bits() == NULL_BITS {
                if let Some(prev) = last {
                    *v = prev;
                    filled += 1;
                }
            } else {
                last = Some(*v);
            }
        }
        // A filled cell is a copy of the one above: a number stops being
        // special, a text cell stays one.
        let text_filled = self
            .values
            .iter()
            .filter(|v| v.is_nan() && v.to_bits() != NULL_BITS)
            .count()
            .saturating_sub(self.text_cells);
        self.special -= filled - text_filled;
        self.text_cells += text_filled;
        filled
    }

    /// The cell at `row` (panics past the last row, like indexing).
    #[inline]
    pub fn cell(&self, row: usize) -> Cell<'_> {
        self.cell_bits(self.values[row])
    }

    /// Decodes a stored value.
    #[inline]
    pub fn cell_bits(&self, v: f64) -> Cell<'_> {
        if !v.is_nan() {
            return Cell::Num(v);
        }
        let bits = v.to_bits();
        if bits == NULL_BITS || bits & 0xFFFF_FFFF_0000_0000 != TAG {
            return Cell::Null;
        }
        match self.strings.get((bits & 0xFFFF_FFFF) as usize) {
            Some(s) => Cell::Str(s),
            None => Cell::Null,
        }
    }

    /// The number in a row, if the cell holds one.
    #[inline]
    pub fn number(&self, row: usize) -> Option<f64> {
        let v = self.values[row];
        (!v.is_nan()).then_some(v)
    }

    /// True when the column holds no number at all.
    pub fn is_textual(&self) -> bool {
        self.special == self.values.len() && self.text_cells > 0
    }

    /// Renders a cell for a markdown table.
    pub fn display(&self, row: usize) -> String {
        match self.cell(row) {
            Cell::Num(v) => format_number(v, self.decimals),
            Cell::Null => String::new(),
            Cell::Str(s) => s.to_string(),
        }
    }
}

/// Formats a number with a fixed number of decimals, without `-0`.
pub fn format_number(v: f64, decimals: u8) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{:.*}", decimals as usize, v);
    if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
        s[1..].to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip() {
        let mut c = Column::new("Phase");
        c.push_num(1.5, 1);
        c.push_null();
        c.push_text("idle");
        c.push_text("pull1");
        c.push_text("idle");
        assert_eq!(c.cell(0), Cell::Num(1.5));
        assert_eq!(c.cell(1), Cell::Null);
        assert_eq!(c.cell(2), Cell::Str("idle"));
        assert_eq!(c.cell(3), Cell::Str("pull1"));
        assert_eq!(c.cell(4), Cell::Str("idle"));
        assert_eq!(c.strings.len(), 2);
        assert_eq!(c.special, 4);
        assert_eq!(c.display(0), "1.5");
        assert_eq!(format_number(-0.0001, 2), "0.00");
    }

    #[test]
    fn empty_cells_hold_the_value_above() {
        let mut c = Column::new("Gear");
        c.push_null();
        c.push_num(1.0, 0);
        c.push_null();
        c.push_text("N");
        c.push_null();
        assert_eq!(c.hold_empty(), 2);
        let cells: Vec<_> = (0..5).map(|r| c.cell(r)).collect();
        assert_eq!(
            cells,
            [
                Cell::Null,
                Cell::Num(1.0),
                Cell::Num(1.0),
                Cell::Str("N"),
                Cell::Str("N")
            ]
        );
        assert_eq!((c.special, c.text_cells), (3, 2));
    }
}
