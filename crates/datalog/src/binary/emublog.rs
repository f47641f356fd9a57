//! ECUMaster EMU Black binary logs (`.emublog`): one gzip member holding a
//! 12-byte header (three u32 LE: magic 0x22446082, a version, the record
//! count) and that many fixed-size records.
//!
//! What the records hold is not published, and the stream carries no
//! channel list (the channel layout lives in the ECU's log configuration;
//! `shared/reference/log-formats.md` §3.1). So the log is read as what can
//! be known: one row per record, the record counter (the first u16) as a
//! channel, and every other byte as a raw channel `byte_N` (hidden from the
//! channel list, queryable by name), with no time axis.

use super::{BinaryError, Parts};
use crate::format::Format;
use crate::log::{Log, Need};
use std::io::Read;

/// The first two bytes of a gzip member.
pub const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];
/// The first u32 of an inflated EMU Black log.
const EMU_MAGIC: u32 = 0x2244_6082;
/// Most inflated bytes read: a gzip bomb stops here.
const MAX_INFLATED: u64 = 256 << 20;
/// Longest record believed (the real one is 308 bytes).
const MAX_RECORD: usize = 4096;

/// True when the gzip stream at the start of `head` inflates to an EMU
/// Black header.
pub fn is_emu_black(head: &[u8]) -> bool {
    let mut magic = [0u8; 4];
    let mut z = flate2::read::GzDecoder::new(head);
    let mut got = 0;
    matches!(super::read_full(&mut z, &mut magic, &mut got), Ok(true))
        && u32::from_le_bytes(magic) == EMU_MAGIC
}

fn bad(why: impl Into<String>) -> BinaryError {
    BinaryError::BadHeader {
        format: "EMU Black",
        why: why.into(),
    }
}

/// Reads an `.emublog` from its first byte.
pub(crate) fn read(src: impl std::io::Read, need: &Need) -> Result<Log, BinaryError> {
    read_within(src, need, MAX_INFLATED)
}

/// [`read`], inflating at most `limit` bytes.
fn read_within(src: impl std::io::Read, need: &Need, limit: u64) -> Result<Log, BinaryError> {
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(src)
        .take(limit + 1)
        .read_to_end(&mut data)
        .map_err(|e| BinaryError::Inflate(e.to_string()))?;
    if data.len() as u64 > limit {
        return Err(BinaryError::TooLarge {
            what: "bytes once inflated",
            count: data.len() as u64,
            limit,
        });
    }
    if data.len() < 12 {
        return Err(BinaryError::Truncated {
            what: "the EMU Black header".into(),
            need: 12,
            have: data.len() as u64,
        });
    }
    let word = |at: usize| u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
    if word(0) != EMU_MAGIC {
        return Err(bad(format!(
            "it inflates to data starting 0x{:08X}, not the EMU Black magic 0x{EMU_MAGIC:08X}",
            word(0)
        )));
    }
    let version = word(4);
    let count = word(8) as usize;
    let body = data.len() - 12;
    let mut parts = Parts::new(Format::EmuBlack);
    parts.source = Some(format!("EMU Black log, format {version}"));
    let size = if count == 0 {
        0
    } else if body % count == 0 && (2..=MAX_RECORD).contains(&(body / count)) {
        body / count
    } else {
        return Err(bad(format!(
            "its header counts {count} records but the {body} bytes after it are not that \
             many records of one size"
        )));
    };
    if count > super::MAX_ROWS {
        return Err(BinaryError::TooLarge {
            what: "records",
            count: count as u64,
            limit: super::MAX_ROWS as u64,
        });
    }
    let mut columns = vec![super::column("Counter", "", need)];
    columns.extend((2..size).map(|k| {
        let mut c = super::column(&format!("byte_{k}"), "", need);
        c.hidden = true;
        c
    }));
    super::check_cells(count, &columns)?;
    for record in data[12..].chunks_exact(size.max(1)).take(count) {
        let (counter, raw) = columns.split_at_mut(1);
        if counter[0].loaded {
            counter[0].push_num(f64::from(u16::from_le_bytes([record[0], record[1]])), 0);
        }
        for (c, &b) in raw.iter_mut().zip(&record[2..]) {
            if c.loaded {
                c.push_num(f64::from(b), 0);
            }
        }
    }
    parts.columns = columns;
    parts.time = vec![f64::NAN; count];
    parts.notes.push(format!(
        "EMU Black logs carry no channel list (the layout is the ECU's log configuration, not \
         published): each {size}-byte record reads as Counter (its first two bytes) and raw \
         bytes byte_2…byte_{} (hidden; query them by name), with no time axis. Export the log \
         as CSV from the EMU Black client for named channels and times.",
        size.saturating_sub(1)
    ));
    Ok(parts.into_log())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::column::Cell;
    use std::io::Write;

    /// An `.emublog`: records of `size` bytes, the counter first, then
    /// bytes that count up from the record index.
    pub(crate) fn emublog(count: u32, size: usize) -> Vec<u8> {
        let mut raw = EMU_MAGIC.to_le_bytes().to_vec();
        raw.extend(5u32.to_le_bytes());
        raw.extend(count.to_le_bytes());
        for k in 0..count as usize {
            let mut r = vec![0u8; size];
            r[..2].copy_from_slice(&(100 + k as u16).to_le_bytes());
            for (i, b) in r[2..].iter_mut().enumerate() {
                *b = (k + i) as u8;
            }
            raw.extend(r);
        }
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&raw).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn records_read_as_a_counter_and_raw_bytes() {
        let file = emublog(5, 8);
        assert!(is_emu_black(&file));
        let log = read(&file[..], &Need::All).unwrap();
        assert_eq!(log.format, Format::EmuBlack);
        assert_eq!(log.rows(), 5);
        assert_eq!(log.channels(), ["Counter"]);
        assert_eq!(log.columns.len(), 7);
        assert_eq!(log.column("Counter").unwrap().cell(4), Cell::Num(104.0));
        assert_eq!(log.column("byte_3").unwrap().cell(2), Cell::Num(3.0));
        assert_eq!(log.duration_s(), None);
        assert!(log.notes[0].contains("byte_2…byte_7"), "{:?}", log.notes);
    }

    #[test]
    fn bombs_and_damaged_streams_are_refused() {
        // A record count the data does not hold.
        let mut raw = EMU_MAGIC.to_le_bytes().to_vec();
        raw.extend(5u32.to_le_bytes());
        raw.extend(7u32.to_le_bytes());
        raw.extend([0u8; 20]);
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&raw).unwrap();
        let e = read(&z.finish().unwrap()[..], &Need::All).unwrap_err();
        assert!(e.to_string().contains("counts 7 records"), "{e}");
        // Cut short: the gzip trailer is missing.
        let file = emublog(50, 308);
        let e = read(&file[..file.len() / 2], &Need::All).unwrap_err();
        assert!(matches!(e, BinaryError::Inflate(_)), "{e}");
        // Not EMU Black inside.
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(b"Time,RPM\n0,1\n").unwrap();
        let other = z.finish().unwrap();
        assert!(!is_emu_black(&other));
        assert!(
            read(&other[..], &Need::All)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        // A gzip bomb stops at the cap (8 MiB of zeros is 8 KiB compressed;
        // the real cap is 256 MiB).
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&vec![0u8; 8 << 20]).unwrap();
        let bomb = z.finish().unwrap();
        assert!(bomb.len() < 64 << 10);
        let e = read_within(&bomb[..], &Need::All, 1 << 20).unwrap_err();
        assert!(
            matches!(e, BinaryError::TooLarge { count, .. } if count == (1 << 20) + 1),
            "{e}"
        );
    }
}
