//! Link ECU PCLink binary logs (`.llg` from G4/G4+/G4X, `.llg5` from G5).
//!
//! There is no published specification; the layout is our analysis of the
//! real files (`shared/reference/log-formats.md` §2). All little-endian, a
//! run of chunks `[u32 length incl. header][3-byte tag][body]`: `lf3` file
//! header, `ld2` log details (UTF-16 strings at fixed offsets), `lm1` one
//! marker each, `ds3` one channel each, whose `count` samples of
//! `(f32 time s, f32 value)` follow the chunk.
//!
//! Channels carry their own time bases (PC logs store a sample only when a
//! value changes), so they are merged onto the union of all sample times,
//! each holding its last value: what PCLink's graph shows at each instant.

use super::{BinaryError, Parts, f32_decimal, read_exact_part, read_full, utf16_string};
use crate::format::Format;
use crate::log::{Log, Marker, Need};

/// Bytes of a chunk header (length and tag).
const CHUNK_HEADER: usize = 7;
/// A `ds3` chunk's own length (its samples follow it).
const DS3_LEN: usize = 645;
/// Body of an `lm1` marker chunk at least (flag, name, f64 time).
const LM1_LEN: usize = 216;
/// Longest header, details or marker chunk read (the real ones are 215,
/// 7207 and 433 bytes).
const MAX_CHUNK: usize = 1 << 20;
/// Most samples read from one log (128 MiB of them).
const MAX_SAMPLES: u64 = 16 << 20;
/// Most channels.
const MAX_CHANNELS: usize = crate::plan::MAX_COLUMNS;
/// Most markers kept.
const MAX_MARKERS: usize = 100_000;

/// True when `head` starts like a PCLink log: a chunk length, then `lf3`.
pub fn is_link(head: &[u8]) -> bool {
    head.len() >= CHUNK_HEADER
        && &head[4..7] == b"lf3"
        && u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize >= CHUNK_HEADER
}

/// One channel as read.
struct Channel {
    name: String,
    unit: String,
    /// (time, value) of each sample, kept for the channels asked for.
    samples: Option<Vec<(f32, f32)>>,
}

fn bad(why: impl Into<String>) -> BinaryError {
    BinaryError::BadHeader {
        format: "Link PCLink",
        why: why.into(),
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads a PCLink log from its first byte.
pub(crate) fn read(mut src: impl std::io::Read, need: &Need) -> Result<Log, BinaryError> {
    let mut parts = Parts::new(Format::Link);
    let mut channels: Vec<Channel> = Vec::new();
    let mut all_times: Vec<f32> = Vec::new();
    let mut marks: Vec<(f64, String)> = Vec::new();
    let mut details: Option<Vec<u8>> = None;
    let mut total: u64 = 0;
    let mut at: u64 = 0;
    let mut bad_times = 0usize;
    let mut sample_buf = vec![0u8; 8 * 8192];
    loop {
        let mut header = [0u8; CHUNK_HEADER];
        let mut got = 0;
        if !read_full(&mut src, &mut header, &mut got)? {
            if got > 0 {
                parts.notes.push(format!(
                    "the file ends with {got} stray bytes at byte {at}; ignored"
                ));
            }
            break;
        }
        let len = le_u32(&header, 0) as usize;
        let tag = [header[4], header[5], header[6]];
        if at == 0 && &tag != b"lf3" {
            return Err(bad("it does not start with an `lf3` header chunk"));
        }
        if !(CHUNK_HEADER..=MAX_CHUNK).contains(&len) {
            return Err(bad(format!(
                "the chunk at byte {at} states a length of {len} bytes"
            )));
        }
        let body = read_exact_part(
            &mut src,
            len - CHUNK_HEADER,
            &format!("the `{}` chunk at byte {at}", String::from_utf8_lossy(&tag)),
        )?;
        at += len as u64;
        match &tag {
            b"lf3" => {}
            b"ld2" => details = Some(body),
            b"lm1" => {
                if len < LM1_LEN {
                    return Err(bad(format!("the marker chunk at byte {at} is {len} bytes")));
                }
                let name = utf16_string(&body[1..201]);
                let time = f64::from_le_bytes(body[201..209].try_into().unwrap_or_default());
                if marks.len() < MAX_MARKERS && time.is_finite() {
                    marks.push((time, name));
                }
            }
            b"ds3" => {
                if len < DS3_LEN {
                    return Err(bad(format!(
                        "the channel chunk at byte {} is {len} bytes, less than {DS3_LEN}",
                        at - len as u64
                    )));
                }
                if channels.len() == MAX_CHANNELS {
                    return Err(BinaryError::TooLarge {
                        what: "channels",
                        count: MAX_CHANNELS as u64 + 1,
                        limit: MAX_CHANNELS as u64,
                    });
                }
                let count = u64::from(le_u32(&body, 0));
                total = total.saturating_add(count);
                if total > MAX_SAMPLES {
                    return Err(BinaryError::TooLarge {
                        what: "samples",
                        count: total,
                        limit: MAX_SAMPLES,
                    });
                }
                let name = utf16_string(&body[208..408]).trim().to_string();
                let unit = utf16_string(&body[408..608]).trim().to_string();
                let name = if name.is_empty() {
                    format!("Channel {}", le_u32(&body, 204))
                } else {
                    name
                };
                let keep = need.wants(&name);
                // Grown as samples arrive: a damaged count must not reserve memory.
                let mut samples = keep.then(|| Vec::with_capacity((count as usize).min(1 << 16)));
                let mut left = count as usize;
                while left > 0 {
                    let n = left.min(sample_buf.len() / 8);
                    let part = &mut sample_buf[..n * 8];
                    if !read_full(&mut src, part, &mut got)? {
                        return Err(BinaryError::Truncated {
                            what: format!("the samples of channel `{name}`"),
                            need: count * 8,
                            have: ((count as usize - left) * 8 + got) as u64,
                        });
                    }
                    for s in part.chunks_exact(8) {
                        let t = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                        let v = f32::from_le_bytes([s[4], s[5], s[6], s[7]]);
                        if !t.is_finite() {
                            bad_times += 1;
                            continue;
                        }
                        all_times.push(t);
                        if let Some(samples) = &mut samples {
                            samples.push((t, v));
                        }
                    }
                    left -= n;
                }
                at += count * 8;
                channels.push(Channel {
                    name,
                    unit,
                    samples,
                });
            }
            other => {
                parts.notes.push(format!(
                    "reading stopped at byte {} at a chunk of unknown kind `{}`; the rest of \
                     the file is not read",
                    at - len as u64,
                    String::from_utf8_lossy(other)
                ));
                break;
            }
        }
    }
    if bad_times > 0 {
        parts.notes.push(format!(
            "{bad_times} samples with no valid time are skipped"
        ));
    }
    if let Some(d) = &details {
        describe(&mut parts, d);
    }

    // The timeline: every distinct sample time, in order.
    all_times.sort_by(f32::total_cmp);
    all_times.dedup_by(|a, b| a == b);
    if all_times.len() > super::MAX_ROWS {
        return Err(BinaryError::TooLarge {
            what: "distinct sample times",
            count: all_times.len() as u64,
            limit: super::MAX_ROWS as u64,
        });
    }
    let rows = all_times.len();
    let names = super::unique_names(channels.iter().map(|c| c.name.clone()).collect());
    let mut time_col = super::column("Time", "s", &Need::All);
    for &t in &all_times {
        match f32_decimal(t) {
            Some((v, d)) => time_col.push_num(v, d),
            None => time_col.push_null(),
        }
    }
    parts.time = time_col.values.clone();
    parts.columns.push(time_col);
    parts.time_column = Some(0);
    for (ch, name) in channels.iter_mut().zip(&names) {
        let mut col = super::column(name, &ch.unit, need);
        col.loaded = ch.samples.is_some();
        parts.columns.push(col);
    }
    super::check_cells(rows, &parts.columns)?;
    for (k, ch) in channels.iter_mut().enumerate() {
        let Some(samples) = ch.samples.as_mut() else {
            continue;
        };
        // Stable: equal times keep file order, so the last one written wins.
        if !samples.is_sorted_by(|a, b| a.0 <= b.0) {
            samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let col = &mut parts.columns[k + 1];
        let mut j = 0;
        for &t in &all_times {
            while j < samples.len() && samples[j].0 <= t {
                j += 1;
            }
            match j.checked_sub(1).and_then(|i| f32_decimal(samples[i].1)) {
                Some((v, d)) => col.push_num(v, d),
                None => col.push_null(),
            }
        }
    }
    for (time, text) in marks {
        // The first row at the marker's time (the rows are in time order);
        // a marker after the last sample belongs to the last row.
        let row = parts
            .time
            .partition_point(|&t| t < time - 1e-6)
            .min(rows.saturating_sub(1));
        if rows > 0 {
            parts.markers.push(Marker {
                time_s: time,
                row,
                text,
            });
        }
    }
    parts.add_marker_column(need);
    Ok(parts.into_log())
}

/// The ECU, software and start date from the `ld2` chunk's strings (at
/// fixed offsets from the chunk's start).
fn describe(parts: &mut Parts, body: &[u8]) {
    // Offsets in the file minus the 215-byte `lf3` chunk before `ld2`,
    // minus the 7-byte chunk header.
    let text = |file_offset: usize| -> String {
        let at = file_offset - 215 - CHUNK_HEADER;
        body.get(at..at + 200)
            .map(utf16_string)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let model = text(0x336);
    let date = text(0x1786);
    let time = text(0x184E);
    let software = text(0x1916);
    let kind = text(0x1AA6);
    let title = text(0x1C36);
    let mut about = format!("Link {}", if model.is_empty() { "ECU" } else { &model });
    let what = if kind.is_empty() {
        title.split(" - ").next().unwrap_or("").trim().to_string()
    } else {
        kind
    };
    if !what.is_empty() {
        about.push_str(&format!(", {what}"));
    }
    if !software.is_empty() {
        about.push_str(&format!(", PCLink {software}"));
    }
    parts.source = Some(plugin_kit::text::head(&about, 120));
    parts.start_date = crate::dates::loose_date_time(&format!("{date} {time}"))
        .or_else(|| crate::dates::loose_date_time(&title));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::column::Cell;

    fn chunk(tag: &[u8; 3], body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 7) as u32).to_le_bytes().to_vec();
        out.extend(tag);
        out.extend(body);
        out
    }

    fn utf16(s: &str, len: usize) -> Vec<u8> {
        let mut out: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        out.resize(len, 0);
        out
    }

    /// A channel of a test file: name, unit, (time, value) samples.
    pub(crate) type TestChannel<'a> = (&'a str, &'a str, &'a [(f32, f32)]);

    /// A PCLink file: `channels` are (name, unit, samples), `markers` (name,
    /// time), the details chunk naming the ECU and the date.
    pub(crate) fn llg(channels: &[TestChannel], markers: &[(&str, f64)]) -> Vec<u8> {
        let mut lf3 = vec![0u8; 208];
        lf3[0] = 0xE5;
        lf3[204..208].copy_from_slice(&4u32.to_le_bytes());
        let mut out = chunk(b"lf3", &lf3);
        let mut ld2 = vec![0u8; 7200];
        for (offset, s) in [
            (0x336, "G4+ Xtreme Black"),
            (0x1786, "1/14/2022"),
            (0x184E, "6:22:19 PM"),
            (0x1916, "5.6.8.3671"),
            (0x1AA6, "PC Datalog"),
        ] {
            let at = offset - 222;
            ld2[at..at + 200].copy_from_slice(&utf16(s, 200));
        }
        out.extend(chunk(b"ld2", &ld2));
        for (name, time) in markers {
            let mut m = vec![0u8; 426];
            m[1..201].copy_from_slice(&utf16(name, 200));
            m[201..209].copy_from_slice(&time.to_le_bytes());
            out.extend(chunk(b"lm1", &m));
        }
        for (k, (name, unit, samples)) in channels.iter().enumerate() {
            let mut d = vec![0u8; 638];
            d[0..4].copy_from_slice(&(samples.len() as u32).to_le_bytes());
            d[204..208].copy_from_slice(&(1000 + k as u32).to_le_bytes());
            d[208..408].copy_from_slice(&utf16(name, 200));
            d[408..608].copy_from_slice(&utf16(unit, 200));
            out.extend(chunk(b"ds3", &d));
            for (t, v) in *samples {
                out.extend(t.to_le_bytes());
                out.extend(v.to_le_bytes());
            }
        }
        out
    }

    #[test]
    fn channels_merge_onto_every_sample_time_holding_values() {
        let file = llg(
            &[
                (
                    "Engine Speed",
                    "RPM",
                    &[(-1.5, 800.0), (0.0, 850.0), (2.0, 3000.0)],
                ),
                ("ECT", " °C", &[(0.0, 80.5), (2.0, 81.0)]),
                ("Inj Duty Cycle", " %", &[(1.0, 12.5)]),
            ],
            &[("PC Logged Data", 0.0), ("EOL", 2.0)],
        );
        let log = read(&file[..], &Need::All).unwrap();
        assert_eq!(log.format, Format::Link);
        assert_eq!(log.time(), [-1.5, 0.0, 1.0, 2.0]);
        assert_eq!(
            log.channels(),
            ["Engine Speed", "ECT", "Inj Duty Cycle", "Marker"]
        );
        let rpm = log.column("Engine Speed").unwrap();
        assert_eq!(rpm.unit, "RPM");
        assert_eq!(
            (0..4).map(|r| rpm.cell(r)).collect::<Vec<_>>(),
            [800.0, 850.0, 850.0, 3000.0].map(Cell::Num)
        );
        let ect = log.column("ECT").unwrap();
        assert_eq!(ect.unit, "°C");
        assert_eq!(ect.cell(0), Cell::Null);
        assert_eq!(ect.cell(2), Cell::Num(80.5));
        assert_eq!(
            log.column("Inj Duty Cycle").unwrap().cell(3),
            Cell::Num(12.5)
        );
        assert_eq!(
            log.column("Marker").unwrap().cell(1),
            Cell::Str("PC Logged Data")
        );
        assert_eq!(log.column("Marker").unwrap().cell(3), Cell::Str("EOL"));
        assert_eq!(log.duration_s(), Some(3.5));
        assert_eq!(
            log.source.as_deref(),
            Some("Link G4+ Xtreme Black, PC Datalog, PCLink 5.6.8.3671")
        );
        let d = crate::logs::LogDate::local(log.start_date.unwrap());
        assert_eq!(d.display(), "2022-01-14 18:22");
        // Only the channels asked for keep values; rows stay the same.
        let some = read(&file[..], &Need::named(["ECT"])).unwrap();
        assert_eq!(some.rows(), 4);
        assert!(!some.column("Engine Speed").unwrap().loaded);
    }

    #[test]
    fn damaged_files_are_refused_or_noted() {
        let file = llg(&[("RPM", "", &[(0.0, 1.0), (1.0, 2.0)])], &[]);
        // Samples cut short.
        let e = read(&file[..file.len() - 4], &Need::All).unwrap_err();
        assert!(e.to_string().contains("samples of channel `RPM`"), "{e}");
        // A chunk length of zero.
        let mut f = file.clone();
        f[215..219].copy_from_slice(&0u32.to_le_bytes());
        assert!(
            read(&f[..], &Need::All)
                .unwrap_err()
                .to_string()
                .contains("length of 0")
        );
        // A sample count past the limit is refused before reading.
        let mut f = file.clone();
        let ds3 = f.len() - 16 - 645;
        f[ds3 + 7..ds3 + 11].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            read(&f[..], &Need::All),
            Err(BinaryError::TooLarge {
                what: "samples",
                ..
            })
        ));
        // Unknown chunks stop the read with a note.
        let mut f = file.clone();
        f.extend(chunk(b"zz9", &[0; 4]));
        let log = read(&f[..], &Need::All).unwrap();
        assert_eq!(log.rows(), 2);
        assert!(log.notes[0].contains("`zz9`"), "{:?}", log.notes);
    }
}
