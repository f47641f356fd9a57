//! Issue 38: the real binary logs of `../shared/fixtures/realworld/logs`
//! (MLG v1 with and without records, Link `.llg`, EMU Black `.emublog`,
//! Emerald `.lg1` + `.lg2`) read the same whole and in pieces of any size,
//! with only the channels asked for converted; and every prefix of each file
//! and every damaged byte gives a log or a reason, never a panic.
//!
//! Skips (with a note) when the shared fixtures are absent.

use datalog::reader::{Log, Need, Trickle, read_log};
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

const EMERALD: &str = "emerald/EM Log MG ZS Turbo idle and rev";

/// A file's bytes, its companion's, its name, and a channel to ask for
/// alone.
type Case = (Vec<u8>, Option<Vec<u8>>, &'static str, &'static str);

fn files(root: &Path) -> Vec<Case> {
    let read = |f: &str| std::fs::read(root.join(f)).unwrap();
    vec![
        (read("mlg/speeduino.mlg"), None, "speeduino.mlg", "RPM"),
        (read("mlg/blank.mlg"), None, "blank.mlg", "RPM"),
        (
            read("link/linklog.llg"),
            None,
            "linklog.llg",
            "Engine Speed",
        ),
        (
            read("ecumaster/220kpa.emublog"),
            None,
            "220kpa.emublog",
            "byte_9",
        ),
        (
            read(&format!("{EMERALD}.lg1")),
            Some(read(&format!("{EMERALD}.lg2"))),
            "EM Log.lg1",
            "id20",
        ),
    ]
}

/// Everything a read produced, cell by cell (bits, so NaN tags compare).
fn dump(log: &Log) -> String {
    let mut out = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}\n",
        log.format, log.time_column, log.start_date, log.source, log.notes, log.markers
    );
    out += &format!(
        "{:?}\n",
        log.time().iter().map(|t| t.to_bits()).collect::<Vec<_>>()
    );
    for c in &log.columns {
        out += &format!(
            "{} {} {} {} {:?}\n",
            c.name,
            c.unit,
            c.loaded,
            c.decimals,
            c.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
    out
}

#[test]
fn shared_binary_logs_read_alike_whole_in_pieces_and_by_channel() {
    let Some(root) = root() else { return };
    for (bytes, companion, name, channel) in files(&root) {
        let whole = read_log(
            &bytes[..],
            bytes.len() as u64,
            name,
            &Need::All,
            companion.as_deref(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        for most in [1, 7, 4093] {
            let source = Trickle { data: &bytes, most };
            let pieces = read_log(
                source,
                bytes.len() as u64,
                name,
                &Need::All,
                companion.as_deref(),
            )
            .unwrap();
            assert_eq!(dump(&pieces), dump(&whole), "{name} in reads of {most}");
        }
        let one = read_log(
            &bytes[..],
            bytes.len() as u64,
            name,
            &Need::named([channel]),
            companion.as_deref(),
        )
        .unwrap();
        let bits = |t: &[f64]| t.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(one.time()), bits(whole.time()), "{name}");
        assert_eq!(one.rows(), whole.rows(), "{name}");
        for c in &one.columns {
            let full = whole.column(&c.name).unwrap();
            if c.name == channel
                || Some(c.name.as_str()) == one.time_column.map(|t| one.columns[t].name.as_str())
            {
                assert!(c.loaded, "{name}: {}", c.name);
                assert_eq!(
                    c.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    full.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{name}: {}",
                    c.name
                );
            } else {
                assert!(!c.loaded && c.values.is_empty(), "{name}: {}", c.name);
            }
        }
        for c in &whole.columns {
            assert_eq!(c.values.len(), whole.rows(), "{name}: {} is ragged", c.name);
        }
    }
}

#[test]
fn shared_binary_logs_cut_or_damaged_never_panic() {
    let Some(root) = root() else { return };
    for (bytes, companion, name, channel) in files(&root) {
        let started = std::time::Instant::now();
        let read = |data: &[u8], need: &Need| {
            read_log(data, data.len() as u64, name, need, companion.as_deref())
        };
        let check = |log: Result<Log, _>, what: &str| {
            if let Ok(log) = log {
                for c in log.columns.iter().filter(|c| c.loaded) {
                    assert_eq!(c.values.len(), log.rows(), "{name} {what}: {}", c.name);
                }
            }
        };
        // Prefixes: the first 64 bytes one by one, then ~100 cuts spread
        // over the rest, every channel converted.
        let step = (bytes.len() / 100).max(1);
        for cut in (0..bytes.len().min(64)).chain((64..bytes.len()).step_by(step)) {
            check(read(&bytes[..cut], &Need::All), &format!("cut at {cut}"));
        }
        // Damaged bytes: every header byte, then ~100 spread over the rest,
        // with one channel converted.
        let need = Need::named([channel]);
        let step = (bytes.len() / 100).max(1);
        for at in (0..bytes.len().min(256)).chain((256..bytes.len()).step_by(step)) {
            for value in [0x00, 0xFF, bytes[at] ^ 0x80] {
                let mut damaged = bytes.clone();
                damaged[at] = value;
                check(read(&damaged, &need), &format!("byte {at} = {value:#x}"));
            }
        }
        eprintln!("{name}: {:?}", started.elapsed());
    }
}
