//! list_logs / query_logs / plot_log over the three fixture log formats in
//! shared/fixtures/logs (plain 100 Hz, EvoScan ~12 Hz, RomRaider 25 Hz).

use log_query::logs::Cache;
use log_query::query::{QueryArgs, list_logs, query_logs};
use std::path::{Path, PathBuf};

fn logs_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/logs");
    if dir.join("log-2024-06-01T10-15-00-000Z.csv").exists() {
        Some(dir)
    } else {
        eprintln!("shared fixtures not found at {}; skipping", dir.display());
        None
    }
}

fn go() -> impl FnMut(u64, u64, &str) -> bool {
    |_, _, _| true
}

fn query(dir: &Path, cache: &mut Cache, filter: &str, file: Option<&str>) -> String {
    let args = QueryArgs {
        filter: filter.into(),
        file: file.map(String::from),
        ..Default::default()
    };
    query_logs(dir, cache, &args, &mut go()).unwrap_or_else(|e| panic!("{filter}: {e}"))
}

fn field<'a>(doc: &'a str, key: &str) -> &'a str {
    doc.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in\n{doc}"))
}

#[test]
fn shared_list_logs_orders_and_describes_the_three_formats() {
    let Some(dir) = logs_dir() else { return };
    let mut cache = Cache::default();
    let out = list_logs(&dir, &mut cache, &mut go()).unwrap();
    assert_eq!(field(&out, "total_files"), "3");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    let cells = |l: &str| {
        l.split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let rr = cells(rows[0]);
    let evo = cells(rows[1]);
    let plain = cells(rows[2]);
    assert_eq!(rr[1], "romraiderlog_20240601_102500.csv");
    assert_eq!(rr[2], "2024-06-01 10:25");
    assert_eq!(rr[4], "480");
    assert!((rr[5].parse::<f64>().unwrap() - 25.0).abs() < 1.5, "{out}");
    assert!(
        rr[6].starts_with("Engine Speed (rpm), Engine Load (%)"),
        "{out}"
    );
    assert_eq!(evo[1], "EvoScanDataLog_2024.06.01_10.20.00.csv");
    assert_eq!(evo[4], "240");
    assert!((evo[5].parse::<f64>().unwrap() - 12.0).abs() < 0.5, "{out}");
    assert!(evo[6].starts_with("LogNotes, 01_LogMark, RPM"), "{out}");
    assert!(!evo[6].contains("LogEntrySeconds"));
    assert_eq!(plain[1], "log-2024-06-01T10-15-00-000Z.csv");
    assert_eq!(plain[2], "2024-06-01 10:15 UTC");
    assert_eq!(plain[3], "19.99");
    assert_eq!(plain[4], "2000");
    assert_eq!(plain[5], "100");
    assert_eq!(
        plain[6],
        "RPM, Load, Knock, Throttle, MAP, Knock Sum, AFR, IAT, Phase"
    );
}

#[test]
fn shared_query_each_format() {
    let Some(dir) = logs_dir() else { return };
    let mut cache = Cache::default();

    // Plain: the spec's example filter, with aliases; 107 knock rows above 3000 rpm.
    let out = query(
        &dir,
        &mut cache,
        "RPM > 3000 && Knock > 0",
        Some("log-2024-06-01T10-15-00-000Z.csv"),
    );
    assert_eq!(field(&out, "files_searched"), "1");
    assert_eq!(field(&out, "rows_matched"), "107");
    assert_eq!(field(&out, "actual_sample_rate_hz"), "100");
    assert_eq!(field(&out, "channels"), "[Time, RPM, Knock]");
    assert!(out.contains("| 6.11     |"), "{out}");
    // Empty AFR cells: rows_with_errors, never a match.
    let out = query(&dir, &mut cache, "AFR < 11.2", Some("#3"));
    assert_eq!(field(&out, "rows_matched"), "196");
    assert_eq!(field(&out, "rows_with_errors"), "83");
    // sample_rate thins the output, rows_matched stays the true total.
    let args = QueryArgs {
        filter: "Phase == \"pull1\"".into(),
        file: Some("log-2024-06-01T10-15-00-000Z.csv".into()),
        sample_rate: Some(10.0),
        ..Default::default()
    };
    let out = query_logs(&dir, &mut cache, &args, &mut go()).unwrap();
    assert_eq!(field(&out, "rows_matched"), "500");
    assert_eq!(field(&out, "output_sample_rate_hz"), "10");
    assert_eq!(field(&out, "rows_returned"), "50");

    // EvoScan: time from LogEntrySeconds, digit-leading names quoted.
    let evo = "EvoScanDataLog_2024.06.01_10.20.00.csv";
    let out = query(&dir, &mut cache, "empty(WGDC_Active)", Some(evo));
    assert_eq!(field(&out, "rows_matched"), "240");
    let out = query(&dir, &mut cache, "'01_LogMark' == 1", Some(evo));
    assert_eq!(field(&out, "rows_matched"), "121");
    let out = query(&dir, &mut cache, "LogNotes ~= \"^pull\"", Some(evo));
    assert_eq!(field(&out, "rows_matched"), "2");
    let out = query(&dir, &mut cache, "RPM > 6000 and Knock > 0", Some(evo));
    assert!(
        field(&out, "rows_matched").parse::<usize>().unwrap() > 0,
        "{out}"
    );
    let first = out
        .lines()
        .find(|l| l.starts_with("| ") && !l.starts_with("| Time"))
        .unwrap();
    let t: f64 = first.split('|').nth(1).unwrap().trim().parse().unwrap();
    assert!(
        t > 1.0 && t < 20.0,
        "time must come from LogEntrySeconds: {first}"
    );

    // RomRaider: `Time (msec)` becomes seconds; names with units quoted.
    let rr = "romraiderlog_20240601_102500.csv";
    let out = query(
        &dir,
        &mut cache,
        "'Engine Speed (rpm)' < 900 and 'Time (msec)' < 200",
        Some(rr),
    );
    assert!(out.contains("| 0.000    |"), "{out}");
    assert!(out.contains("| 0.041    |"), "{out}");
    let out = query(&dir, &mut cache, "'Knock Count (count)' > 0", Some(rr));
    assert!(
        field(&out, "rows_matched").parse::<usize>().unwrap() > 0,
        "{out}"
    );

    // All files: a name only some logs have, reported per file.
    let out = query(&dir, &mut cache, "Knock > 0", None);
    assert_eq!(field(&out, "files_searched"), "3");
    assert!(
        out.contains("romraiderlog_20240601_102500.csv has no channel `Knock`"),
        "{out}"
    );
    assert!(out.contains("| File"), "{out}");
    let err = query_logs(
        &dir,
        &mut cache,
        &QueryArgs {
            filter: "Engine Speed > 3000".into(),
            ..Default::default()
        },
        &mut go(),
    )
    .unwrap_err();
    assert_eq!(err.code, log_query::error::BAD_FILTER, "{err}");
    assert!(err.message.contains("position 8"), "{err}");
}

#[test]
fn shared_plot_fixture_log() {
    let Some(dir) = logs_dir() else { return };
    let mut cache = Cache::default();
    let args = log_query::plot::PlotArgs {
        file: Some("log-2024-06-01T10-15-00-000Z.csv".into()),
        filter: Some("Knock > 0".into()),
        ..Default::default()
    };
    let plot = log_query::plot::plot_log(&dir, &mut cache, &args, &mut go()).unwrap();
    assert_eq!(&plot.png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        plot.caption.contains("107 rows matching"),
        "{}",
        plot.caption
    );
}
