//! Definitions a served family resolved, remembered between runs in the
//! plugin's cache directory.
//!
//! With the folder's index kept ([`crate::folder_index`]), most of a
//! fresh server's first rom_info over the SubaruDefs tree was the ECUFlash
//! family parsing and merging the match's chain (a 500 KB base among
//! them). A family's answer depends only on its code and on what it is
//! given: the key and the files' names and contents. So the answer is kept
//! under a digest (64-bit FNV-1a) of exactly those, with the plugin's name
//! and code (its `generation`); the plugin, code, key and the files' names
//! and lengths are stored beside it and compared before it is used. The
//! contents enter through the digest only: choosing contents that collide
//! takes someone who can already write the definitions folder, who could
//! as well write the definition they want. An entry that does not read
//! back whole is not used; only the [`MAX_ENTRIES`] newest are kept.

use crate::bindings::benchtop::ecu_family::family as wit;
use ecu_model::family::Source;
use plugin_kit::blob::{self, Reader, Writer};
use plugin_kit::fnv;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

const MAGIC: [u8; 4] = *b"BTDR";
const VERSION: u16 = 1;
const MAX_STR: usize = u16::MAX as usize;
/// Entries larger than this are neither written nor read.
const MAX_ENTRY: usize = 32 << 20;
/// Entries kept at most, the least recently written going first.
const MAX_ENTRIES: usize = 16;

/// What a resolution was asked with: the entry is used only for the same.
pub struct Question<'a> {
    /// The serving plugin.
    pub plugin: &'a str,
    /// Its code ([`crate::bindings::benchtop::host::peers::Provider`]'s
    /// generation).
    pub code: u64,
    /// The definition's key.
    pub key: &'a str,
    /// The chain's files.
    pub files: &'a [Source<'a>],
}

impl Question<'_> {
    fn digest(&self) -> u64 {
        let mut h = fnv::fold(fnv::OFFSET, b"resolved v1\0");
        h = fnv::fold(h, self.plugin.as_bytes());
        h = fnv::fold(h, &self.code.to_le_bytes());
        h = fnv::fold(h, self.key.as_bytes());
        for f in self.files {
            h = fnv::fold(h, &(f.file_name.len() as u64).to_le_bytes());
            h = fnv::fold(h, f.file_name.as_bytes());
            h = fnv::fold(h, &(f.contents.len() as u64).to_le_bytes());
            h = fnv::fold(h, f.contents);
        }
        h
    }

    /// What is stored beside the answer and compared before it is used.
    fn header(&self, w: &mut Writer) {
        w.str(self.plugin, MAX_STR)
            .u64(self.code)
            .str(self.key, MAX_STR);
        w.u32(self.files.len() as u32);
        for f in self.files {
            w.str(f.file_name, MAX_STR).u64(f.contents.len() as u64);
        }
    }

    fn path(&self, cache: &Path) -> PathBuf {
        cache.join(format!("resolved-{:016x}.bin", self.digest()))
    }
}

/// The definition remembered for `question`, when there is one.
pub fn recall(cache: &Path, question: &Question) -> Option<wit::Definition> {
    let path = question.path(cache);
    let meta = std::fs::metadata(&path).ok()?;
    if meta.len() > MAX_ENTRY as u64 {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    let (_, payload) = blob::unframe(MAGIC, VERSION, &bytes).ok()?;
    let mut asked = Writer::new();
    question.header(&mut asked);
    let stored = payload.get(..asked.0.len())?;
    if stored != asked.0.as_slice() {
        return None;
    }
    definition_from_payload(&payload[asked.0.len()..]).ok()
}

/// Remembers `answer` for `question`. Best effort: an error only means
/// the next run resolves again.
pub fn remember(cache: &Path, question: &Question, answer: &wit::Definition) -> Result<(), String> {
    let mut w = Writer::new();
    question.header(&mut w);
    put_definition(&mut w, answer).ok_or("a string too long to keep")?;
    let bytes = blob::frame(MAGIC, VERSION, &w.0);
    if bytes.len() > MAX_ENTRY {
        return Err(format!("the entry would be {} bytes", bytes.len()));
    }
    let now = SystemTime::now();
    plugin_kit::cache_files::replace(&question.path(cache), &bytes, now)?;
    plugin_kit::cache_files::prune(cache, "resolved-", "bin", MAX_ENTRIES, now);
    Ok(())
}

/// The definition an entry's payload holds after its question: any bytes
/// give one or an error ([`super::peer::resolved_from_payload`] reads it
/// as ecu-tables does, for the fuzz target `ecu_kept`).
pub(crate) fn definition_from_payload(payload: &[u8]) -> Result<wit::Definition, String> {
    let mut r = Reader::new(payload);
    let answer = definition(&mut r)?;
    r.finish()?;
    Ok(answer)
}

// ------------------------------------------------------------ the codec

fn put_opt_str(w: &mut Writer, s: &Option<String>) -> Option<()> {
    match s {
        None => {
            w.u8(0);
            Some(())
        }
        Some(s) => w.u8(1).str_whole(s).map(|_| ()),
    }
}

fn put_opt_f64(w: &mut Writer, v: Option<f64>) {
    match v {
        None => w.u8(0),
        Some(v) => w.u8(1).u64(v.to_bits()),
    };
}

fn put_bytes(w: &mut Writer, b: &[u8]) {
    w.u32(b.len() as u32);
    w.0.extend_from_slice(b);
}

fn put_pairs(w: &mut Writer, pairs: &[(String, String)]) -> Option<()> {
    w.u32(pairs.len() as u32);
    for (a, b) in pairs {
        w.str_whole(a)?;
        w.str_whole(b)?;
    }
    Some(())
}

fn storage_code(s: wit::Storage) -> u8 {
    match s {
        wit::Storage::Uint8 => 0,
        wit::Storage::Int8 => 1,
        wit::Storage::Uint16 => 2,
        wit::Storage::Int16 => 3,
        wit::Storage::Uint32 => 4,
        wit::Storage::Int32 => 5,
        wit::Storage::Float32 => 6,
        wit::Storage::Bits => 7,
    }
}

fn put_scaling(w: &mut Writer, s: &wit::Scaling) -> Option<()> {
    put_opt_str(w, &s.name)?;
    w.u8(storage_code(s.storage)).u8(s.little_endian as u8);
    w.str_whole(&s.to_physical)?;
    put_opt_str(w, &s.from_physical)?;
    put_opt_str(w, &s.units)?;
    put_opt_str(w, &s.format)?;
    put_opt_f64(w, s.min);
    put_opt_f64(w, s.max);
    w.u32(s.choices.len() as u32);
    for c in &s.choices {
        w.str_whole(&c.name)?;
        put_bytes(w, &c.bytes);
    }
    Some(())
}

fn put_axis(w: &mut Writer, a: &Option<wit::Axis>) -> Option<()> {
    let Some(a) = a else {
        w.u8(0);
        return Some(());
    };
    w.u8(1);
    put_opt_str(w, &a.name)?;
    match &a.points {
        wit::Points::Labels(labels) => {
            w.u8(0).u32(labels.len() as u32);
            for l in labels {
                w.str_whole(l)?;
            }
        }
        wit::Points::Stored(p) => {
            w.u8(1).u64(p.address).u32(p.count);
            put_scaling(w, &p.scaling)?;
        }
    }
    w.u8(a.reversed as u8);
    Some(())
}

fn put_definition(w: &mut Writer, d: &wit::Definition) -> Option<()> {
    put_pairs(w, &d.fields)?;
    w.u32(d.chain.len() as u32);
    for c in &d.chain {
        w.str_whole(c)?;
    }
    w.u32(d.tables.len() as u32);
    for t in &d.tables {
        w.str_whole(&t.name)?;
        put_opt_str(w, &t.category)?;
        w.u64(t.address);
        put_scaling(w, &t.scaling)?;
        put_axis(w, &t.rows)?;
        put_axis(w, &t.columns)?;
        w.u8(t.column_major as u8)
            .u8(t.rows_reversed as u8)
            .u8(t.columns_reversed as u8);
        match t.level {
            None => w.u8(0),
            Some(l) => w.u8(1).u32(l),
        };
    }
    put_pairs(w, &d.unreadable)?;
    match &d.checksum {
        wit::Checksum::Plan(p) => w.u8(0).str_whole(p).map(|_| ()),
        wit::Checksum::Unknown(why) => w.u8(1).str_whole(why).map(|_| ()),
    }
}

type Read<T> = Result<T, String>;

fn get_str(r: &mut Reader) -> Read<String> {
    r.str("string", MAX_STR)
}

fn get_opt_str(r: &mut Reader) -> Read<Option<String>> {
    get_bool(r)?.then(|| get_str(r)).transpose()
}

fn get_opt_f64(r: &mut Reader) -> Read<Option<f64>> {
    get_bool(r)?
        .then(|| Ok(f64::from_bits(r.u64("number")?)))
        .transpose()
}

fn get_bool(r: &mut Reader) -> Read<bool> {
    match r.u8("flag")? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err("a flag past 1".into()),
    }
}

/// A count, refused when the bytes left could not hold that many items
/// of at least `min` bytes each (no allocation sized by a crafted count).
fn get_count(r: &mut Reader, min: usize) -> Read<usize> {
    let n = r.u32("count")? as usize;
    if n.saturating_mul(min) > r.remaining() {
        return Err(format!("a count of {n} past the data"));
    }
    Ok(n)
}

fn get_pairs(r: &mut Reader) -> Read<Vec<(String, String)>> {
    let n = get_count(r, 4)?;
    (0..n).map(|_| Ok((get_str(r)?, get_str(r)?))).collect()
}

fn get_scaling(r: &mut Reader) -> Read<wit::Scaling> {
    let name = get_opt_str(r)?;
    let storage = match r.u8("storage")? {
        0 => wit::Storage::Uint8,
        1 => wit::Storage::Int8,
        2 => wit::Storage::Uint16,
        3 => wit::Storage::Int16,
        4 => wit::Storage::Uint32,
        5 => wit::Storage::Int32,
        6 => wit::Storage::Float32,
        7 => wit::Storage::Bits,
        _ => return Err("an unknown storage".into()),
    };
    let little_endian = get_bool(r)?;
    let to_physical = get_str(r)?;
    let from_physical = get_opt_str(r)?;
    let units = get_opt_str(r)?;
    let format = get_opt_str(r)?;
    let min = get_opt_f64(r)?;
    let max = get_opt_f64(r)?;
    let n = get_count(r, 6)?;
    let mut choices = Vec::with_capacity(n);
    for _ in 0..n {
        let name = get_str(r)?;
        let len = r.u32("choice length")? as usize;
        choices.push(wit::Choice {
            name,
            bytes: r.bytes(len, "choice bytes")?.to_vec(),
        });
    }
    Ok(wit::Scaling {
        name,
        storage,
        little_endian,
        to_physical,
        from_physical,
        units,
        format,
        min,
        max,
        choices,
    })
}

fn get_axis(r: &mut Reader) -> Read<Option<wit::Axis>> {
    if !get_bool(r)? {
        return Ok(None);
    }
    let name = get_opt_str(r)?;
    let points = match r.u8("points")? {
        0 => {
            let n = get_count(r, 2)?;
            wit::Points::Labels((0..n).map(|_| get_str(r)).collect::<Read<_>>()?)
        }
        1 => wit::Points::Stored(wit::StoredPoints {
            address: r.u64("address")?,
            count: r.u32("count")?,
            scaling: get_scaling(r)?,
        }),
        _ => return Err("unknown points".into()),
    };
    Ok(Some(wit::Axis {
        name,
        points,
        reversed: get_bool(r)?,
    }))
}

fn definition(r: &mut Reader) -> Read<wit::Definition> {
    let fields = get_pairs(r)?;
    let n = get_count(r, 2)?;
    let chain = (0..n).map(|_| get_str(r)).collect::<Read<_>>()?;
    let n = get_count(r, 16)?;
    let mut tables = Vec::with_capacity(n);
    for _ in 0..n {
        let name = get_str(r)?;
        let category = get_opt_str(r)?;
        let address = r.u64("address")?;
        let scaling = get_scaling(r)?;
        let rows = get_axis(r)?;
        let columns = get_axis(r)?;
        let column_major = get_bool(r)?;
        let rows_reversed = get_bool(r)?;
        let columns_reversed = get_bool(r)?;
        let level = get_bool(r)?.then(|| r.u32("level")).transpose()?;
        tables.push(wit::Table {
            name,
            category,
            address,
            scaling,
            rows,
            columns,
            column_major,
            rows_reversed,
            columns_reversed,
            level,
        });
    }
    let unreadable = get_pairs(r)?;
    let checksum = match r.u8("checksum")? {
        0 => wit::Checksum::Plan(get_str(r)?),
        1 => wit::Checksum::Unknown(get_str(r)?),
        _ => return Err("an unknown checksum".into()),
    };
    Ok(wit::Definition {
        fields,
        chain,
        tables,
        unreadable,
        checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scaling(storage: wit::Storage, choices: Vec<wit::Choice>) -> wit::Scaling {
        wit::Scaling {
            name: Some("AFR".into()),
            storage,
            little_endian: true,
            to_physical: "x*0.1".into(),
            from_physical: Some("x/0.1".into()),
            units: None,
            format: Some("%.1f".into()),
            min: Some(-1.5),
            max: None,
            choices,
        }
    }

    fn sample() -> wit::Definition {
        wit::Definition {
            fields: vec![("make".into(), "Subaru".into())],
            chain: vec!["32BITBASE".into(), "A2UG000N".into()],
            tables: vec![
                wit::Table {
                    name: "Target Boost".into(),
                    category: Some("Boost".into()),
                    address: 0xC_1234,
                    scaling: scaling(wit::Storage::Uint16, Vec::new()),
                    rows: Some(wit::Axis {
                        name: Some("RPM".into()),
                        points: wit::Points::Stored(wit::StoredPoints {
                            address: 0xC_1000,
                            count: 16,
                            scaling: scaling(wit::Storage::Float32, Vec::new()),
                        }),
                        reversed: true,
                    }),
                    columns: Some(wit::Axis {
                        name: None,
                        points: wit::Points::Labels(vec!["a".into(), "b".into()]),
                        reversed: false,
                    }),
                    column_major: true,
                    rows_reversed: false,
                    columns_reversed: true,
                    level: Some(3),
                },
                wit::Table {
                    name: "Switch".into(),
                    category: None,
                    address: 7,
                    scaling: scaling(
                        wit::Storage::Uint8,
                        vec![wit::Choice {
                            name: "on".into(),
                            bytes: vec![1],
                        }],
                    ),
                    rows: None,
                    columns: None,
                    column_major: false,
                    rows_reversed: false,
                    columns_reversed: false,
                    level: None,
                },
            ],
            unreadable: vec![("Odd".into(), "no scaling".into())],
            checksum: wit::Checksum::Plan("subarudbw".into()),
        }
    }

    fn encoded(d: &wit::Definition) -> Vec<u8> {
        let mut w = Writer::new();
        put_definition(&mut w, d).unwrap();
        w.0
    }

    #[test]
    fn a_definition_reads_back_as_written() {
        let d = sample();
        let bytes = encoded(&d);
        let mut r = Reader::new(&bytes);
        let back = definition(&mut r).unwrap();
        r.finish().unwrap();
        // The bindings' records have no PartialEq: compare their encodings.
        assert_eq!(encoded(&back), bytes);
        assert_eq!(back.tables[0].name, "Target Boost");
    }

    #[test]
    fn an_entry_is_used_only_for_the_same_question_and_whole() {
        let cache = std::env::temp_dir().join(format!("ecu-remembered-{:?}", SystemTime::now()));
        std::fs::create_dir_all(&cache).unwrap();
        let files = [
            Source {
                file_name: "A2UG000N.xml",
                contents: b"<rom>a</rom>",
            },
            Source {
                file_name: "32BITBASE.xml",
                contents: b"<rom>b</rom>",
            },
        ];
        let question = Question {
            plugin: "ecuflash",
            code: 42,
            key: "A2UG000N",
            files: &files,
        };
        assert!(recall(&cache, &question).is_none());
        remember(&cache, &question, &sample()).unwrap();
        let back = recall(&cache, &question).unwrap();
        assert_eq!(encoded(&back), encoded(&sample()));
        // Other code, another key, other contents: nothing.
        for other in [
            Question {
                code: 43,
                ..question
            },
            Question {
                key: "A2UG000L",
                ..question
            },
            Question {
                plugin: "ecuflash2",
                ..question
            },
        ] {
            assert!(recall(&cache, &other).is_none());
        }
        let changed = [
            files[0],
            Source {
                file_name: "32BITBASE.xml",
                contents: b"<rom>c</rom>",
            },
        ];
        assert!(
            recall(
                &cache,
                &Question {
                    files: &changed,
                    ..question
                }
            )
            .is_none()
        );
        // A damaged entry is not used.
        let path = question.path(&cache);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 5;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(recall(&cache, &question).is_none());
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
