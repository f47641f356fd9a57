//! Markdown tables with aligned columns.

/// A markdown table built row by row and rendered with padded columns, the
/// layout the ECU and log specs show.
#[derive(Debug, Clone)]
pub struct MarkdownTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl MarkdownTable {
    /// A table with the given column headers.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; missing cells render empty and extra cells are kept.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Number of body rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the table has no body rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders the table; `|` inside a cell is escaped so columns stay intact.
    pub fn render(&self) -> String {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let escape = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let header: Vec<String> = (0..columns)
            .map(|i| escape(self.header.get(i).map_or("", String::as_str)))
            .collect();
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                (0..columns)
                    .map(|i| escape(r.get(i).map_or("", String::as_str)))
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                body.iter()
                    .map(|r| r[i].chars().count())
                    .chain([header[i].chars().count(), 3])
                    .max()
                    .unwrap_or(3)
            })
            .collect();
        let mut out = String::new();
        push_row(&mut out, &header, &widths);
        out.push('|');
        for w in &widths {
            out.push_str(&"-".repeat(w + 2));
            out.push('|');
        }
        out.push('\n');
        for row in &body {
            push_row(&mut out, row, &widths);
        }
        out
    }
}

fn push_row(out: &mut String, cells: &[String], widths: &[usize]) {
    out.push('|');
    for (cell, width) in cells.iter().zip(widths) {
        out.push(' ');
        out.push_str(cell);
        out.extend(std::iter::repeat_n(' ', width - cell.chars().count()));
        out.push_str(" |");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned_columns() {
        let mut t = MarkdownTable::new(["Y\\X", "500", "1000"]);
        t.row(["0.10", "1.23", "1.45"]);
        t.row(["0.20", "2.34", "a|b"]);
        assert_eq!(
            t.render(),
            "| Y\\X  | 500  | 1000 |\n|------|------|------|\n| 0.10 | 1.23 | 1.45 |\n| 0.20 | 2.34 | a\\|b |\n"
        );
    }
}
