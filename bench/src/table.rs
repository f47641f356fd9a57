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

/// One figure an issue names, printed after the main table with what it
/// is compared with and its target.
pub struct Target {
    pub figure: Figure,
    pub value: String,
    pub target: String,
    pub met: Option<bool>,
}

/// What a target row names: the figure, what was measured, and what it
/// is compared with.
pub struct Figure {
    pub name: String,
    pub measured: String,
    pub reference: String,
}

impl Figure {
    pub fn new(
        name: impl Into<String>,
        measured: impl Into<String>,
        reference: impl Into<String>,
    ) -> Self {
        Figure {
            name: name.into(),
            measured: measured.into(),
            reference: reference.into(),
        }
    }
}

#[derive(Default)]
pub struct Table {
    rows: Vec<Row>,
    targets: Vec<Target>,
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
        let (target, verdict) = verdict(goal, value);
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

    /// A figure with a target (the speed issue's list): `value` (with
    /// `unit`) is what is compared with `goal`; `measured` and `reference`
    /// say what it was computed from, in words and numbers.
    pub fn target(&mut self, figure: Figure, value: f64, digits: usize, unit: &str, goal: Goal) {
        let (target, met) = verdict(goal, value);
        self.targets.push(Target {
            figure,
            value: format!("{value:.digits$}{unit}"),
            target: format!("{target}{unit}"),
            met,
        });
    }

    /// A figure with a target that could not be measured in this run.
    pub fn target_missing(&mut self, figure: impl Into<String>, target: &str, why: &str) {
        self.targets.push(Target {
            figure: Figure::new(figure, why, ""),
            value: "n/a".into(),
            target: target.into(),
            met: None,
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
        if self.targets.is_empty() {
            return;
        }
        println!();
        println!("Targets, each beside what it is measured against:");
        println!();
        println!("| figure | measured | reference | value | target | met |");
        println!("|---|---|---|---:|---|---|");
        for t in &self.targets {
            let met = match t.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "n/a",
            };
            println!(
                "| {} | {} | {} | {} | {} | {met} |",
                t.figure.name,
                t.figure.measured.replace('|', "/"),
                t.figure.reference.replace('|', "/"),
                t.value,
                t.target
            );
        }
    }
}

/// The target's text and whether `value` meets it.
fn verdict(goal: Goal, value: f64) -> (String, Option<bool>) {
    match goal {
        Goal::None => (String::new(), None),
        Goal::AtMost(t) => (format!("≤ {}", trim(t)), Some(value <= t)),
        Goal::Below(t) => (format!("< {}", trim(t)), Some(value < t)),
        Goal::AtLeast(t) => (format!("≥ {}", trim(t)), Some(value >= t)),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}
