//! Issue 38: list_logs and query_logs over the real logs of
//! `../shared/fixtures/realworld/logs`, pointed at the folder as a whole
//! (one subfolder per logger, as users keep them). Every log is listed with
//! its logger named; its rows, channels and (for binary logs) duration are
//! counted here from the file's own bytes, by a reading written for this
//! test (line counts for CSV, the record layout and file size for binary
//! formats), never by the reader under test; a filter over each format
//! matches the rows counted here.
//!
//! Skips (with a note) when the shared fixtures are absent.

use log_query::logs::Cache;
use log_query::query::{QueryArgs, list_logs, query_logs};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/realworld/logs");
    if dir.join("mlg/speeduino.mlg").exists() {
        Some(dir)
    } else {
        eprintln!(
            "realworld log fixtures not found at {}; skipping",
            dir.display()
        );
        None
    }
}

fn go() -> impl FnMut(u64, u64, &str) -> bool {
    |_, _, _| true
}

fn field<'a>(doc: &'a str, key: &str) -> &'a str {
    doc.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in\n{doc}"))
}

fn matched(dir: &Path, cache: &mut Cache, filter: &str, file: &str) -> usize {
    let args = QueryArgs {
        filter: filter.into(),
        file: Some(file.into()),
        limit: Some(1),
        ..Default::default()
    };
    let out = query_logs(dir, cache, &args, &mut go())
        .unwrap_or_else(|e| panic!("{file}: {filter}: {e}"));
    field(&out, "rows_matched").parse().unwrap()
}

// ---- Counting from the files, independently of the reader. ----

fn text(path: &Path) -> String {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0xFF, 0xFE]) {
        let units: Vec<u16> = raw[2..]
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    match String::from_utf8(raw) {
        Ok(t) => t,
        // Windows-1252 (COBB's degree signs): the separators are ASCII.
        Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
    }
}

/// Rows of a CSV log: lines whose first field is a number or a clock.
fn csv_rows(path: &Path) -> usize {
    text(path)
        .lines()
        .filter(|l| {
            let first = l.split([',', ';', '\t']).next().unwrap_or("");
            let first = first.trim().trim_matches('"');
            let clock =
                first.split(':').count() == 3 && first.split(':').all(|p| p.parse::<f64>().is_ok());
            !first.is_empty() && (first.parse::<f64>().is_ok() || clock)
        })
        .count()
}

/// Fields of the header line (the first line starting with `start`, or
/// line `index`), minus the columns that are not channels.
fn csv_channels(path: &Path, header: Header, sep: &str, not_channels: usize) -> usize {
    let t = text(path);
    let line = match header {
        Header::Line(k) => t.lines().nth(k).unwrap().to_string(),
        Header::Starts(s) => t.lines().find(|l| l.starts_with(s)).unwrap().to_string(),
    };
    line.split(sep).count() - not_channels
}

#[derive(Clone, Copy)]
enum Header {
    Line(usize),
    Starts(&'static str),
}

fn be16(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([b[at], b[at + 1]]))
}

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

/// An MLG's fields (type code, name), data start and record length.
struct Mlg {
    bytes: Vec<u8>,
    fields: Vec<(u8, String)>,
    data: usize,
    record: usize,
}

fn mlg(path: &Path) -> Mlg {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"MLVLG\0");
    let v2 = be16(&b, 6) == 2;
    let (data, record, count, first, size) = if v2 {
        (be32(&b, 16), be16(&b, 20), be16(&b, 22), 24, 89)
    } else {
        (be32(&b, 14), be16(&b, 18), be16(&b, 20), 22, 55)
    };
    let fields = (0..count)
        .map(|k| {
            let d = &b[first + k * size..first + (k + 1) * size];
            let name = d[1..35].split(|&c| c == 0).next().unwrap();
            (d[0], String::from_utf8_lossy(name).into_owned())
        })
        .collect();
    Mlg {
        bytes: b,
        fields,
        data,
        record,
    }
}

impl Mlg {
    /// Data blocks, each a record (the files hold no markers: checked).
    fn records(&self) -> Vec<&[u8]> {
        let block = self.record + 5;
        assert_eq!((self.bytes.len() - self.data) % block, 0);
        self.bytes[self.data..]
            .chunks(block)
            .map(|c| {
                assert_eq!(c[0], 0, "a marker or other block");
                &c[4..4 + self.record]
            })
            .collect()
    }

    fn offset(&self, name: &str) -> usize {
        let size = |t: u8| match t {
            0 | 1 | 10 => 1,
            2 | 3 | 11 => 2,
            4 | 5 | 7 | 12 => 4,
            6 => 8,
            t => panic!("type {t}"),
        };
        let k = self.fields.iter().position(|f| f.1 == name).unwrap();
        self.fields[..k].iter().map(|f| size(f.0)).sum()
    }
}

/// A PCLink channel: its name and (time, value) samples.
type Channel = (String, Vec<(f32, f32)>);

/// A PCLink log's channels and marker names.
fn link(path: &Path) -> (Vec<Channel>, Vec<String>) {
    let b = std::fs::read(path).unwrap();
    let utf16 = |s: &[u8]| {
        let u: Vec<u16> = s
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&u)
    };
    let (mut channels, mut markers) = (Vec::new(), Vec::new());
    let mut at = 0;
    while at < b.len() {
        let len = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
        let next = at + len;
        match &b[at + 4..at + 7] {
            b"ds3" => {
                let count = u32::from_le_bytes(b[at + 7..at + 11].try_into().unwrap()) as usize;
                let samples = b[next..next + 8 * count]
                    .chunks_exact(8)
                    .map(|s| {
                        let f = |i: usize| f32::from_le_bytes(s[i..i + 4].try_into().unwrap());
                        (f(0), f(4))
                    })
                    .collect();
                channels.push((utf16(&b[at + 215..at + 415]), samples));
                at = next + 8 * count;
            }
            b"lm1" => {
                markers.push(utf16(&b[at + 8..at + 208]));
                at = next;
            }
            _ => at = next,
        }
    }
    assert_eq!(at, b.len(), "chunks tile the file");
    (channels, markers)
}

fn emublog(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()),
        &mut out,
    )
    .unwrap();
    out
}

const EMERALD: &str = "emerald/EM Log MG ZS Turbo idle and rev";

/// The Emerald `.lg2`'s channel ids, slot by slot.
fn emerald_ids(root: &Path) -> Vec<u32> {
    let list = std::fs::read_to_string(root.join(format!("{EMERALD}.lg2"))).unwrap();
    let lines: Vec<&str> = list.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0].starts_with("[chan"))
        .map(|w| w[1].parse().unwrap())
        .collect()
}

/// One listed log as expected.
struct Want {
    file: String,
    logger: &'static str,
    /// The date shown, when the log or its name states one.
    date: Option<&'static str>,
    date_from: &'static str,
    rows: usize,
    channels: usize,
    /// Duration in seconds as listed, for binary logs.
    duration: Option<String>,
}

fn want(
    file: &str,
    logger: &'static str,
    date: Option<&'static str>,
    date_from: &'static str,
    rows: usize,
    channels: usize,
) -> Want {
    Want {
        file: file.into(),
        logger,
        date,
        date_from,
        rows,
        channels,
        duration: None,
    }
}

fn secs(s: f64) -> String {
    let t = format!("{s:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn expected(root: &Path) -> Vec<Want> {
    let p = |f: &str| root.join(f);
    let csv = |f: &str, logger, date, date_from, header: Header, sep: &str, not_channels: usize| {
        want(
            f,
            logger,
            date,
            date_from,
            csv_rows(&p(f)),
            csv_channels(&p(f), header, sep, not_channels),
        )
    };
    let mut all = vec![
        csv(
            "bluedriver/SBM22GCA4MW001405_Aug_17__2025_08_45_PM_LiveData.csv",
            "bluedriver",
            Some("2025-08-17 20:45"),
            "file name",
            Header::Line(2),
            ", ",
            1,
        ),
        csv(
            "btssm_subaru/BtSsm_20251004_172148.csv",
            "btssm",
            Some("2025-10-04 17:21"),
            "file name",
            Header::Line(0),
            ",",
            1,
        ),
        csv(
            "btssm_subaru/BtSsm_20251008_090109.csv",
            "btssm",
            Some("2025-10-08 09:01"),
            "file name",
            Header::Line(0),
            ",",
            1,
        ),
        csv(
            "btssm_subaru/BtSsm_20251017_180501.csv",
            "btssm",
            Some("2025-10-17 18:05"),
            "file name",
            Header::Line(0),
            ",",
            1,
        ),
        csv(
            "ecumaster/2025_1218_1904.csv",
            "ecumaster",
            Some("2025-12-18 19:04"),
            "file name",
            Header::Line(0),
            ";",
            1,
        ),
        csv(
            "evoscan_evo8/EvoScanDataLog_2014.08.17_15.22.33.csv",
            "evoscan",
            Some("2014-08-17 15:22"),
            "log",
            Header::Line(0),
            ",",
            4,
        ),
        csv(
            "evoscan_evo8/EvoScanDataLog_2025.11.19_18.08.43.csv",
            "evoscan",
            Some("2025-11-19 18:08"),
            "log",
            Header::Line(0),
            ",",
            4,
        ),
        csv(
            "openport2_subaru/log0182.csv",
            "openport",
            None,
            "file mtime",
            Header::Line(0),
            ",",
            0,
        ),
        csv(
            "other_loggers/cobb-ap.csv",
            "cobb-accessport",
            None,
            "file mtime",
            Header::Line(0),
            ",",
            2,
        ),
        csv(
            "other_loggers/logworks.csv",
            "logworks",
            None,
            "file mtime",
            Header::Line(1),
            ",",
            1,
        ),
        csv(
            "other_loggers/me7l-semicolons.csv",
            "me7logger",
            Some("2014-02-22 17:47"),
            "log",
            Header::Starts("TimeStamp"),
            ";",
            1,
        ),
        csv(
            "romraider_5eat/romraiderlog_20241016_113910_TCU5.csv",
            "romraider",
            Some("2024-10-16 11:39"),
            "file name",
            Header::Line(0),
            ";",
            1,
        ),
        csv(
            "romraider_5eat/romraiderlog_20241016_133733.csv",
            "romraider",
            Some("2024-10-16 13:37"),
            "file name",
            Header::Line(0),
            ";",
            1,
        ),
        csv(
            "romraider_5eat/romraiderlog_20241016_133923.csv",
            "romraider",
            Some("2024-10-16 13:39"),
            "file name",
            Header::Line(0),
            ";",
            1,
        ),
    ];
    // Haltech: one channel per `Channel :` declaration.
    let haltech = "haltech/2025-07-18_0215pm_Log1118.csv";
    let declared = text(&p(haltech))
        .lines()
        .filter(|l| l.starts_with("Channel : "))
        .count();
    all.push(want(
        haltech,
        "haltech",
        Some("2025-07-18 14:15"),
        "log",
        csv_rows(&p(haltech)),
        declared,
    ));
    // MLG: records from the file size and record length; channels are
    // the fields but Time.
    for (f, date) in [
        ("mlg/speeduino.mlg", "2020-09-02 01:25 UTC"),
        ("mlg/blank.mlg", "2020-12-26 19:33 UTC"),
    ] {
        let m = mlg(&p(f));
        let records = m.records();
        let mut w = want(
            f,
            "mlg",
            Some(date),
            "log",
            records.len(),
            m.fields.len() - 1,
        );
        if let (Some(a), Some(b)) = (records.first(), records.last()) {
            let t = |r: &[u8]| f32::from_be_bytes(r[..4].try_into().unwrap()) as f64;
            assert_eq!(m.fields[0].1, "Time");
            w.duration = Some(secs(t(b) - t(a)));
        }
        all.push(w);
    }
    // Link: one row per distinct sample time; the channels and a Marker.
    let (channels, markers) = link(&p("link/linklog.llg"));
    let times: BTreeSet<u32> = channels
        .iter()
        .flat_map(|c| c.1.iter().map(|s| (s.0 + 0.0).to_bits()))
        .collect();
    let (lo, hi) = channels
        .iter()
        .flat_map(|c| c.1.iter().map(|s| s.0))
        .fold((f32::MAX, f32::MIN), |(a, b), t| (a.min(t), b.max(t)));
    let mut w = want(
        "link/linklog.llg",
        "link",
        Some("2022-01-14 18:22"),
        "log",
        times.len(),
        channels.len() + usize::from(!markers.is_empty()),
    );
    w.duration = Some(secs(f64::from(hi) - f64::from(lo)));
    all.push(w);
    // EMU Black: the record count its header states, checked against the
    // inflated size; one listed channel (the counter).
    let inflated = emublog(&p("ecumaster/220kpa.emublog"));
    let records = u32::from_le_bytes(inflated[8..12].try_into().unwrap()) as usize;
    assert_eq!(inflated.len(), 12 + records * 308);
    all.push(want(
        "ecumaster/220kpa.emublog",
        "ecumaster-emublog",
        None,
        "file mtime",
        records,
        1,
    ));
    // Emerald: 24-byte records; one channel per `.lg2` slot.
    let lg1 = std::fs::read(p(&format!("{EMERALD}.lg1"))).unwrap();
    assert_eq!(lg1.len() % 24, 0);
    let date = |r: &[u8]| f64::from_le_bytes(r[..8].try_into().unwrap());
    let mut w = want(
        &format!("{EMERALD}.lg1"),
        "emerald",
        Some("2025-12-31 14:13"),
        "log",
        lg1.len() / 24,
        emerald_ids(root).len(),
    );
    w.duration = Some(secs((date(&lg1[lg1.len() - 24..]) - date(&lg1)) * 86_400.0));
    all.push(w);
    all
}

fn cells(line: &str) -> Vec<String> {
    line.split('|')
        .map(str::trim)
        .skip(1)
        .take(9)
        .map(String::from)
        .collect()
}

#[test]
fn shared_realworld_every_log_listed_from_the_whole_folder() {
    let Some(root) = root() else { return };
    let mut cache = Cache::default();
    let started = std::time::Instant::now();
    let out = list_logs(&root, &mut cache, &mut go()).unwrap();
    let cold = started.elapsed();
    let started = std::time::Instant::now();
    let again = list_logs(&root, &mut cache, &mut go()).unwrap();
    eprintln!(
        "list_logs of {}: {cold:?} cold, {:?} cached",
        root.display(),
        started.elapsed()
    );
    assert_eq!(out, again);
    let want = expected(&root);
    // Every log, plus the empty one listed under Problems.
    assert_eq!(
        field(&out, "total_files"),
        (want.len() + 1).to_string(),
        "{out}"
    );
    assert_eq!(field(&out, "problems"), "1", "{out}");
    assert!(
        out.contains("| openport2_subaru/log0423.csv | openport2_subaru/log0423.csv is not a log log-query understands: the file is empty |"),
        "{out}"
    );
    assert!(!out.contains("No log files"), "{out}");
    let rows: Vec<Vec<String>> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
        .map(cells)
        .filter(|c| c.len() == 9)
        .collect();
    for w in &want {
        let row = rows
            .iter()
            .find(|r| r[1] == w.file)
            .unwrap_or_else(|| panic!("{} not listed:\n{out}", w.file));
        let ctx = format!("{}:\n{out}", w.file);
        assert_eq!(
            (row[7].as_str(), row[8].as_str()),
            (w.logger, w.date_from),
            "{ctx}"
        );
        if let Some(d) = w.date {
            assert_eq!(row[2], d, "{ctx}");
        }
        assert_eq!(row[4], w.rows.to_string(), "{ctx}");
        let listed = if row[6].is_empty() {
            0
        } else {
            row[6].split(", ").count()
        };
        assert_eq!(listed, w.channels, "{ctx}");
        if let Some(d) = &w.duration {
            assert_eq!(&row[3], d, "{ctx}");
        }
    }
    // How the binary and new CSV formats were read is said.
    for said in [
        "- mlg/speeduino.mlg: written by MLVLG v1, speeduino 202006-dev",
        "- link/linklog.llg: written by Link G4+ Xtreme Black, PC Datalog, PCLink 5.6.8.3671; 4 markers",
        "- haltech/2025-07-18_0215pm_Log1118.csv: written by Haltech NSP",
        "- ecumaster/220kpa.emublog: written by EMU Black log, format 5; EMU Black logs carry no channel list",
        "- emerald/EM Log MG ZS Turbo idle and rev.lg1: written by Emerald K6",
    ] {
        assert!(out.contains(said), "{said}\n{out}");
    }
}

#[test]
fn shared_realworld_filters_over_each_format_match_the_rows_counted_here() {
    let Some(root) = root() else { return };
    let mut cache = Cache::default();
    let p = |f: &str| root.join(f);

    // MLG: RPM is a U16 of each record.
    let m = mlg(&p("mlg/speeduino.mlg"));
    let at = m.offset("RPM");
    let want = m.records().iter().filter(|r| be16(r, at) > 1000).count();
    assert!(want > 0 && want < m.records().len());
    assert_eq!(
        matched(&root, &mut cache, "RPM > 1000", "mlg/speeduino.mlg"),
        want
    );
    // By base name too: one log has it.
    assert_eq!(
        matched(&root, &mut cache, "RPM > 1000", "speeduino.mlg"),
        want
    );
    assert_eq!(matched(&root, &mut cache, "RPM >= 0", "mlg/blank.mlg"), 0);

    // Link: Engine Speed held at each sample time of any channel.
    let (channels, _) = link(&p("link/linklog.llg"));
    let times: Vec<f32> = channels
        .iter()
        .flat_map(|c| c.1.iter().map(|s| (s.0 + 0.0).to_bits()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let rpm = &channels.iter().find(|c| c.0 == "Engine Speed").unwrap().1;
    let want = times
        .iter()
        .filter(|&&t| {
            rpm.iter()
                .rev()
                .find(|s| s.0 <= t)
                .is_some_and(|s| s.1 > 1000.0)
        })
        .count();
    assert!(want > 0 && want < times.len());
    assert_eq!(
        matched(
            &root,
            &mut cache,
            "'Engine Speed' > 1000",
            "link/linklog.llg"
        ),
        want
    );
    assert_eq!(
        matched(
            &root,
            &mut cache,
            "Marker == \"ECU Reconnected\"",
            "link/linklog.llg"
        ),
        1
    );

    // EMU Black: the counter is the first u16 of each 308-byte record.
    let inflated = emublog(&p("ecumaster/220kpa.emublog"));
    let want = inflated[12..]
        .chunks_exact(308)
        .filter(|r| u16::from_le_bytes([r[0], r[1]]) > 30_000)
        .count();
    assert!(want > 0);
    assert_eq!(
        matched(
            &root,
            &mut cache,
            "Counter > 30000",
            "ecumaster/220kpa.emublog"
        ),
        want
    );
    let want = inflated[12..]
        .chunks_exact(308)
        .filter(|r| r[4] > 100)
        .count();
    assert_eq!(
        matched(&root, &mut cache, "byte_4 > 100", "220kpa.emublog"),
        want
    );

    // Emerald: channel id 20's slot, per the .lg2.
    let slot = emerald_ids(&root).iter().position(|&id| id == 20).unwrap();
    let lg1 = std::fs::read(p(&format!("{EMERALD}.lg1"))).unwrap();
    let want = lg1
        .chunks_exact(24)
        .filter(|r| u16::from_le_bytes([r[8 + 2 * slot], r[9 + 2 * slot]]) > 1000)
        .count();
    assert!(want > 0);
    assert_eq!(
        matched(&root, &mut cache, "id20 > 1000", &format!("{EMERALD}.lg1")),
        want
    );

    // Haltech: RPM (raw rpm) and coolant (0.1 K raw: 70 °C is 3431.5).
    let haltech = "haltech/2025-07-18_0215pm_Log1118.csv";
    let t = text(&p(haltech));
    let channels: Vec<&str> = t
        .lines()
        .filter_map(|l| l.strip_prefix("Channel : "))
        .collect();
    let column = |name: &str| 1 + channels.iter().position(|c| c.trim() == name).unwrap();
    let data: Vec<Vec<i64>> = t
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(':'))
        .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    let count = |name: &str, f: &dyn Fn(i64) -> bool| {
        let k = column(name) - 1;
        data.iter().filter(|r| f(r[k])).count()
    };
    assert_eq!(
        matched(&root, &mut cache, "RPM > 3000", haltech),
        count("RPM", &|v| v > 3000)
    );
    assert_eq!(
        matched(&root, &mut cache, "'Coolant Temperature' > 70", haltech),
        count("Coolant Temperature", &|v| v >= 3432)
    );

    // BlueDriver (UTF-16): the first channel above 0.5 V.
    let bd = "bluedriver/SBM22GCA4MW001405_Aug_17__2025_08_45_PM_LiveData.csv";
    let want = text(&p(bd))
        .lines()
        .skip(3)
        .filter(|l| {
            l.split(", ")
                .nth(1)
                .is_some_and(|v| v.parse::<f64>().unwrap() > 0.5)
        })
        .count();
    assert!(want > 0);
    assert_eq!(
        matched(
            &root,
            &mut cache,
            "'O2 Bank 2 - Sensor 2 Oxygen Sensor Voltage (V)' > 0.5",
            bd
        ),
        want
    );

    // ECUMaster CSV: engine/rpm, each empty cell holding the value above.
    let ecu = "ecumaster/2025_1218_1904.csv";
    let t = text(&p(ecu));
    let header: Vec<&str> = t.lines().next().unwrap().split(';').collect();
    let k = header.iter().position(|h| *h == "sensors/gear").unwrap();
    let mut held: Option<f64> = None;
    let mut want = 0;
    for line in t.lines().skip(1) {
        if let Some(v) = line.split(';').nth(k).filter(|v| !v.is_empty()) {
            held = Some(v.parse().unwrap());
        }
        want += usize::from(held == Some(1.0));
    }
    assert!(want > 0);
    assert_eq!(matched(&root, &mut cache, "'sensors/gear' == 1", ecu), want);
}

#[test]
fn shared_realworld_binary_logs_plot() {
    let Some(root) = root() else { return };
    let mut cache = Cache::default();
    for (file, channel, filter) in [
        ("link/linklog.llg", "Engine Speed", "'Engine Speed' > 1000"),
        ("mlg/speeduino.mlg", "RPM", "RPM > 1000"),
        (&format!("{EMERALD}.lg1") as &str, "id20", "id20 > 1000"),
        ("ecumaster/220kpa.emublog", "Counter", "Counter > 30000"),
    ] {
        let args = log_query::plot::PlotArgs {
            file: Some(file.into()),
            channels: Some(vec![channel.into()]),
            filter: Some(filter.into()),
            ..Default::default()
        };
        let plot = log_query::plot::plot_log(&root, &mut cache, &args, &mut go())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(&plot.png[..8], b"\x89PNG\r\n\x1a\n", "{file}");
        assert!(plot.caption.contains(channel), "{file}: {}", plot.caption);
    }
}
