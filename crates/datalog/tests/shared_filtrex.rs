//! Differential test against filtrex 3.1.0: every case of
//! shared/fixtures/filtrex/cases.jsonl, evaluated on the fixture log.
//! Quirk-tagged cases follow the decisions in the README's filter-language section.

use datalog::column::Cell;
use datalog::filter::Filter;
use datalog::reader::{self, Log};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    if dir.join("filtrex/cases.jsonl").exists() {
        Some(dir)
    } else {
        eprintln!("shared fixtures not found at {}; skipping", dir.display());
        None
    }
}

fn rows_where(log: &Log, col: &str, pred: impl Fn(Cell) -> bool) -> Vec<usize> {
    let c = log.column(col).unwrap();
    (0..log.rows()).filter(|&r| pred(c.cell(r))).collect()
}

/// What a quirk case must give under our documented decisions.
enum Expect {
    Rows(Vec<usize>),
    Rejected,
    AsFiltrex,
}

fn quirk_expectation(expr: &str, filtrex_rows: &[usize], log: &Log) -> Expect {
    let afr_empty = rows_where(log, "AFR", |c| c == Cell::Null);
    let num = |c: Cell| match c {
        Cell::Num(x) => x,
        _ => f64::NAN,
    };
    match expr {
        // legacy-octal: numbers are always decimal.
        "RPM > 07000.5" => Expect::Rows(rows_where(log, "RPM", |c| num(c) > 7000.5)),
        "010.5 > 1" => Expect::Rows((0..log.rows()).collect()),
        // keyword-swallows-next-char: `in(` and `if(` are accepted.
        "RPM in(850)" => Expect::Rows(rows_where(log, "RPM", |c| num(c) == 850.0)),
        "if(Knock > 0)then 1 else 0" => Expect::Rows(rows_where(log, "Knock", |c| num(c) > 0.0)),
        // js-function-args: arity is checked, arguments must be numbers.
        "max() < 0" | "min() > 0" | "max()" | "round(AFR, 3) > 11" => Expect::Rejected,
        "floor(\"7\") == 7" => Expect::Rows(vec![]),
        "abs(AFR) < 1" | "max(Knock, AFR) > 0" => Expect::Rows(
            filtrex_rows
                .iter()
                .copied()
                .filter(|r| !afr_empty.contains(r))
                .collect(),
        ),
        // deprecated-syntax: `%` and `? :` work as in filtrex.
        _ => Expect::AsFiltrex,
    }
}

#[test]
fn shared_filtrex_cases_match() {
    let Some(dir) = fixtures() else { return };
    let data = std::fs::read(dir.join("logs/log-2024-06-01T10-15-00-000Z.csv")).unwrap();
    let log = reader::parse(&data, "log-2024-06-01T10-15-00-000Z.csv").unwrap();
    assert_eq!(log.rows(), 2000);
    let names: Vec<&str> = log.columns.iter().map(|c| c.name.as_str()).collect();
    let text = std::fs::read_to_string(dir.join("filtrex/cases.jsonl")).unwrap();
    let (mut total, mut quirks) = (0, 0);
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let expr = case["expr"].as_str().unwrap();
        let filtrex_rejects = !case["compile_error"].is_null();
        let filtrex_rows: Vec<usize> = case["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let expect = if case["quirk"].is_null() {
            if filtrex_rejects {
                Expect::Rejected
            } else {
                Expect::Rows(filtrex_rows.clone())
            }
        } else {
            quirks += 1;
            match quirk_expectation(expr, &filtrex_rows, &log) {
                Expect::AsFiltrex if filtrex_rejects => Expect::Rejected,
                Expect::AsFiltrex => Expect::Rows(filtrex_rows.clone()),
                e => e,
            }
        };
        total += 1;
        let got = Filter::compile(expr).map(|f| {
            let bound = f.bind(&log.columns);
            let mut rows = Vec::new();
            bound.scan(0..log.rows(), |r| rows.push(r));
            (f, rows)
        });
        match (&expect, got) {
            (Expect::Rejected, Err(_)) => {}
            (Expect::Rejected, Ok((_, rows))) => failures.push(format!(
                "{expr:?}: expected a compile error, matched {} rows",
                rows.len()
            )),
            (Expect::Rows(_), Err(e)) => failures.push(format!("{expr:?}: rejected: {e}")),
            (Expect::Rows(want), Ok((f, rows))) => {
                if &rows != want {
                    failures.push(format!(
                        "{expr:?}: matched {} rows, expected {} (first differences: {:?})",
                        rows.len(),
                        want.len(),
                        rows.iter()
                            .filter(|r| !want.contains(r))
                            .chain(want.iter().filter(|r| !rows.contains(r)))
                            .take(5)
                            .collect::<Vec<_>>()
                    ));
                }
                // The tool's up-front channel check rejects exactly the
                // names filtrex reports as unknown (presence tests aside).
                let unknown = case["runtime_error_kinds"]
                    .get("UnknownPropertyError")
                    .is_some();
                let rejected = f.check_channels(&names).is_err();
                if rejected && !unknown {
                    failures.push(format!("{expr:?}: channel check rejected a known name"));
                }
                if unknown && !rejected && !expr.contains("exists(") {
                    failures.push(format!("{expr:?}: channel check missed an unknown name"));
                }
            }
            (Expect::AsFiltrex, _) => unreachable!(),
        }
    }
    assert!(total >= 278, "only {total} cases read");
    eprintln!(
        "filtrex cases: {total} ({quirks} quirk-tagged), failures: {}",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
