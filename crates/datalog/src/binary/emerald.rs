//! Emerald K6/M3D logs: one log in two files. The `.lg1` holds fixed
//! 24-byte records and no header: an f64 LE OLE Automation date (days since
//! 1899-12-30, the PC's local time) and eight u16 LE values; the `.lg2`
//! beside it is an INI-like list naming the channel id of each of the eight
//! slots (`[chan1]` then `19` on the next line, …).
//!
//! Which quantity, unit and scale each id stands for is not published (a
//! table reverse-engineered elsewhere gives this file's battery as 23 V), so
//! values stay raw and channels are named by id (`id19`).
//!
//! The records carry no magic number: a file is taken for one when its
//! first records hold plausible, increasing dates, whatever its name
//! (Emerald logs turn up renamed, e.g. `.daq`).

use super::{BinaryError, Parts, read_full, round_to};
use crate::format::Format;
use crate::log::{Log, Need};

/// How an AEMdata `.daq` starts (it is not an Emerald log, despite the word).
pub const AEM_MAGIC: &[u8] = b"EMERALD v1.00 file";
/// Bytes of one record.
const RECORD: usize = 24;
/// Values per record.
const SLOTS: usize = 8;
/// OLE dates believed: 1990-01-01 to 2100-01-01.
const OLE_RANGE: std::ops::RangeInclusive<f64> = 32_874.0..=73_051.0;
/// Days from the OLE epoch (1899-12-30) to the Unix one.
const OLE_UNIX_DAYS: f64 = 25_569.0;
/// Longest channel list read.
const MAX_LIST: usize = 64 << 10;

fn ole_date(record: &[u8]) -> f64 {
    f64::from_le_bytes(record[..8].try_into().unwrap_or_default())
}

/// True when `head` starts with Emerald records: a plausible first date
/// and, when a second record is there, a date within a day after it.
pub fn looks_like(head: &[u8]) -> bool {
    if head.len() < RECORD {
        return false;
    }
    let first = ole_date(head);
    if !OLE_RANGE.contains(&first) {
        return false;
    }
    head.len() < 2 * RECORD || {
        let second = ole_date(&head[RECORD..]);
        second >= first && second - first <= 1.0
    }
}

/// The channel id of each slot, from a `.lg2` list (`None` where the list
/// names none).
pub fn channel_ids(list: &[u8]) -> [Option<u32>; SLOTS] {
    let text = String::from_utf8_lossy(&list[..list.len().min(MAX_LIST)]);
    let mut ids = [None; SLOTS];
    let mut slot: Option<usize> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            slot = section
                .to_ascii_lowercase()
                .strip_prefix("chan")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=SLOTS).contains(n))
                .map(|n| n - 1);
        } else if let Some(k) = slot.take() {
            ids[k] = line.parse().ok();
        }
    }
    ids
}

/// Reads an `.lg1` from its first byte; `list` is its `.lg2`, when found.
pub(crate) fn read(
    mut src: impl std::io::Read,
    file_name: &str,
    need: &Need,
    list: Option<&[u8]>,
) -> Result<Log, BinaryError> {
    let mut parts = Parts::new(Format::Emerald);
    let ids = list.map(channel_ids);
    let names: Vec<String> = (0..SLOTS)
        .map(|k| match ids.and_then(|ids| ids[k]) {
            Some(id) => format!("id{id}"),
            None => format!("chan{}", k + 1),
        })
        .collect();
    let names = super::unique_names(names);
    let mut time_col = super::column("Time", "s", &Need::All);
    let mut columns: Vec<_> = names.iter().map(|n| super::column(n, "", need)).collect();
    let mut record = [0u8; RECORD];
    let cap = super::row_cap(&columns);
    let mut first: Option<f64> = None;
    let mut bad_dates = 0usize;
    let mut rows = 0usize;
    loop {
        let mut got = 0;
        if !read_full(&mut src, &mut record, &mut got)? {
            if got > 0 {
                parts.notes.push(format!(
                    "the file ends with {got} bytes, less than a {RECORD}-byte record; ignored"
                ));
            }
            break;
        }
        let date = ole_date(&record);
        if rows == 0 && !OLE_RANGE.contains(&date) {
            return Err(BinaryError::BadHeader {
                format: "Emerald",
                why: format!(
                    "its first record's date ({date}) is no OLE date between 1990 and 2100: \
                     not an Emerald .lg1 log"
                ),
            });
        }
        if rows == cap && cap < super::MAX_ROWS {
            super::check_cells(rows + 1, &columns)?;
        }
        if rows == super::MAX_ROWS {
            parts.notes.push(format!(
                "only the first {} records are read",
                super::MAX_ROWS
            ));
            break;
        }
        let t0 = *first.get_or_insert(date);
        if OLE_RANGE.contains(&date) {
            // OLE dates hold milliseconds to about a microsecond.
            time_col.push_num(round_to((date - t0) * 86_400.0, 3), 3);
        } else {
            bad_dates += 1;
            time_col.push_null();
        }
        for (k, c) in columns.iter_mut().enumerate() {
            if c.loaded {
                let v = u16::from_le_bytes([record[8 + 2 * k], record[9 + 2 * k]]);
                c.push_num(f64::from(v), 0);
            }
        }
        rows += 1;
    }
    if bad_dates > 0 {
        parts
            .notes
            .push(format!("{bad_dates} records hold no valid date (no time)"));
    }
    if let Some(d) = first {
        parts.start_date = Some(((d - OLE_UNIX_DAYS) * 86_400.0).floor() as i64);
    }
    match ids {
        Some(_) => parts.notes.push(
            "Emerald channels are named by the ids of the .lg2 list (id19 = channel id 19) \
             with raw values: which quantity, unit and scale each id is, is not published."
                .into(),
        ),
        None => parts.notes.push(format!(
            "no readable .lg2 channel list beside {}: channels are named by slot (chan1…chan8) \
             with raw values; put the .lg2 written with it in the same folder",
            file_name.rsplit('/').next().unwrap_or(file_name)
        )),
    }
    parts.source = Some("Emerald K6 (.lg1 records, .lg2 channel list)".into());
    parts.time = time_col.values.clone();
    parts.columns.push(time_col);
    parts.columns.extend(columns);
    parts.time_column = Some(0);
    Ok(parts.into_log())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::column::Cell;

    /// An `.lg1` of `n` records 50 ms apart from 2025-12-31 14:13:20, slot k
    /// holding `row * 10 + k`.
    pub(crate) fn lg1(n: usize) -> Vec<u8> {
        let start = 46_022.0 + (14.0 * 3600.0 + 13.0 * 60.0 + 20.0) / 86_400.0;
        let mut out = Vec::new();
        for r in 0..n {
            out.extend((start + r as f64 * 0.05 / 86_400.0).to_le_bytes());
            for k in 0..SLOTS {
                out.extend(((r * 10 + k) as u16).to_le_bytes());
            }
        }
        out
    }

    pub(crate) const LG2: &[u8] =
        b"[chan1]\r\n19\r\n[chan2]\r\n46\r\n[chan3]\r\n2\r\n[chan4]\r\n20\r\n[chan5]\r\n1\r\n[chan6]\r\n31\r\n[chan7]\r\n32\r\n[chan8]\r\n17\r\n[ValU]\r\n0\r\n2\r\n0\r\n0\r\n0\r\n";

    #[test]
    fn records_read_with_the_channel_list() {
        let file = lg1(21);
        assert!(looks_like(&file));
        let log = read(&file[..], "EM Log.lg1", &Need::All, Some(LG2)).unwrap();
        assert_eq!(log.format, Format::Emerald);
        assert_eq!(log.rows(), 21);
        assert_eq!(
            log.channels(),
            ["id19", "id46", "id2", "id20", "id1", "id31", "id32", "id17"]
        );
        assert_eq!(log.column("id20").unwrap().cell(2), Cell::Num(23.0));
        assert_eq!(log.time()[20], 1.0);
        assert!((log.sample_rate_hz().unwrap() - 20.0).abs() < 1e-9);
        let d = crate::logs::LogDate::local(log.start_date.unwrap());
        assert_eq!(d.display(), "2025-12-31 14:13");
        // Without its list: slots, and a note saying what to do.
        let log = read(&file[..], "EM Log.lg1", &Need::All, None).unwrap();
        assert_eq!(log.channels()[0], "chan1");
        assert!(log.notes[0].contains("no readable .lg2"), "{:?}", log.notes);
    }

    #[test]
    fn lists_and_records_that_are_not_emeralds() {
        assert_eq!(
            channel_ids(b"[chan2]\n7\n[chan9]\n5\n[chanX]\n3\n[chan1]\nnope\n"),
            [None, Some(7), None, None, None, None, None, None]
        );
        assert!(!looks_like(b"Time,RPM,AFR,Knock,Boost\n0,1,2,3\n"));
        assert!(!looks_like(&[0u8; 48]));
        let mut file = lg1(3);
        // Dates going back a year are not a log's records.
        file[24..32].copy_from_slice(&40_000.0f64.to_le_bytes());
        assert!(!looks_like(&file));
        let e = read(&[0u8; 48][..], "x.lg1", &Need::All, None).unwrap_err();
        assert!(e.to_string().contains("no OLE date"), "{e}");
        // A trailing partial record is a note.
        let mut file = lg1(3);
        file.extend([1, 2, 3]);
        let log = read(&file[..], "x.lg1", &Need::All, Some(LG2)).unwrap();
        assert_eq!(log.rows(), 3);
        assert!(log.notes[0].contains("3 bytes"), "{:?}", log.notes);
    }
}
