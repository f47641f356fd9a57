//! End-to-end tests of the log-query plugin through a real MCP client: the
//! bundled logs (samples/logs), and in `shared_` tests the three fixture log
//! formats and a sample of the filtrex differential corpus.

use e2e::{
    Server, coded_error, field, fixtures, is_error, markdown_rows, only_plugin, repo,
    required_field, text,
};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

const PLAIN: &str = "log-2026-02-22T14-30-00-000Z.csv";
const EVO: &str = "EvoScanDataLog_2026.02.22_10.15.00.csv";
const ROMRAIDER: &str = "romraiderlog_20260221_180000.csv";

/// A server with only log-query, reading `logs`.
struct Logs {
    server: Server,
    _plugins: TempDir,
}

impl Logs {
    async fn start(logs: &Path) -> Logs {
        let plugins = only_plugin("log_query.wasm");
        let server = Server::start(&[
            "--plugins",
            plugins.path().to_str().unwrap(),
            "--logs-dir",
            logs.to_str().unwrap(),
        ])
        .await;
        Logs {
            server,
            _plugins: plugins,
        }
    }

    async fn ok(&self, tool: &str, args: Value) -> String {
        text(&self.server.ok(tool, args).await)
    }

    async fn err(&self, tool: &str, args: Value) -> String {
        text(&self.server.err(tool, args).await)
    }

    /// The text of a failure whose structured content carries `code`.
    async fn fails(&self, code: &str, tool: &str, args: Value) -> String {
        let (got, text) = coded_error(&self.server.err(tool, args.clone()).await);
        assert_eq!(got, code, "{tool} {args}: {text}");
        text
    }

    async fn query(&self, args: Value) -> String {
        self.ok("query_logs", args).await
    }
}

fn sample_logs() -> PathBuf {
    repo().join("samples/logs")
}

/// A comma-separated log read independently of the plugin: header and rows.
struct Csv {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn read(path: &Path) -> Csv {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines().filter(|l| !l.is_empty());
        let header = lines
            .next()
            .unwrap()
            .split(',')
            .map(str::to_owned)
            .collect();
        let rows = lines
            .map(|l| l.split(',').map(str::to_owned).collect())
            .collect();
        Csv { header, rows }
    }

    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    }

    /// A numeric cell (None when empty).
    fn num(&self, row: usize, name: &str) -> Option<f64> {
        self.rows[row][self.col(name)].parse().ok()
    }

    /// Row indices where `pred` holds.
    fn matching(&self, pred: impl Fn(usize) -> bool) -> Vec<usize> {
        (0..self.rows.len()).filter(|&r| pred(r)).collect()
    }

    fn time(&self, row: usize) -> f64 {
        self.num(row, "Time").unwrap()
    }
}

/// The data rows of a query's table (header excluded).
fn table(doc: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let rows = markdown_rows(doc);
    let (header, body) = rows
        .split_first()
        .unwrap_or_else(|| panic!("no table in\n{doc}"));
    (header.clone(), body.to_vec())
}

/// The times (first column) of a query's table; none when nothing matched.
fn times(doc: &str) -> Vec<f64> {
    markdown_rows(doc)
        .iter()
        .skip(1)
        .map(|r| r[0].parse().unwrap())
        .collect()
}

fn close_times(got: &[f64], want: &[f64], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.006, "{ctx}: time {g} vs {w}");
    }
}

const STANDARD: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_decode(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = STANDARD
            .iter()
            .position(|&x| x == c)
            .expect("base64 character") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// The PNG bytes and caption of a plot_log result.
fn plot_png(r: &CallToolResult) -> (Vec<u8>, String) {
    assert_eq!(r.content.len(), 2, "caption and image");
    let image = r.content[1].as_image().expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    (base64_decode(&image.data), text(r))
}

fn png_size(png: &[u8]) -> (u32, u32) {
    (
        u32::from_be_bytes(png[16..20].try_into().unwrap()),
        u32::from_be_bytes(png[20..24].try_into().unwrap()),
    )
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

// ---------------------------------------------------------------- samples

#[tokio::test]
async fn list_logs_describes_the_samples_newest_first() {
    let logs = Logs::start(&sample_logs()).await;
    let out = logs.ok("list_logs", json!({})).await;
    assert_eq!(required_field(&out, "total_files"), "3");
    assert_eq!(
        required_field(&out, "logs_dir"),
        sample_logs().display().to_string()
    );
    let (header, rows) = table(&out);
    assert_eq!(
        header,
        [
            "#",
            "Filename",
            "Date",
            "Duration (s)",
            "Rows",
            "Sample Rate (Hz)",
            "Channels",
            "Logger",
            "Date From"
        ]
    );
    let names: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(names, [PLAIN, EVO, ROMRAIDER], "newest first");
    let plain = Csv::read(&sample_logs().join(PLAIN));
    assert_eq!(rows[0][0], "1");
    assert_eq!(rows[0][2], "2026-02-22 14:30 UTC");
    assert_eq!(rows[0][7..], ["csv", "file name"]);
    assert_eq!(rows[0][4], plain.rows.len().to_string());
    assert_eq!(rows[0][5], "100");
    assert_eq!(
        rows[0][6],
        plain.header[1..].join(", "),
        "every channel but Time"
    );
    let last = plain.time(plain.rows.len() - 1);
    assert!(
        (rows[0][3].parse::<f64>().unwrap() - last).abs() < 0.01,
        "{}",
        rows[0][3]
    );
    let evo = Csv::read(&sample_logs().join(EVO));
    assert_eq!(rows[1][4], evo.rows.len().to_string());
    assert!(
        rows[1][6].starts_with("LogNotes, 01_LogMark, RPM"),
        "{}",
        rows[1][6]
    );
    assert!(
        !rows[1][6].contains("LogEntrySeconds"),
        "the time column is not a channel"
    );
    assert!(
        rows[2][6].starts_with("Engine Speed (rpm), Engine Load (%)"),
        "{}",
        rows[2][6]
    );
    logs.server.stop().await;
}

#[tokio::test]
async fn query_logs_matches_what_the_csv_says() {
    let logs = Logs::start(&sample_logs()).await;
    let csv = Csv::read(&sample_logs().join(PLAIN));
    let want =
        csv.matching(|r| csv.num(r, "RPM").unwrap() > 3000.0 && csv.num(r, "Knock").unwrap() > 0.0);
    assert!(!want.is_empty());
    let out = logs
        .query(json!({"filter": "RPM > 3000 && Knock > 0", "file": PLAIN, "limit": 5000}))
        .await;
    assert_eq!(required_field(&out, "files_searched"), "1");
    assert_eq!(required_field(&out, "rows_matched"), want.len().to_string());
    assert_eq!(
        required_field(&out, "rows_returned"),
        want.len().to_string()
    );
    assert_eq!(required_field(&out, "channels"), "[Time, RPM, Knock]");
    let (header, rows) = table(&out);
    assert_eq!(header, ["Time (s)", "RPM", "Knock"]);
    let want_times: Vec<f64> = want.iter().map(|&r| csv.time(r)).collect();
    close_times(&times(&out), &want_times, "RPM > 3000 && Knock > 0");
    for (row, &r) in rows.iter().zip(&want) {
        assert_eq!(row[1].parse::<f64>().unwrap(), csv.num(r, "RPM").unwrap());
        assert_eq!(row[2].parse::<f64>().unwrap(), csv.num(r, "Knock").unwrap());
    }
    // The same by its list_logs number, and with the word operators.
    let again = logs
        .query(json!({"filter": "RPM > 3000 and Knock > 0", "file": "#1", "limit": 5000}))
        .await;
    assert_eq!(
        required_field(&again, "rows_matched"),
        want.len().to_string()
    );
    // Quoted names with spaces, strings, chained comparisons, functions.
    let knock_sum = csv.matching(|r| {
        csv.num(r, "Knock Sum").unwrap() >= 5.0 && csv.rows[r][csv.col("Phase")] == "pull2"
    });
    let out = logs
        .query(json!({"filter": "'Knock Sum' >= 5 and Phase == \"pull2\"", "file": PLAIN}))
        .await;
    assert_eq!(
        required_field(&out, "rows_matched"),
        knock_sum.len().to_string()
    );
    let band = csv.matching(|r| {
        (3000.0..5000.0).contains(&csv.num(r, "RPM").unwrap())
            && csv.num(r, "RPM").unwrap() > 3000.0
    });
    let out = logs
        .query(json!({"filter": "3000 < RPM < 5000", "file": PLAIN}))
        .await;
    assert_eq!(required_field(&out, "rows_matched"), band.len().to_string());
    // Empty AFR cells never match and are counted.
    let lean = csv.matching(|r| csv.num(r, "AFR").is_some_and(|a| a < 11.5));
    let empty = csv.matching(|r| csv.num(r, "AFR").is_none());
    let out = logs
        .query(json!({"filter": "AFR < 11.5", "file": PLAIN}))
        .await;
    assert_eq!(required_field(&out, "rows_matched"), lean.len().to_string());
    assert_eq!(
        required_field(&out, "rows_with_errors"),
        empty.len().to_string()
    );
    let out = logs
        .query(json!({"filter": "empty(AFR)", "file": PLAIN}))
        .await;
    assert_eq!(
        required_field(&out, "rows_matched"),
        empty.len().to_string()
    );
    logs.server.stop().await;
}

/// Logs that put every way of reading to work: many 64 KiB pieces, CRLF,
/// quoted fields with delimiters and line breaks inside, a field longer
/// than a piece, empty cells, short and long lines, a units row, and header
/// lines repeated and changed mid-file; in `,` and in `;` with decimal
/// commas.
fn awkward_logs(dir: &Path) {
    let mut plain = Vec::new();
    log_query::synth::write_bench_csv(&mut plain, 6000).unwrap();
    std::fs::write(dir.join("plain.csv"), &plain).unwrap();
    let plain = String::from_utf8(plain).unwrap();
    let mut out = String::new();
    for (n, line) in plain.lines().enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        let line = match n {
            0 => format!("{line},Note"),
            1 => format!("Units,rpm,%,,,,,,,,,,,\r\n{line},start"),
            1500 => format!("{line},\"{}\"", "long ".repeat(15_000)),
            3000 => format!("{},Note\r\n{line},restart", plain.lines().next().unwrap()),
            4000 => format!(
                "Time,Knock,RPM,Boost\r\n{},{},{},{}",
                fields[0], fields[3], fields[1], fields[11]
            ),
            4001..4200 => format!("{},{},{},{}", fields[0], fields[3], fields[1], fields[11]),
            4200 => format!("{},Note\r\n{line},", plain.lines().next().unwrap()),
            _ if n % 997 == 0 => format!("{line},\"pull, {n}\r\nsecond \"\"line\"\"\""),
            _ if n % 101 == 0 => format!("{line},\"quoted {n}\""),
            _ if n % 89 == 0 => fields[..5].join(","),
            _ if n % 97 == 0 => format!("{line},extra,fields"),
            _ if n % 13 == 0 => format!("{},,{},", fields[0], fields[2..].join(",")),
            _ => format!("{line},"),
        };
        out += &line;
        out += "\r\n";
    }
    std::fs::write(dir.join("awkward.csv"), &out).unwrap();
    let european: String = plain
        .lines()
        .enumerate()
        .map(|(n, line)| {
            let line = line.replace(',', ";").replace('.', ",");
            if n == 2000 {
                format!("Time;RPM;Knock\n{line}\n")
            } else {
                line + "\n"
            }
        })
        .collect();
    std::fs::write(dir.join("romraiderlog_20260101_000000.csv"), european).unwrap();
}

#[tokio::test]
async fn the_component_reads_awkward_logs_as_the_native_parser_does() {
    // The component reads a log in 64 KiB pieces, classifying bytes with
    // WebAssembly SIMD; natively the whole file is parsed at once with the
    // portable code. Every answer must be the same, byte for byte.
    let dir = tempfile::tempdir().unwrap();
    awkward_logs(dir.path());
    let logs = Logs::start(dir.path()).await;
    let queries = [
        json!({"filter": "RPM > 3000 && Knock > 0"}),
        json!({"filter": "RPM > 0", "channels": ["RPM", "Load", "Note", "Boost"], "limit": 40, "offset": 1450}),
        json!({"filter": "Note ~= \"pull|quoted|long\"", "channels": ["Note", "Battery"], "limit": 200}),
        json!({"filter": "empty(RPM) or empty(Battery)", "channels": ["RPM", "Battery"], "limit": 200}),
        json!({"filter": "Throttle > 50", "sample_rate": 5}),
    ];
    for file in [
        "plain.csv",
        "awkward.csv",
        "romraiderlog_20260101_000000.csv",
    ] {
        for query in &queries {
            let mut args = query.clone();
            args["file"] = json!(file);
            let native_args: log_query::query::QueryArgs = log_query::query::QueryArgs {
                filter: args["filter"].as_str().unwrap().to_string(),
                channels: args.get("channels").map(|c| {
                    c.as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().to_string())
                        .collect()
                }),
                file: Some(file.to_string()),
                sample_rate: args.get("sample_rate").and_then(Value::as_f64),
                limit: args.get("limit").and_then(Value::as_u64).map(|n| n as u32),
                offset: args.get("offset").and_then(Value::as_u64).map(|n| n as u32),
            };
            let native = log_query::query::query_logs(
                dir.path(),
                &mut log_query::logs::Cache::default(),
                &native_args,
                &mut |_, _, _| true,
            );
            let got = logs.server.call("query_logs", args.clone()).await;
            match native {
                Ok(want) => assert_eq!(text(&got), want, "{file}: {args}"),
                Err(want) => {
                    assert!(is_error(&got), "{file}: {args}: expected an error");
                    assert_eq!(coded_error(&got).0, want.code, "{file}: {args}");
                    assert_eq!(text(&got), want.to_string(), "{file}: {args}");
                }
            }
        }
    }
    let list = logs.ok("list_logs", json!({})).await;
    assert!(list.contains("awkward.csv"), "{list}");
    logs.server.stop().await;
}

#[tokio::test]
async fn channels_sample_rate_limit_and_offset_shape_the_output() {
    let logs = Logs::start(&sample_logs()).await;
    let csv = Csv::read(&sample_logs().join(PLAIN));
    let pull = csv.matching(|r| csv.rows[r][csv.col("Phase")] == "pull1");
    assert!(pull.len() > 100);
    // Extra channels come after the filter's.
    let out = logs
        .query(json!({"filter": "Phase == \"pull1\"", "channels": ["AFR", "Timing"], "file": PLAIN, "limit": 3}))
        .await;
    assert_eq!(
        required_field(&out, "channels"),
        "[Time, Phase, AFR, Timing]"
    );
    let (header, rows) = table(&out);
    assert_eq!(header, ["Time (s)", "Phase", "AFR", "Timing"]);
    assert_eq!(
        rows[0][3].parse::<f64>().unwrap(),
        csv.num(pull[0], "Timing").unwrap()
    );
    // limit keeps the first rows; rows_matched still counts every match.
    assert_eq!(required_field(&out, "rows_matched"), pull.len().to_string());
    assert_eq!(required_field(&out, "rows_returned"), "3");
    close_times(
        &times(&out),
        &pull[..3].iter().map(|&r| csv.time(r)).collect::<Vec<_>>(),
        "limit 3",
    );
    assert!(out.contains("offset=3"), "{out}");
    // offset pages on.
    let page2 = logs
        .query(json!({"filter": "Phase == \"pull1\"", "file": PLAIN, "limit": 3, "offset": 3}))
        .await;
    close_times(
        &times(&page2),
        &pull[3..6].iter().map(|&r| csv.time(r)).collect::<Vec<_>>(),
        "offset 3",
    );
    // sample_rate 10 Hz on a 100 Hz log keeps every 10th matching row.
    let thin = logs.query(json!({"filter": "Phase == \"pull1\"", "file": PLAIN, "sample_rate": 10, "limit": 5000})).await;
    assert_eq!(required_field(&thin, "actual_sample_rate_hz"), "100");
    assert_eq!(required_field(&thin, "output_sample_rate_hz"), "10");
    assert_eq!(
        required_field(&thin, "rows_matched"),
        pull.len().to_string()
    );
    let kept: Vec<f64> = pull.iter().step_by(10).map(|&r| csv.time(r)).collect();
    assert_eq!(
        required_field(&thin, "rows_returned"),
        kept.len().to_string()
    );
    close_times(&times(&thin), &kept, "sample_rate 10");
    logs.server.stop().await;
}

#[tokio::test]
async fn query_over_every_log_reports_per_file() {
    let logs = Logs::start(&sample_logs()).await;
    let csv = Csv::read(&sample_logs().join(PLAIN));
    let plain_matches = csv.matching(|r| csv.num(r, "RPM").unwrap() > 6500.0).len();
    let out = logs
        .query(json!({"filter": "RPM > 6500", "limit": 3}))
        .await;
    assert_eq!(required_field(&out, "files_searched"), "3");
    assert_eq!(required_field(&out, "rows_returned"), "3");
    assert!(
        out.contains(&format!("{ROMRAIDER} has no channel `RPM`")),
        "{out}"
    );
    let (header, _) = table(&out);
    assert_eq!(header.last().map(String::as_str), Some("File"));
    // The per-file summary table.
    let per_file = out
        .split("Per file:")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-file table in\n{out}"));
    let (_, rows) = table(per_file);
    let row = |name: &str| {
        rows.iter()
            .find(|r| r[1] == name)
            .unwrap_or_else(|| panic!("{name} in\n{per_file}"))
            .clone()
    };
    assert_eq!(row(PLAIN)[3], plain_matches.to_string());
    assert_eq!(row(ROMRAIDER)[3], "0");
    let total: usize = rows.iter().map(|r| r[3].parse::<usize>().unwrap()).sum();
    assert_eq!(required_field(&out, "rows_matched"), total.to_string());
    logs.server.stop().await;
}

#[tokio::test]
async fn bad_filters_and_names_get_errors_that_say_what_to_fix() {
    let logs = Logs::start(&sample_logs()).await;
    // Each failure reads `CODE: message`, its structured content the code.
    let e = logs
        .fails(
            "BAD_FILTER",
            "query_logs",
            json!({"filter": "Engine Speed > 3000"}),
        )
        .await;
    assert!(e.contains("filter error at position 8"), "{e}");
    assert!(e.contains("quote channel names that contain spaces"), "{e}");
    // The caret still stands under the position the message names.
    let lines: Vec<&str> = e.lines().collect();
    let caret = lines
        .iter()
        .position(|l| l.trim() == "^")
        .expect("a caret line");
    let source = lines[caret - 1];
    let column = lines[caret].find('^').unwrap();
    assert_eq!(&source[column..column + 5], "Speed", "{e}");
    let e = logs
        .fails(
            "UNKNOWN_CHANNEL",
            "query_logs",
            json!({"filter": "RPM > 3000 && Knok > 0", "file": PLAIN}),
        )
        .await;
    assert!(
        e.contains("position 15") && e.contains("unknown channel `Knok`; did you mean `Knock`?"),
        "{e}"
    );
    let e = logs
        .fails(
            "BAD_FILTER",
            "query_logs",
            json!({"filter": "RPM >", "file": PLAIN}),
        )
        .await;
    assert!(e.contains("filter error at position"), "{e}");
    let e = logs
        .fails(
            "UNKNOWN_CHANNEL",
            "query_logs",
            json!({"filter": "RPM > 3000", "channels": ["Timng"], "file": PLAIN}),
        )
        .await;
    assert!(
        e.contains("unknown channel `Timng`") && e.contains("did you mean `Timing`?"),
        "{e}"
    );
    let e = logs
        .fails(
            "UNKNOWN_FILE",
            "query_logs",
            json!({"filter": "RPM > 3000", "file": "nope.csv"}),
        )
        .await;
    assert!(
        e.contains("no log file named `nope.csv`") && e.contains(PLAIN),
        "{e}"
    );
    let e = logs
        .fails(
            "INVALID_ARGUMENT",
            "query_logs",
            json!({"filter": "RPM > 3000", "limit": 5001}),
        )
        .await;
    assert_eq!(
        e,
        "INVALID_ARGUMENT: limit must be between 1 and 5000 (got 5001)"
    );
    let e = logs
        .fails(
            "UNKNOWN_CHANNEL",
            "plot_log",
            json!({"file": PLAIN, "channels": ["Nope"]}),
        )
        .await;
    assert!(e.contains("`Nope`"), "{e}");
    let e = logs
        .fails("INVALID_ARGUMENT", "plot_log", json!({"width": 100}))
        .await;
    assert!(
        e.contains("width must be 320..2400 pixels (got 100)"),
        "{e}"
    );
    let e = logs
        .fails(
            "EMPTY_WINDOW",
            "plot_log",
            json!({"file": PLAIN, "start_s": 1e6}),
        )
        .await;
    assert!(e.contains("is empty; the log spans"), "{e}");
    logs.server.stop().await;
}

/// The directory-level failures: not configured, unreadable, empty, and a
/// file that is not a log, each with its own code.
#[tokio::test]
async fn directory_failures_have_their_own_codes() {
    // No logs directory anywhere: not on the command line, not in the
    // environment, no .vscode/settings.json in the workspace.
    let workspace = tempfile::tempdir().unwrap();
    let plugins = only_plugin("log_query.wasm");
    let mut cmd = tokio::process::Command::new(e2e::bin());
    cmd.current_dir(workspace.path())
        .env_remove("ECU_LOGS_DIR")
        .args(["serve", "--plugins"])
        .arg(plugins.path())
        .arg("--workspace")
        .arg(workspace.path());
    let server = Server::connect(cmd).await.expect("starting benchtop");
    for tool in ["list_logs", "query_logs", "plot_log"] {
        let args = if tool == "query_logs" {
            json!({"filter": "RPM > 0"})
        } else {
            json!({})
        };
        let (code, e) = coded_error(&server.err(tool, args).await);
        assert_eq!(code, "NO_LOGS_DIR", "{tool}: {e}");
        assert!(e.contains("--logs-dir DIR"), "{tool}: {e}");
    }
    server.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let logs = Logs::start(dir.path()).await;
    let e = logs
        .fails("NO_LOGS", "query_logs", json!({"filter": "RPM > 0"}))
        .await;
    assert!(e.contains("holds no .csv files"), "{e}");
    logs.fails("NO_LOGS", "plot_log", json!({})).await;
    std::fs::write(dir.path().join("notes.csv"), "").unwrap();
    let e = logs
        .fails(
            "UNREADABLE_LOG",
            "query_logs",
            json!({"filter": "RPM > 0", "file": "notes.csv"}),
        )
        .await;
    assert!(
        e.ends_with("notes.csv is not a log log-query understands: the file is empty"),
        "{e}"
    );
    logs.fails("UNREADABLE_LOG", "query_logs", json!({"filter": "RPM > 0"}))
        .await;
    logs.server.stop().await;

    let gone = dir.path().join("gone");
    let logs = Logs::start(&gone).await;
    let e = logs
        .fails("LOGS_DIR_UNREADABLE", "list_logs", json!({}))
        .await;
    assert!(e.contains("cannot read the logs directory"), "{e}");
    logs.server.stop().await;
}

#[tokio::test]
async fn plot_log_returns_a_png_with_a_caption() {
    let logs = Logs::start(&sample_logs()).await;
    let csv = Csv::read(&sample_logs().join(PLAIN));
    let knock = csv.matching(|r| csv.num(r, "Knock").unwrap() > 0.0).len();
    let r = logs
        .server
        .call("plot_log", json!({"file": PLAIN, "channels": ["RPM", "Knock"], "filter": "Knock > 0", "width": 640, "height": 400}))
        .await;
    assert!(!is_error(&r), "{}", text(&r));
    let (png, caption) = plot_png(&r);
    assert_eq!(&png[..8], PNG_SIGNATURE);
    assert_eq!(&png[12..16], b"IHDR");
    assert_eq!(png_size(&png), (640, 400));
    assert!(caption.starts_with(PLAIN), "{caption}");
    assert!(
        caption.contains(&format!("{knock} rows matching `Knock > 0`")),
        "{caption}"
    );
    assert!(
        caption.contains("Panels: RPM") && caption.contains("Knock"),
        "{caption}"
    );
    // Defaults: the most recent log, default width, 160 px per panel + 60.
    let r = logs
        .server
        .call("plot_log", json!({"channels": ["RPM"]}))
        .await;
    let (png, caption) = plot_png(&r);
    assert_eq!(&png[..8], PNG_SIGNATURE);
    assert_eq!(png_size(&png), (1000, 220));
    assert!(caption.starts_with(PLAIN), "{caption}");
    logs.server.stop().await;
}

// ---------------------------------------------------------------- fixtures

const FX_PLAIN: &str = "log-2024-06-01T10-15-00-000Z.csv";
const FX_EVO: &str = "EvoScanDataLog_2024.06.01_10.20.00.csv";
const FX_RR: &str = "romraiderlog_20240601_102500.csv";

#[tokio::test]
async fn shared_three_fixture_formats_list_and_query() {
    let Some(dir) = fixtures("logs").map(|d| d.canonicalize().unwrap()) else {
        return;
    };
    let logs = Logs::start(&dir).await;
    let out = logs.ok("list_logs", json!({})).await;
    assert_eq!(required_field(&out, "total_files"), "3");
    let (_, rows) = table(&out);
    let names: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(names, [FX_RR, FX_EVO, FX_PLAIN]);
    assert_eq!(
        (rows[0][2].as_str(), rows[0][4].as_str()),
        ("2024-06-01 10:25", "480")
    );
    assert!((rows[0][5].parse::<f64>().unwrap() - 25.0).abs() < 1.5);
    assert_eq!(rows[1][4], "240");
    assert!((rows[1][5].parse::<f64>().unwrap() - 12.0).abs() < 0.5);
    assert_eq!(
        &rows[2][2..6],
        ["2024-06-01 10:15 UTC", "19.99", "2000", "100"]
    );
    assert_eq!(
        rows[2][6],
        "RPM, Load, Knock, Throttle, MAP, Knock Sum, AFR, IAT, Phase"
    );

    // Plain: the spec's example; 107 knock rows above 3000 rpm; empty AFR cells.
    let out = logs
        .query(json!({"filter": "RPM > 3000 && Knock > 0", "file": FX_PLAIN}))
        .await;
    assert_eq!(required_field(&out, "rows_matched"), "107");
    assert_eq!(times(&out)[0], 6.11);
    let out = logs
        .query(json!({"filter": "AFR < 11.2", "file": "#3"}))
        .await;
    assert_eq!(
        (
            required_field(&out, "rows_matched").as_str(),
            required_field(&out, "rows_with_errors").as_str()
        ),
        ("196", "83")
    );
    let out = logs
        .query(json!({"filter": "Phase == \"pull1\"", "file": FX_PLAIN, "sample_rate": 10}))
        .await;
    assert_eq!(
        (
            required_field(&out, "rows_matched").as_str(),
            required_field(&out, "rows_returned").as_str()
        ),
        ("500", "50")
    );

    // EvoScan: time from LogEntrySeconds, a quoted digit-leading name, text.
    let out = logs
        .query(json!({"filter": "empty(WGDC_Active)", "file": FX_EVO}))
        .await;
    assert_eq!(required_field(&out, "rows_matched"), "240");
    let out = logs
        .query(json!({"filter": "'01_LogMark' == 1", "file": FX_EVO}))
        .await;
    assert_eq!(required_field(&out, "rows_matched"), "121");
    let out = logs
        .query(json!({"filter": "LogNotes ~= \"^pull\"", "file": FX_EVO}))
        .await;
    assert_eq!(required_field(&out, "rows_matched"), "2");
    let out = logs
        .query(json!({"filter": "RPM > 6000 and Knock > 0", "file": FX_EVO}))
        .await;
    let t = times(&out);
    assert!(
        !t.is_empty() && t.iter().all(|&t| t > 1.0 && t < 20.0),
        "time from LogEntrySeconds: {t:?}"
    );

    // RomRaider: `Time (msec)` becomes seconds.
    let out = logs
        .query(
            json!({"filter": "'Engine Speed (rpm)' < 900 and 'Time (msec)' < 200", "file": FX_RR}),
        )
        .await;
    assert_eq!(times(&out)[..2], [0.0, 0.041]);
    let out = logs
        .query(json!({"filter": "'Knock Count (count)' > 0", "file": FX_RR}))
        .await;
    assert!(
        required_field(&out, "rows_matched")
            .parse::<usize>()
            .unwrap()
            > 0
    );

    // All files at once, and a plot of the fixture log.
    let out = logs.query(json!({"filter": "Knock > 0"})).await;
    assert_eq!(required_field(&out, "files_searched"), "3");
    assert!(
        out.contains(&format!("{FX_RR} has no channel `Knock`")),
        "{out}"
    );
    let r = logs
        .server
        .call("plot_log", json!({"file": FX_PLAIN, "filter": "Knock > 0"}))
        .await;
    let (png, caption) = plot_png(&r);
    assert_eq!(&png[..8], PNG_SIGNATURE);
    assert!(caption.contains("107 rows matching"), "{caption}");
    logs.server.stop().await;
}

/// A sample of the filtrex corpus (every 4th case, all alias cases, no
/// quirk-tagged ones) through query_logs: the matched rows must be exactly
/// filtrex's; a filter naming an unknown channel may be refused up front.
/// The whole corpus runs natively in the plugin crate.
#[tokio::test]
async fn shared_filtrex_cases_through_query_logs() {
    let (Some(logs_dir), Some(filtrex)) = (
        fixtures("logs").map(|d| d.canonicalize().unwrap()),
        fixtures("filtrex").map(|d| d.canonicalize().unwrap()),
    ) else {
        return;
    };
    let logs = Logs::start(&logs_dir).await;
    let csv = Csv::read(&logs_dir.join(FX_PLAIN));
    let cases = std::fs::read_to_string(filtrex.join("cases.jsonl")).unwrap();
    let (mut checked, mut rejected) = (0, 0);
    let mut failures = Vec::new();
    for (i, line) in cases.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        if !case["quirk"].is_null() || !(i % 4 == 0 || case["alias"] == true) {
            continue;
        }
        let expr = case["expr"].as_str().unwrap();
        let want: Vec<usize> = case["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let r = logs
            .server
            .call(
                "query_logs",
                json!({"filter": expr, "file": FX_PLAIN, "limit": 5000}),
            )
            .await;
        checked += 1;
        if is_error(&r) {
            rejected += 1;
            // Rejected up front: fine where filtrex rejects it, fails on every
            // row, or names an unknown channel (the tool checks names first).
            let all_rows_fail = case["runtime_error_rows"].as_u64() == Some(csv.rows.len() as u64);
            let unknown_name = case["runtime_error_kinds"]
                .get("UnknownPropertyError")
                .is_some();
            if case["compile_error"].is_null() && !all_rows_fail && !unknown_name {
                failures.push(format!(
                    "{expr:?}: rejected ({}) but filtrex matched {} rows",
                    text(&r),
                    want.len()
                ));
            }
            continue;
        }
        let doc = text(&r);
        if !case["compile_error"].is_null() {
            failures.push(format!("{expr:?}: accepted, but filtrex rejects it"));
            continue;
        }
        if field(&doc, "rows_matched") != Some(want.len().to_string()) {
            failures.push(format!(
                "{expr:?}: rows_matched {:?}, filtrex {}",
                field(&doc, "rows_matched"),
                want.len()
            ));
            continue;
        }
        let got = times(&doc);
        let want_times: Vec<f64> = want.iter().map(|&r| csv.time(r)).collect();
        if got.len() != want_times.len()
            || got
                .iter()
                .zip(&want_times)
                .any(|(g, w)| (g - w).abs() > 0.006)
        {
            failures.push(format!("{expr:?}: returned rows differ from filtrex's"));
        }
    }
    eprintln!("filtrex through MCP: {checked} cases, {rejected} rejected up front");
    assert!(checked >= 60, "only {checked} cases checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    logs.server.stop().await;
}

// ------------------------------------------------------ real loggers' logs

/// What a person reading a real log finds in it: counted and timed from the
/// file itself (rows under the header block, time column first to last).
struct RealLog {
    name: &'static str,
    logger: &'static str,
    date: Option<&'static str>,
    date_from: &'static str,
    rows: usize,
    duration_s: &'static str,
    rate_hz: &'static str,
    /// Channels, first few in order, exactly as the logger wrote them.
    first_channels: &'static [&'static str],
    channel_count: usize,
}

/// Every log of `../shared/fixtures/realworld/logs`, by directory, newest
/// first (the two mtime-dated logs of other_loggers are compared apart).
const REAL: &[(&str, &[RealLog])] = &[
    (
        "btssm_subaru",
        &[
            RealLog {
                name: "BtSsm_20251017_180501.csv",
                logger: "btssm",
                date: Some("2025-10-17 18:05"),
                date_from: "file name",
                rows: 3510,
                duration_s: "358.62",
                rate_hz: "9.78",
                first_channels: &["AFR (lambda)", "AFR Target (lambda)", "Boost (psi)"],
                channel_count: 25,
            },
            // Its last line is cut short (`65283,1.00`): a row with two cells.
            RealLog {
                name: "BtSsm_20251008_090109.csv",
                logger: "btssm",
                date: Some("2025-10-08 09:01"),
                date_from: "file name",
                rows: 641,
                duration_s: "65.27",
                rate_hz: "9.81",
                first_channels: &["AFR (lambda)"],
                channel_count: 25,
            },
            RealLog {
                name: "BtSsm_20251004_172148.csv",
                logger: "btssm",
                date: Some("2025-10-04 17:21"),
                date_from: "file name",
                rows: 16182,
                duration_s: "1707.32",
                rate_hz: "9.48",
                first_channels: &["AFR (lambda)"],
                channel_count: 25,
            },
        ],
    ),
    (
        "evoscan_evo8",
        &[
            RealLog {
                name: "EvoScanDataLog_2025.11.19_18.08.43.csv",
                logger: "evoscan",
                date: Some("2025-11-19 18:08"),
                date_from: "log",
                rows: 877,
                duration_s: "107.64",
                rate_hz: "8.14",
                first_channels: &["LogNotes", "TPS", "RPM", "TimingAdv"],
                channel_count: 0,
            },
            RealLog {
                name: "EvoScanDataLog_2014.08.17_15.22.33.csv",
                logger: "evoscan",
                date: Some("2014-08-17 15:22"),
                date_from: "log",
                rows: 70,
                duration_s: "9.54",
                rate_hz: "7.23",
                first_channels: &["LogNotes", "TPS", "RPM"],
                channel_count: 0,
            },
        ],
    ),
    (
        "openport2_subaru",
        &[
            // `time` is the logger's clock (102183.5 s at the first row):
            // time_s counts from the start, the clock stays a channel.
            RealLog {
                name: "log0182.csv",
                logger: "openport",
                date: None,
                date_from: "file mtime",
                rows: 40,
                duration_s: "9.75",
                rate_hz: "4",
                first_channels: &["sample", "time", "F_AFR", "F_AFR_C_%"],
                channel_count: 32,
            },
        ],
    ),
    (
        "romraider_5eat",
        &[
            RealLog {
                name: "romraiderlog_20241016_133923.csv",
                logger: "romraider",
                date: Some("2024-10-16 13:39"),
                date_from: "file name",
                rows: 568,
                duration_s: "109.75",
                rate_hz: "5.17",
                first_channels: &["Accelerator Pedal Angle (%)", "Engine Speed (rpm)"],
                channel_count: 18,
            },
            RealLog {
                name: "romraiderlog_20241016_133733.csv",
                logger: "romraider",
                date: Some("2024-10-16 13:37"),
                date_from: "file name",
                rows: 53,
                duration_s: "4.85",
                rate_hz: "10.7",
                first_channels: &["1st to 2nd DC Pressure Correction (none)"],
                channel_count: 7,
            },
            RealLog {
                name: "romraiderlog_20241016_113910_TCU5.csv",
                logger: "romraider",
                date: Some("2024-10-16 11:39"),
                date_from: "file name",
                rows: 43,
                duration_s: "3.91",
                rate_hz: "10.7",
                first_channels: &["1st to 2nd DC Pressure Correction (none)"],
                channel_count: 7,
            },
        ],
    ),
    (
        "other_loggers",
        &[
            RealLog {
                name: "cobb-ap.csv",
                logger: "cobb-accessport",
                date: None,
                date_from: "file mtime",
                rows: 3,
                duration_s: "0.04",
                rate_hz: "47.6",
                first_channels: &[
                    "AFR (AFR)",
                    "AFR Set Point (AFR)",
                    "Accel Pedal Position (%)",
                ],
                channel_count: 48,
            },
            RealLog {
                name: "logworks.csv",
                logger: "logworks",
                date: None,
                date_from: "file mtime",
                rows: 8,
                duration_s: "0.57",
                rate_hz: "12.2",
                first_channels: &["LC1_O2WB", "RPM", "EGT", "Oil_Press", "Boost"],
                channel_count: 5,
            },
            RealLog {
                name: "me7l-semicolons.csv",
                logger: "me7logger",
                date: Some("2014-02-22 17:47"),
                date_from: "log",
                rows: 3,
                duration_s: "0.1",
                rate_hz: "20",
                first_channels: &[
                    "IgnitionRetardCyl1",
                    "IgnitionRetardCyl5",
                    "IgnitionRetardCyl3",
                ],
                channel_count: 75,
            },
        ],
    ),
];

#[tokio::test]
async fn shared_real_loggers_logs_list_and_query_as_read_by_hand() {
    let Some(root) = fixtures("realworld/logs").map(|d| d.canonicalize().unwrap()) else {
        return;
    };
    for (dir, want) in REAL {
        let logs = Logs::start(&root.join(dir)).await;
        let out = logs.ok("list_logs", json!({})).await;
        let (_, rows) = table(&out);
        let mut names: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
        let mut expected: Vec<&str> = want.iter().map(|w| w.name).collect();
        if *dir == "other_loggers" {
            // Two logs dated by mtime: their order is the file system's.
            assert_eq!(names.last(), Some(&"me7l-semicolons.csv"), "{out}");
            names.sort();
            expected.sort();
        }
        assert_eq!(names, expected, "{dir}:\n{out}");
        for w in *want {
            let row = rows.iter().find(|r| r[1] == w.name).unwrap();
            let ctx = format!("{dir}/{}:\n{out}", w.name);
            if let Some(date) = w.date {
                assert_eq!(row[2], date, "{ctx}");
            } else {
                assert!(!row[2].is_empty(), "{ctx}");
            }
            assert_eq!(
                (row[3].as_str(), row[4].as_str(), row[5].as_str()),
                (w.duration_s, w.rows.to_string().as_str(), w.rate_hz),
                "{ctx}"
            );
            let channels: Vec<&str> = row[6].split(", ").collect();
            assert_eq!(
                &channels[..w.first_channels.len()],
                w.first_channels,
                "{ctx}"
            );
            if w.channel_count > 0 {
                assert_eq!(channels.len(), w.channel_count, "{ctx}");
            }
            assert!(
                channels.iter().all(|c| !c.contains('\u{FFFD}')
                    && !c.starts_with('#')
                    && !c.starts_with("AP Info")),
                "{ctx}"
            );
            assert_eq!(
                (row[7].as_str(), row[8].as_str()),
                (w.logger, w.date_from),
                "{ctx}"
            );
            // Every row counted above is there to query.
            let first = w.first_channels[0];
            let q = logs
                .query(json!({"filter": format!("exists('{first}') or not exists('{first}')"), "file": w.name, "limit": 1}))
                .await;
            assert_eq!(
                required_field(&q, "rows_matched"),
                w.rows.to_string(),
                "{ctx}\n{q}"
            );
        }
        // What a person checks in each, counted from the files by hand.
        match *dir {
            "btssm_subaru" => {
                let q = logs.query(json!({"filter": "'Boost (psi)' > 10", "file": "BtSsm_20251004_172148.csv"})).await;
                assert_eq!(required_field(&q, "rows_matched"), "259", "{q}");
                let q = logs
                    .query(json!({"filter": "RPM > 1000", "file": "BtSsm_20251008_090109.csv"}))
                    .await;
                assert_eq!(required_field(&q, "rows_matched"), "639", "{q}");
            }
            "evoscan_evo8" => {
                let q = logs.query(json!({"filter": "RPM > 3000", "file": "EvoScanDataLog_2025.11.19_18.08.43.csv"})).await;
                assert_eq!(required_field(&q, "rows_matched"), "167", "{q}");
            }
            "openport2_subaru" => {
                let q = logs.query(json!({"filter": "time > 102190", "file": "log0182.csv", "channels": ["time"]})).await;
                assert_eq!(required_field(&q, "rows_matched"), "13", "{q}");
                let (_, rows) = table(&q);
                assert_eq!(
                    rows[0][..2],
                    ["6.750", "102190.250"],
                    "time_s from the start, then the clock:\n{q}"
                );
                // The empty log is a problem, named, not a channel list.
                assert!(out.contains("problems: 1"), "{out}");
                assert!(out.contains("| log0423.csv | log0423.csv is not a log log-query understands: the file is empty |"), "{out}");
                let e = logs
                    .err(
                        "query_logs",
                        json!({"filter": "RPM > 0", "file": "log0423.csv"}),
                    )
                    .await;
                assert!(e.contains("the file is empty"), "{e}");
            }
            "romraider_5eat" => {
                // `;`-separated with decimal commas (`0,00`).
                let q = logs.query(json!({"filter": "'Accelerator Pedal Angle (%)' > 0", "file": "romraiderlog_20241016_133923.csv"})).await;
                assert_eq!(required_field(&q, "rows_matched"), "184", "{q}");
                let q = logs.query(json!({"filter": "'Gear Position (gear)' == 3", "file": "romraiderlog_20241016_133923.csv"})).await;
                assert_eq!(required_field(&q, "rows_matched"), "91", "{q}");
            }
            "other_loggers" => {
                let q = logs
                    .query(json!({"filter": "RPM > 1200", "file": "logworks.csv"}))
                    .await;
                assert_eq!(required_field(&q, "rows_matched"), "4", "{q}");
                assert!(
                    field(&q, "rows_with_errors").is_none(),
                    "the units row is not data:\n{q}"
                );
                let q = logs
                    .query(json!({"filter": "LambdaControl > 1", "file": "me7l-semicolons.csv"}))
                    .await;
                assert_eq!(required_field(&q, "rows_matched"), "1", "{q}");
                assert_eq!(times(&q), [0.1]);
                let q = logs
                    .query(json!({"filter": "'Coolant Temp. (F)' == 115", "file": "cobb-ap.csv"}))
                    .await;
                assert_eq!(required_field(&q, "rows_matched"), "3", "{q}");
            }
            _ => unreachable!(),
        }
        logs.server.stop().await;
    }
}

/// Issue 22 item 8: many small logs, a million-column header and a
/// regular expression bomb each get a bounded, clear answer.
#[tokio::test]
async fn many_logs_wide_headers_and_regex_bombs_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    for k in 0..4000 {
        std::fs::write(
            dir.path().join(format!("log{k:05}.csv")),
            format!("Time,RPM,Note\n0,{k},a\n0.1,{},b\n", k + 1),
        )
        .unwrap();
    }
    let mut wide = String::from("Time");
    for k in 0..1_000_000 {
        wide.push_str(&format!(",c{k}"));
    }
    wide.push_str("\n0\n");
    std::fs::write(dir.path().join("wide.csv"), wide).unwrap();
    let logs = Logs::start(dir.path()).await;
    let started = std::time::Instant::now();
    let mut out = logs.ok("list_logs", json!({})).await;
    // A slow machine may need more than one call; each keeps its work.
    for _ in 0..5 {
        if field(&out, "not_read_yet").is_none() {
            break;
        }
        assert!(out.contains("Call list_logs again"), "{out}");
        out = logs.ok("list_logs", json!({})).await;
    }
    assert!(field(&out, "not_read_yet").is_none(), "{out}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert_eq!(required_field(&out, "total_files"), "4001");
    assert_eq!(required_field(&out, "problems"), "1");
    assert!(
        out.lines().any(|l| l.contains("| wide.csv ")
            && l.contains(
                "wide.csv is not a log log-query understands: its header line has 1000001 columns"
            )
            && l.contains("cut -d,")),
        "{out}"
    );
    assert!(out.contains("Showing the 100 most recent of 4000 readable logs"));
    let q = logs.query(json!({"filter": "RPM > 3998"})).await;
    assert_eq!(required_field(&q, "rows_matched"), "3", "{q}");
    assert!(q.contains("Skipped 1 unreadable file: wide.csv"), "{q}");
    let bomb = format!("Note ~= \"{}\"", "(a)".repeat(40));
    let e = logs
        .err(
            "query_logs",
            json!({"filter": bomb, "file": "log00001.csv"}),
        )
        .await;
    assert!(e.contains("capture groups"), "{e}");
    let e = logs
        .err(
            "query_logs",
            json!({"filter": "Note ~= \"(?:a{1000}){1000}\"", "file": "log00001.csv"}),
        )
        .await;
    assert!(e.contains("1 MiB"), "{e}");
    logs.server.stop().await;
}

// ------------------------------------------- resources, prompts, completion

mod offers {
    use super::*;
    use rmcp::model::{
        ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
        Reference, ResourceContents,
    };

    async fn read(logs: &Logs, uri: &str) -> Result<String, String> {
        match logs
            .server
            .client
            .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
            .await
        {
            Ok(r) => match &r.contents[0] {
                ResourceContents::TextResourceContents { text, .. } => Ok(text.clone()),
                other => panic!("text expected, got {other:?}"),
            },
            Err(e) => Err(e.to_string()),
        }
    }

    async fn prompt(logs: &Logs, args: Value) -> Result<String, String> {
        let mut params = GetPromptRequestParams::new("investigate_log");
        params.arguments = args.as_object().cloned();
        match logs.server.client.get_prompt(params).await {
            Ok(p) => Ok(
                serde_json::to_value(&p.messages[0]).unwrap()["content"]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn complete(logs: &Logs, reference: Reference, arg: &str, value: &str) -> Vec<String> {
        logs.server
            .client
            .complete(CompleteRequestParams::new(
                reference,
                ArgumentInfo::new(arg, value),
            ))
            .await
            .unwrap()
            .completion
            .values
    }

    /// A YAML flow list as the frontmatter writes it (names without commas).
    fn flow_list(v: &str) -> Vec<String> {
        v.trim_start_matches('[')
            .trim_end_matches(']')
            .split(", ")
            .map(|s| s.trim_matches('"').to_owned())
            .collect()
    }

    /// Every listed log's summary says what its list_logs row says.
    async fn summaries_match_list_logs(logs: &Logs) {
        let list = logs.ok("list_logs", json!({})).await;
        let rows = markdown_rows(&list);
        assert!(rows.len() > 1, "{list}");
        for row in &rows[1..] {
            // The file name as a client expands `{file}`: all but the
            // unreserved characters percent-encoded.
            let file: String = row[1]
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            let summary = read(logs, &format!("log://{file}")).await.unwrap();
            assert_eq!(required_field(&summary, "file"), row[1]);
            assert_eq!(required_field(&summary, "index"), row[0]);
            assert_eq!(required_field(&summary, "date"), row[2]);
            assert_eq!(required_field(&summary, "duration_s"), row[3]);
            assert_eq!(required_field(&summary, "rows"), row[4]);
            assert_eq!(required_field(&summary, "sample_rate_hz"), row[5]);
            assert_eq!(
                flow_list(&required_field(&summary, "channels")).join(", "),
                row[6]
            );
            assert_eq!(required_field(&summary, "logger"), row[7]);
            assert!(summary.contains("query_logs"), "{summary}");
        }
    }

    #[tokio::test]
    async fn a_logs_summary_is_a_resource_saying_what_list_logs_says() {
        let logs = Logs::start(&sample_logs()).await;
        let templates = logs
            .server
            .client
            .list_all_resource_templates()
            .await
            .unwrap();
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].uri_template, "log://{file}");
        summaries_match_list_logs(&logs).await;
        let e = read(&logs, "log://nope.csv").await.unwrap_err();
        assert!(e.contains("UNKNOWN_FILE") && e.contains(PLAIN), "{e}");
        // A segment variable: a path is no file name.
        let e = read(&logs, "log://a/b.csv").await.unwrap_err();
        assert!(e.contains("Resource not found"), "{e}");
        logs.server.stop().await;

        // A name with a space is percent-encoded in the URI.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("my pull.csv"), "Time,RPM\n0,800\n0.5,900\n").unwrap();
        let logs = Logs::start(&dir.path().canonicalize().unwrap()).await;
        let summary = read(&logs, "log://my%20pull.csv").await.unwrap();
        assert_eq!(required_field(&summary, "file"), "my pull.csv");
        assert_eq!(required_field(&summary, "rows"), "2");
        assert_eq!(required_field(&summary, "channels"), "[RPM]");
        logs.server.stop().await;
    }

    #[tokio::test]
    async fn shared_fixture_log_summaries_match_list_logs() {
        let Some(dir) = fixtures("logs").map(|d| d.canonicalize().unwrap()) else {
            eprintln!("skipped: no ../shared/fixtures/logs");
            return;
        };
        let logs = Logs::start(&dir).await;
        summaries_match_list_logs(&logs).await;
        logs.server.stop().await;
    }

    #[tokio::test]
    async fn investigate_log_walks_through_plot_and_query() {
        let logs = Logs::start(&sample_logs()).await;
        let prompts = logs.server.client.list_all_prompts().await.unwrap();
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0].name, "investigate_log");
        let p = prompt(
            &logs,
            json!({"file": PLAIN, "channel": "Knock Sum", "question": "where does it knock?"}),
        )
        .await
        .unwrap();
        for want in [
            format!("`plot_log` with file=\"{PLAIN}\""),
            format!("`query_logs` with file=\"{PLAIN}\""),
            "filter=\"'Knock Sum' > 0\"".into(),
            "The question: where does it knock?".into(),
            "RPM, Load, Knock, Throttle".into(),
        ] {
            assert!(p.contains(&want), "{want} in\n{p}");
        }
        // The tools it names are the ones served.
        let served: Vec<String> = logs
            .server
            .tools()
            .await
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        for named in ["plot_log", "query_logs"] {
            assert!(served.iter().any(|s| s == named), "{named}");
        }
        let e = prompt(&logs, json!({"file": PLAIN, "channel": "Knok"}))
            .await
            .unwrap_err();
        assert!(
            e.contains("UNKNOWN_CHANNEL") && e.contains("did you mean `Knock`"),
            "{e}"
        );
        let e = prompt(&logs, json!({"file": "nope.csv"}))
            .await
            .unwrap_err();
        assert!(e.contains("UNKNOWN_FILE"), "{e}");
        logs.server.stop().await;
    }

    #[tokio::test]
    async fn file_and_channel_names_complete() {
        let logs = Logs::start(&sample_logs()).await;
        let files = complete(&logs, Reference::for_resource("log://{file}"), "file", "").await;
        let mut all = vec![PLAIN, EVO, ROMRAIDER];
        all.sort();
        assert_eq!(files, all);
        assert_eq!(
            complete(
                &logs,
                Reference::for_prompt("investigate_log"),
                "file",
                "ROM"
            )
            .await,
            [ROMRAIDER]
        );
        let knock = complete(
            &logs,
            Reference::for_prompt("investigate_log"),
            "channel",
            "knock",
        )
        .await;
        for want in ["Knock", "KnockSum", "Knock Sum", "Knock Count (count)"] {
            assert!(knock.iter().any(|k| k == want), "{want} in {knock:?}");
        }
        // Prefix matches first, then names that contain it.
        let sum = complete(
            &logs,
            Reference::for_prompt("investigate_log"),
            "channel",
            "sum",
        )
        .await;
        // None starts with `sum`: those containing it, sorted.
        assert_eq!(sum, ["Knock Sum", "Knock Sum (count)", "KnockSum"]);
        // Those starting with the value come first.
        let r = complete(
            &logs,
            Reference::for_prompt("investigate_log"),
            "channel",
            "rpm",
        )
        .await;
        assert_eq!(r[0], "RPM", "{r:?}");
        assert!(
            complete(
                &logs,
                Reference::for_prompt("investigate_log"),
                "question",
                ""
            )
            .await
            .is_empty()
        );
        logs.server.stop().await;
    }
}
