//! The one markdown table `make bench` prints.

/// How a measured value compares with its target.
#[derive(Clone, Copy)]
pub enum Goal {
    /// No target.
    None,
    /// At most this value.
    AtMost(f64),
    /// Below this value.
    Below(f64),
    /// At least this value.
    AtLeast(f64),
}

pub struct Row {
    pub benchmark: String,
    pub value: String,
    pub unit: &'static str,
    pub target: String,
    pub note: String,
}

#[derive(Default)]
pub struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// A measured row; the note says whether it meets `goal`.
    pub fn add(
        &mut self,
        benchmark: impl Into<String>,
        value: f64,
        digits: usize,
        unit: &'static str,
        goal: Goal,
        note: impl Into<String>,
    ) {
        let (target, verdict) = match goal {
            Goal::None => (String::new(), None),
            Goal::AtMost(t) => (format!("≤ {}", trim(t)), Some(value <= t)),
            Goal::Below(t) => (format!("< {}", trim(t)), Some(value < t)),
            Goal::AtLeast(t) => (format!("≥ {}", trim(t)), Some(value >= t)),
        };
        let mut note = note.into();
        if verdict == Some(false) {
            note = if note.is_empty() {
                "MISSED target".into()
            } else {
                format!("MISSED target; {note}")
            };
        }
        self.rows.push(Row {
            benchmark: benchmark.into(),
            value: format!("{value:.digits$}"),
            unit,
            target,
            note,
        });
    }

    /// A row without a measured value (skipped, unavailable), with the reason.
    pub fn skip(
        &mut self,
        benchmark: impl Into<String>,
        unit: &'static str,
        target: &str,
        why: impl Into<String>,
    ) {
        self.rows.push(Row {
            benchmark: benchmark.into(),
            value: "n/a".into(),
            unit,
            target: target.into(),
            note: why.into(),
        });
    }

    pub fn print(&self) {
        println!("| benchmark | value | unit | target | note |");
        println!("|---|---:|---|---|---|");
        for r in &self.rows {
            println!(
                "| {} | {} | {} | {} | {} |",
                r.benchmark,
                r.value,
                r.unit,
                r.target,
                r.note.replace('|', "/")
            );
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}
