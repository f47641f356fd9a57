//! MegaLogViewer binary logs (`MLVLG`, versions 1 and 2), as TunerStudio
//! writes them for MegaSquirt and Speeduino and rusEFI writes them itself.
//!
//! Layout (all big-endian): a header (22 bytes in v1, 24 in v2: version,
//! Unix start time, info-text offset, data offset, record length, field
//! count), one descriptor per field (55 bytes in v1, 89 in v2: type, name,
//! units, display style, scale, transform, digits, v2 category), then
//! blocks: `[type, counter, u16 time stamp in 10 µs]` followed by a record
//! (the fields in order and a one-byte sum) or a 50-byte marker message.
//! Values are `(raw + transform) × scale`.

use super::{BinaryError, Parts, c_string, f32_decimal, read_exact_part, read_full, round_to};
use crate::format::{DateKind, Format};
use crate::log::{Log, Marker, Need};

/// The first six bytes of every MLG file.
pub const MAGIC: &[u8] = b"MLVLG\0";
/// Bytes of a marker block's message.
const MARKER_LEN: usize = 50;
/// Most markers kept (a marker per record would be a broken file).
const MAX_MARKERS: usize = 100_000;
/// Info text kept at most (a v2 file can hold a whole tune there; only the
/// first lines, naming the firmware, are used).
const MAX_INFO: usize = 4096;

/// How one field's value is stored.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Storage {
    U8,
    S8,
    U16,
    S16,
    U32,
    S32,
    S64,
    F32,
}

impl Storage {
    /// The storage of a descriptor's type code (bit fields keep their
    /// bits as an unsigned number).
    fn of(code: u8) -> Option<Storage> {
        Some(match code {
            0 | 10 => Storage::U8,
            1 => Storage::S8,
            2 | 11 => Storage::U16,
            3 => Storage::S16,
            4 | 12 => Storage::U32,
            5 => Storage::S32,
            6 => Storage::S64,
            7 => Storage::F32,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Storage::U8 | Storage::S8 => 1,
            Storage::U16 | Storage::S16 => 2,
            Storage::U32 | Storage::S32 | Storage::F32 => 4,
            Storage::S64 => 8,
        }
    }
}

/// One field descriptor.
#[derive(Debug, Clone)]
struct Field {
    name: String,
    unit: String,
    storage: Storage,
    /// Bit fields are not scaled.
    scaled: bool,
    scale: (f64, u8),
    transform: (f64, u8),
    /// Fraction digits MegaLogViewer shows (none for bit fields).
    digits: Option<u8>,
    /// Offset of the value in a record.
    offset: usize,
}

impl Field {
    /// The value of this field in `record`, as its decimal, or `None`
    /// (a NaN or infinite float).
    fn value(&self, record: &[u8]) -> Option<(f64, u8)> {
        let b = &record[self.offset..self.offset + self.storage.size()];
        let raw: (f64, u8) = match self.storage {
            Storage::U8 => (f64::from(b[0]), 0),
            Storage::S8 => (f64::from(b[0] as i8), 0),
            Storage::U16 => (f64::from(u16::from_be_bytes([b[0], b[1]])), 0),
            Storage::S16 => (f64::from(i16::from_be_bytes([b[0], b[1]])), 0),
            Storage::U32 => (f64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])), 0),
            Storage::S32 => (f64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])), 0),
            Storage::S64 => (
                i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f64,
                0,
            ),
            Storage::F32 => f32_decimal(f32::from_be_bytes([b[0], b[1], b[2], b[3]]))?,
        };
        if !self.scaled || (self.scale.0 == 1.0 && self.transform.0 == 0.0) {
            return Some(raw);
        }
        // Decimal places add up as they would on paper; rounding to them
        // gives the value MegaLogViewer shows, not 14.700000000000001.
        let decimals = (raw.1.max(self.transform.1) + self.scale.1).min(12);
        let v = (raw.0 + self.transform.0) * self.scale.0;
        v.is_finite().then(|| (round_to(v, decimals), decimals))
    }
}

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_f32(b: &[u8], at: usize) -> f32 {
    f32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn bad(why: impl Into<String>) -> BinaryError {
    BinaryError::BadHeader {
        format: "MLG",
        why: why.into(),
    }
}

/// Reads an MLG log from its first byte.
pub(crate) fn read(mut src: impl std::io::Read, need: &Need) -> Result<Log, BinaryError> {
    let fixed = read_exact_part(&mut src, 8, "the MLG header")?;
    if !fixed.starts_with(MAGIC) {
        return Err(bad("it does not start with `MLVLG`"));
    }
    let version = i16::from_be_bytes([fixed[6], fixed[7]]);
    let (rest_len, field_len) = match version {
        1 => (14, 55),
        2 => (16, 89),
        v => {
            return Err(BinaryError::UnsupportedVersion {
                format: "MLG",
                version: v.into(),
            });
        }
    };
    let rest = read_exact_part(&mut src, rest_len, "the MLG header")?;
    let stamp = be_u32(&rest, 0);
    let (info_start, data_begin, record_len, count) = if version == 1 {
        (
            u64::from(be_u16(&rest, 4)),
            u64::from(be_u32(&rest, 6)),
            usize::from(be_u16(&rest, 10)),
            usize::from(be_u16(&rest, 12)),
        )
    } else {
        (
            u64::from(be_u32(&rest, 4)),
            u64::from(be_u32(&rest, 8)),
            usize::from(be_u16(&rest, 12)),
            usize::from(be_u16(&rest, 14)),
        )
    };
    let header_len = 8 + rest_len as u64;
    // A u16 count of descriptors is at most 65535 × 89 bytes: bounded.
    let fields_end = header_len + (count * field_len) as u64;
    if data_begin < fields_end {
        return Err(bad(format!(
            "its data starts at byte {data_begin}, inside its {count} field descriptors \
             (which end at byte {fields_end})"
        )));
    }
    let descriptors = read_exact_part(
        &mut src,
        count * field_len,
        &format!("the MLG field list ({count} fields)"),
    )?;
    let mut fields = Vec::with_capacity(count);
    let mut offset = 0usize;
    for (k, d) in descriptors.chunks_exact(field_len).enumerate() {
        let code = d[0];
        let storage = Storage::of(code).ok_or_else(|| {
            bad(format!(
                "field {} (`{}`) has type code {code}, which is none of MLG's (0–7, 10–12)",
                k + 1,
                c_string(&d[1..35])
            ))
        })?;
        let scaled = code < 10;
        let decimal = |v: f32| f32_decimal(v).unwrap_or((1.0, 0));
        fields.push(Field {
            name: c_string(&d[1..35]).trim().to_string(),
            unit: c_string(&d[35..45]).trim().to_string(),
            storage,
            scaled,
            scale: if scaled {
                decimal(be_f32(d, 46))
            } else {
                (1.0, 0)
            },
            transform: if scaled {
                f32_decimal(be_f32(d, 50)).unwrap_or((0.0, 0))
            } else {
                (0.0, 0)
            },
            digits: u8::try_from(d[54] as i8)
                .ok()
                .filter(|&n| scaled && n <= 12),
            offset,
        });
        offset += storage.size();
    }
    if offset != record_len {
        return Err(bad(format!(
            "its header says records are {record_len} bytes but its {count} fields add up to \
             {offset}"
        )));
    }
    // Bit-field names, then the info text (offset 0 when there is none, as
    // rusEFI writes it), up to the first data block.
    let mut at = fields_end;
    let mut info = Vec::new();
    if info_start >= fields_end && info_start < data_begin {
        if !super::skip(&mut src, info_start - at)? {
            return Err(truncated_before_data(data_begin));
        }
        let len = (data_begin - info_start) as usize;
        let keep = len.min(MAX_INFO);
        info = read_exact_part(&mut src, keep, "the MLG info text")?;
        at = info_start + keep as u64;
    }
    if !super::skip(&mut src, data_begin - at)? {
        return Err(truncated_before_data(data_begin));
    }

    let mut parts = Parts::new(Format::Mlg);
    parts.source = Some(source_of(version, &info));
    if stamp != 0 {
        parts.start_date = Some(i64::from(stamp));
        parts.date_kind = DateKind::Utc;
    }
    let names = super::unique_names(fields.iter().map(|f| f.name.clone()).collect());
    let time_field = names.iter().position(|n| n.eq_ignore_ascii_case("time"));
    let mut columns: Vec<_> = names
        .iter()
        .zip(&fields)
        .map(|(n, f)| super::column(n, &f.unit, need))
        .collect();
    if let Some(t) = time_field {
        columns[t].loaded = true;
    }
    let loaded: Vec<usize> = (0..fields.len()).filter(|&k| columns[k].loaded).collect();
    let cap = super::row_cap(&columns);

    let mut block = vec![0u8; 4 + record_len + 1];
    let mut stamps: Vec<u16> = Vec::new();
    let mut rows = 0usize;
    let mut bad_sums = 0usize;
    let mut pending: Vec<String> = Vec::new();
    let mut markers_dropped = 0usize;
    loop {
        let mut got = 0;
        if !read_full(&mut src, &mut block[..4], &mut got)? {
            if got > 0 {
                parts.notes.push(format!(
                    "the last block is cut short ({got} bytes); ignored"
                ));
            }
            break;
        }
        match block[0] {
            0 => {
                if !read_full(&mut src, &mut block[4..], &mut got)? {
                    parts.notes.push(format!(
                        "the last record is cut short ({} of {} bytes); ignored",
                        got + 4,
                        block.len()
                    ));
                    break;
                }
                if rows == super::MAX_ROWS {
                    parts.notes.push(format!(
                        "only the first {} records are read",
                        super::MAX_ROWS
                    ));
                    break;
                }
                if rows == cap {
                    super::check_cells(rows + 1, &columns)?;
                }
                let record = &block[4..4 + record_len];
                let sum = record.iter().fold(0u8, |s, &b| s.wrapping_add(b));
                if sum != block[4 + record_len] {
                    bad_sums += 1;
                }
                for &k in &loaded {
                    match fields[k].value(record) {
                        Some((v, d)) => columns[k].push_num(v, d),
                        None => columns[k].push_null(),
                    }
                }
                stamps.push(be_u16(&block, 2));
                for text in pending.drain(..) {
                    parts.markers.push(Marker {
                        time_s: f64::NAN,
                        row: rows,
                        text,
                    });
                }
                rows += 1;
            }
            1 => {
                let mut message = [0u8; MARKER_LEN];
                if !read_full(&mut src, &mut message, &mut got)? {
                    parts
                        .notes
                        .push("the last marker is cut short; ignored".to_string());
                    break;
                }
                if parts.markers.len() + pending.len() < MAX_MARKERS {
                    pending.push(
                        String::from_utf8_lossy(&message)
                            .trim_end_matches('\0')
                            .trim()
                            .to_string(),
                    );
                } else {
                    markers_dropped += 1;
                }
            }
            t => {
                parts.notes.push(format!(
                    "reading stopped after {rows} records at a block of unknown type {t}; the \
                     rest of the file is not read"
                ));
                break;
            }
        }
    }
    // Markers after the last record belong to it.
    for text in pending {
        parts.markers.push(Marker {
            time_s: f64::NAN,
            row: rows.saturating_sub(1),
            text,
        });
    }
    if rows == 0 {
        parts.markers.clear();
    }
    if markers_dropped > 0 {
        parts.notes.push(format!(
            "{markers_dropped} markers past the first {MAX_MARKERS} are not kept"
        ));
    }
    if bad_sums > 0 {
        parts.notes.push(format!(
            "{bad_sums} of {rows} records fail their checksum (kept as read)"
        ));
    }
    super::check_cells(rows, &columns)?;
    // Shown with the digits MegaLogViewer shows (an f32 time of 0.1 is
    // stored as 0.100000001…).
    for (c, f) in columns.iter_mut().zip(&fields) {
        if let Some(d) = f.digits {
            c.decimals = d;
        }
    }
    parts.time = match time_field {
        Some(t) => columns[t].values.clone(),
        None => {
            if rows > 0 {
                parts.notes.push(
                    "it has no Time field: times come from the blocks' 10 µs stamps, which \
                     wrap every 0.655 s (a longer gap between records is lost)"
                        .to_string(),
                );
            }
            stamp_times(&stamps)
        }
    };
    for v in &mut parts.time {
        if v.is_nan() {
            *v = f64::NAN;
        }
    }
    parts.columns = columns;
    match time_field {
        Some(t) => parts.time_column = Some(t),
        None => {
            let mut c = super::column("Time", "s", &Need::All);
            for &t in &parts.time {
                c.push_num(t, 5);
            }
            parts.columns.push(c);
            parts.time_column = Some(parts.columns.len() - 1);
        }
    }
    for m in &mut parts.markers {
        m.time_s = parts.time.get(m.row).copied().unwrap_or(f64::NAN);
    }
    parts.add_marker_column(need);
    Ok(parts.into_log())
}

fn truncated_before_data(data_begin: u64) -> BinaryError {
    BinaryError::Truncated {
        what: "the MLG header and info text".into(),
        need: data_begin,
        have: 0,
    }
}

/// Seconds from the first record, from the blocks' wrapping 10 µs stamps.
fn stamp_times(stamps: &[u16]) -> Vec<f64> {
    let mut total: u64 = 0;
    let mut prev: Option<u16> = None;
    stamps
        .iter()
        .map(|&s| {
            if let Some(p) = prev {
                total += u64::from(s.wrapping_sub(p));
            }
            prev = Some(s);
            round_to(total as f64 * 1e-5, 5)
        })
        .collect()
}

/// "MLVLG v1, speeduino 202006-dev: Speeduino 2020.06-dev": the version and
/// the first line of the info text (the firmware's signature).
fn source_of(version: i16, info: &[u8]) -> String {
    let text = String::from_utf8_lossy(info);
    let first = text
        .lines()
        .map(|l| l.trim().trim_matches('"').trim_matches('\0').trim())
        .find(|l| !l.is_empty() && !l.starts_with("Capture Date"))
        .unwrap_or("");
    if first.is_empty() {
        format!("MLVLG v{version}")
    } else {
        format!("MLVLG v{version}, {}", plugin_kit::text::head(first, 80))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::column::Cell;

    /// An MLG file: `fields` are (type code, name, unit, scale), records
    /// are the raw value bytes of each record (big-endian, in field order),
    /// `markers` (before record index, text).
    pub(crate) fn mlg(
        version: i16,
        fields: &[(u8, &str, &str, f32)],
        records: &[Vec<u8>],
        markers: &[(usize, &str)],
    ) -> Vec<u8> {
        let field_len = if version == 1 { 55 } else { 89 };
        let header_len = if version == 1 { 22 } else { 24 };
        let record_len: usize = fields
            .iter()
            .map(|f| Storage::of(f.0).unwrap().size())
            .sum();
        let info = b"\"rusEFI test: unit\"\n\"Capture Date: x\"\n\0";
        let info_start = header_len + fields.len() * field_len;
        let data_begin = info_start + info.len();
        let mut out = b"MLVLG\0".to_vec();
        out.extend(version.to_be_bytes());
        out.extend(1_600_000_000u32.to_be_bytes());
        if version == 1 {
            out.extend((info_start as u16).to_be_bytes());
        } else {
            out.extend((info_start as u32).to_be_bytes());
        }
        out.extend((data_begin as u32).to_be_bytes());
        out.extend((record_len as u16).to_be_bytes());
        out.extend((fields.len() as u16).to_be_bytes());
        for (code, name, unit, scale) in fields {
            let mut d = vec![0u8; field_len];
            d[0] = *code;
            d[1..1 + name.len()].copy_from_slice(name.as_bytes());
            d[35..35 + unit.len()].copy_from_slice(unit.as_bytes());
            d[46..50].copy_from_slice(&scale.to_be_bytes());
            d[54] = if *code == 7 {
                3
            } else {
                u8::from(*scale < 1.0)
            };
            out.extend(d);
        }
        out.extend(info);
        for (k, r) in records.iter().enumerate() {
            for (_, text) in markers.iter().filter(|m| m.0 == k) {
                let mut m = vec![1u8, 0, 0, 0];
                let mut msg = text.as_bytes().to_vec();
                msg.resize(MARKER_LEN, 0);
                m.extend(msg);
                out.extend(m);
            }
            out.extend([0u8, k as u8]);
            out.extend(((k * 5000) as u16).to_be_bytes());
            out.extend(r);
            out.push(r.iter().fold(0u8, |s, &b| s.wrapping_add(b)));
        }
        out
    }

    fn record(time: f32, rpm: u16, afr: u8) -> Vec<u8> {
        let mut r = time.to_be_bytes().to_vec();
        r.extend(rpm.to_be_bytes());
        r.push(afr);
        r
    }

    const FIELDS: [(u8, &str, &str, f32); 3] = [
        (7, "Time", "s", 1.0),
        (2, "RPM", "rpm", 1.0),
        (0, "AFR", "AFR", 0.1),
    ];

    #[test]
    fn v1_and_v2_records_scale_and_markers() {
        for version in [1, 2] {
            let records = [
                record(0.0, 900, 147),
                record(0.066, 3100, 125),
                record(0.132, 4200, 118),
            ];
            let file = mlg(version, &FIELDS, &records, &[(1, "pull 1")]);
            let log = read(&file[..], &Need::All).unwrap();
            assert_eq!(log.format, Format::Mlg);
            assert_eq!(log.rows(), 3);
            assert_eq!(log.channels(), ["RPM", "AFR", "Marker"]);
            assert_eq!(log.time(), [0.0, 0.066, 0.132]);
            assert_eq!(log.column("AFR").unwrap().cell(0), Cell::Num(14.7));
            assert_eq!(log.column("AFR").unwrap().unit, "AFR");
            assert_eq!(log.column("RPM").unwrap().cell(2), Cell::Num(4200.0));
            assert_eq!(log.column("Marker").unwrap().cell(1), Cell::Str("pull 1"));
            assert_eq!(log.column("Marker").unwrap().cell(0), Cell::Null);
            assert_eq!(log.markers.len(), 1);
            assert_eq!(log.markers[0].time_s, 0.066);
            assert_eq!(log.start_date, Some(1_600_000_000));
            assert_eq!(log.start_date_kind, DateKind::Utc);
            assert_eq!(
                log.source.as_deref(),
                Some(format!("MLVLG v{version}, rusEFI test: unit").as_str())
            );
            assert!(log.notes.is_empty(), "{:?}", log.notes);
        }
    }

    #[test]
    fn a_log_without_records_has_its_channels_and_no_rows() {
        let file = mlg(1, &FIELDS, &[], &[]);
        let log = read(&file[..], &Need::All).unwrap();
        assert_eq!(log.rows(), 0);
        assert_eq!(log.channels(), ["RPM", "AFR"]);
        assert_eq!(log.duration_s(), None);
    }

    #[test]
    fn only_named_channels_are_converted() {
        let file = mlg(1, &FIELDS, &[record(0.0, 900, 147)], &[]);
        let log = read(&file[..], &Need::named(["AFR"])).unwrap();
        assert!(!log.column("RPM").unwrap().loaded);
        assert!(log.column("AFR").unwrap().loaded && log.column("Time").unwrap().loaded);
    }

    #[test]
    fn times_without_a_time_field_come_from_the_stamps() {
        let fields = [(2u8, "RPM", "rpm", 1.0f32)];
        let records: Vec<Vec<u8>> = (0..20).map(|k| (k as u16).to_be_bytes().to_vec()).collect();
        let log = read(&mlg(2, &fields, &records, &[])[..], &Need::All).unwrap();
        // Stamps step 5000 × 10 µs = 0.05 s and wrap past 65535.
        assert!((log.duration_s().unwrap() - 0.95).abs() < 1e-9);
        assert!((log.sample_rate_hz().unwrap() - 20.0).abs() < 1e-6);
        assert!(log.notes[0].contains("no Time field"), "{:?}", log.notes);
    }

    #[test]
    fn hostile_headers_are_refused_with_the_reason() {
        let good = mlg(1, &FIELDS, &[record(0.0, 900, 147)], &[]);
        // Record length that disagrees with the fields.
        let mut f = good.clone();
        f[18..20].copy_from_slice(&99u16.to_be_bytes());
        let e = read(&f[..], &Need::All).unwrap_err();
        assert!(e.to_string().contains("add up to 7"), "{e}");
        // Unknown type code.
        let mut f = good.clone();
        f[22] = 9;
        assert!(
            read(&f[..], &Need::All)
                .unwrap_err()
                .to_string()
                .contains("type code 9")
        );
        // Version 3.
        let mut f = good.clone();
        f[7] = 3;
        assert!(matches!(
            read(&f[..], &Need::All),
            Err(BinaryError::UnsupportedVersion { version: 3, .. })
        ));
        // Cut inside the field list.
        let e = read(&good[..60], &Need::All).unwrap_err();
        assert!(matches!(e, BinaryError::Truncated { .. }), "{e}");
        // Data offset inside the descriptors.
        let mut f = good.clone();
        f[14..18].copy_from_slice(&30u32.to_be_bytes());
        assert!(
            read(&f[..], &Need::All)
                .unwrap_err()
                .to_string()
                .contains("inside")
        );
        // A cut last record and a bad checksum are notes, not failures.
        let mut f = mlg(1, &FIELDS, &[record(0.0, 900, 147), record(0.1, 1, 1)], &[]);
        let n = f.len();
        f[n - 1] ^= 0xFF;
        let log = read(&f[..], &Need::All).unwrap();
        assert!(log.notes[0].contains("checksum"), "{:?}", log.notes);
        let log = read(&f[..n - 3], &Need::All).unwrap();
        assert_eq!(log.rows(), 1);
        assert!(log.notes[0].contains("cut short"), "{:?}", log.notes);
        // An unknown block type stops reading there.
        let mut f = good.clone();
        f.extend([7u8, 0, 0, 0]);
        let log = read(&f[..], &Need::All).unwrap();
        assert_eq!(log.rows(), 1);
        assert!(log.notes[0].contains("unknown type 7"), "{:?}", log.notes);
    }
}
