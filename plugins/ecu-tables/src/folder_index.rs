//! What a definitions folder held, kept between runs in the plugin's cache
//! directory (`plugin_kit::paths::cache_dir`): for each file, its stamp,
//! the family that claimed it and what that family identified in it.
//!
//! Every new server (an agent's session starts one over stdio) otherwise
//! opens and sniffs every file of the folder and asks a family component
//! twice about each: most of a first rom_info over the 333-file SubaruDefs
//! tree. With this kept, a file whose stamp is the one kept is only
//! stat'ed, as on a warm call. Nothing kept is trusted further than that:
//! a file whose stamp differs is read again, the whole index is dropped
//! when the served families are other code (their plugin names and code
//! digests are kept with it), and an index that does not read back whole
//! is ignored. Files read within two seconds of their mtime are not
//! kept (a coarse file-system clock could give a rewrite the same stamp),
//! nor what could not be read or asked, nor a family's error: those are
//! asked again by the next run.

use crate::family::Stamp;
use ecu_model::family::{Candidate, ImageId};
use plugin_kit::blob::{self, Reader, Writer};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MAGIC: [u8; 4] = *b"BTDX";
const VERSION: u16 = 1;
/// The longest string kept: a file whose strings are longer is not kept.
const MAX_STR: usize = u16::MAX as usize;
/// Index files larger than this are neither written nor read.
const MAX_INDEX: usize = 16 << 20;
/// How old a file's mtime must be, when it is read, for what was read to
/// be kept under its stamp.
pub const SETTLED: Duration = Duration::from_secs(2);

/// Whether a file stamped `stamp` and read at `now` is settled: old
/// enough that a rewrite within the file system's clock tick would show
/// in its mtime.
pub fn settled(stamp: &Stamp, now: SystemTime) -> bool {
    stamp
        .mtime
        .is_some_and(|mtime| now.duration_since(mtime).is_ok_and(|age| age >= SETTLED))
}

/// One definitions file as a run found it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedFile {
    /// The file.
    pub path: PathBuf,
    /// Its stamp when it was read.
    pub stamp: Stamp,
    /// The index (in the served order) of the family that claims it.
    pub family: Option<usize>,
    /// The format its head tells when no loaded family claims it.
    pub foreign: Option<&'static str>,
    /// What its family identified in it, when it was asked.
    pub candidates: Option<Result<Vec<Candidate>, String>>,
}

/// A definitions folder's files, for the families serving then.
#[derive(Debug, Clone, PartialEq)]
pub struct FolderIndex {
    /// The folder.
    pub dir: PathBuf,
    /// The code of the ecu-tables that wrote it, which decided which
    /// family claims each file.
    pub builder: u64,
    /// `(plugin, code)` of each family served, in order.
    pub families: Vec<(String, u64)>,
    /// Its files.
    pub files: Vec<IndexedFile>,
}

/// The formats [`IndexedFile::foreign`] can name.
const FOREIGN: [&str; 2] = ["RomRaider", "ECUFlash"];

/// Where the index of `dir` is kept in `cache`.
pub fn index_path(cache: &Path, dir: &Path) -> PathBuf {
    let key = plugin_kit::fnv::fold(plugin_kit::fnv::OFFSET, dir.as_os_str().as_encoded_bytes());
    cache.join(format!("definitions-{key:016x}.idx"))
}

impl FolderIndex {
    /// The index kept for `dir` in `cache`, when there is one that reads
    /// back whole and was made for `dir`.
    pub fn read(cache: &Path, dir: &Path) -> Option<FolderIndex> {
        let path = index_path(cache, dir);
        let meta = std::fs::metadata(&path).ok()?;
        if meta.len() > MAX_INDEX as u64 {
            return None;
        }
        let bytes = std::fs::read(&path).ok()?;
        let kept = Self::decode(&bytes).ok()?;
        (kept.dir == dir).then_some(kept)
    }

    /// Writes the index (through a file renamed into place, so a reader
    /// never sees half of one). Files touched within [`SETTLED`] of `now`
    /// are left out. Errors are the caller's to ignore: the index only
    /// saves time.
    pub fn write(&self, cache: &Path, now: SystemTime) -> Result<(), String> {
        let bytes = self.encode(now);
        if bytes.len() > MAX_INDEX {
            return Err(format!("the index would be {} bytes", bytes.len()));
        }
        plugin_kit::cache_files::replace(&index_path(cache, &self.dir), &bytes, now)?;
        plugin_kit::cache_files::prune(cache, "definitions-", "idx", MAX_INDEXES, now);
        Ok(())
    }

    fn encode(&self, now: SystemTime) -> Vec<u8> {
        let mut w = Writer::new();
        let dir = self.dir.to_string_lossy();
        w.str(&dir, MAX_STR);
        w.u64(self.builder);
        w.u32(self.families.len() as u32);
        for (plugin, code) in &self.families {
            w.str(plugin, MAX_STR).u64(*code);
        }
        let files: Vec<Vec<u8>> = self
            .files
            .iter()
            .filter_map(|f| encode_file(f, now))
            .collect();
        w.u32(files.len() as u32);
        for f in files {
            w.0.extend_from_slice(&f);
        }
        blob::frame(MAGIC, VERSION, &w.0)
    }

    fn decode(bytes: &[u8]) -> Result<FolderIndex, String> {
        let (_, payload) = blob::unframe(MAGIC, VERSION, bytes)?;
        Self::from_payload(payload)
    }

    /// An index from a frame's payload: any bytes give an index or an
    /// error (the fuzz target `ecu_kept` feeds it).
    pub fn from_payload(payload: &[u8]) -> Result<FolderIndex, String> {
        let mut r = Reader::new(payload);
        let dir = PathBuf::from(r.str("dir", MAX_STR)?);
        let builder = r.u64("builder")?;
        let mut families = Vec::new();
        for _ in 0..r.u32("families")? {
            families.push((r.str("plugin", MAX_STR)?, r.u64("code")?));
        }
        let count = r.u32("files")? as usize;
        let mut files = Vec::with_capacity(count.min(payload.len() / 16));
        for _ in 0..count {
            files.push(decode_file(&mut r)?);
        }
        r.finish()?;
        Ok(FolderIndex {
            dir,
            builder,
            families,
            files,
        })
    }
}

/// Indexes kept at most: one per definitions folder used, the least
/// recently written going first, so tests and folders long gone do not
/// fill the cache.
const MAX_INDEXES: usize = 32;

/// `f` as index bytes; None when it is not to be kept (touched lately, or
/// holding a string too long to keep whole).
fn encode_file(f: &IndexedFile, now: SystemTime) -> Option<Vec<u8>> {
    let mtime = f.stamp.mtime?;
    if !settled(&f.stamp, now) {
        return None;
    }
    let since = mtime.duration_since(UNIX_EPOCH).ok()?;
    let mut w = Writer::new();
    w.str_whole(f.path.to_str()?)?;
    w.u64(f.stamp.len)
        .u64(since.as_secs())
        .u32(since.subsec_nanos());
    w.u32(f.family.map_or(u32::MAX, |i| i as u32));
    w.u8(f.foreign.map_or(0, |name| {
        FOREIGN
            .iter()
            .position(|n| *n == name)
            .map_or(0, |i| i as u8 + 1)
    }));
    match &f.candidates {
        None => {
            w.u8(0);
        }
        Some(Err(e)) => {
            w.u8(1);
            w.str_whole(e)?;
        }
        Some(Ok(found)) => {
            w.u8(2).u32(found.len() as u32);
            for c in found {
                encode_candidate(&mut w, c)?;
            }
        }
    }
    Some(w.0)
}

fn decode_file(r: &mut Reader) -> Result<IndexedFile, String> {
    let path = PathBuf::from(r.str("path", MAX_STR)?);
    let len = r.u64("len")?;
    let secs = r.u64("mtime")?;
    let nanos = r.u32("mtime nanos")?;
    if nanos >= 1_000_000_000 {
        return Err("an mtime's nanoseconds are a second or more".into());
    }
    let mtime = UNIX_EPOCH
        .checked_add(Duration::new(secs, nanos))
        .ok_or("an mtime past the end of time")?;
    let family = match r.u32("family")? {
        u32::MAX => None,
        i => Some(i as usize),
    };
    let foreign = match r.u8("foreign")? {
        0 => None,
        i => Some(
            *FOREIGN
                .get(i as usize - 1)
                .ok_or("an unknown foreign format")?,
        ),
    };
    let candidates = match r.u8("candidates")? {
        0 => None,
        1 => Some(Err(r.str("error", MAX_STR)?)),
        2 => {
            let n = r.u32("candidate count")?;
            let mut found = Vec::new();
            for _ in 0..n {
                found.push(decode_candidate(r)?);
            }
            Some(Ok(found))
        }
        _ => return Err("an unknown candidates tag".into()),
    };
    Ok(IndexedFile {
        path,
        stamp: Stamp {
            len,
            mtime: Some(mtime),
        },
        family,
        foreign,
        candidates,
    })
}

fn encode_candidate(w: &mut Writer, c: &Candidate) -> Option<()> {
    w.str_whole(&c.key)?;
    w.str_whole(&c.title)?;
    match &c.id {
        ImageId::Bytes { offset, bytes } => {
            w.u8(0).u64(*offset).u32(bytes.len() as u32);
            w.0.extend_from_slice(bytes);
        }
        ImageId::Length(len) => {
            w.u8(1).u64(*len);
        }
        ImageId::None => {
            w.u8(2);
        }
    }
    w.u32(c.fields.len() as u32);
    for (k, v) in &c.fields {
        w.str_whole(k)?;
        w.str_whole(v)?;
    }
    w.u32(c.includes.len() as u32);
    for i in &c.includes {
        w.str_whole(i)?;
    }
    Some(())
}

fn decode_candidate(r: &mut Reader) -> Result<Candidate, String> {
    let key = r.str("key", MAX_STR)?;
    let title = r.str("title", MAX_STR)?;
    let id = match r.u8("id")? {
        0 => {
            let offset = r.u64("id offset")?;
            let n = r.u32("id length")? as usize;
            ImageId::Bytes {
                offset,
                bytes: r.bytes(n, "id bytes")?.to_vec(),
            }
        }
        1 => ImageId::Length(r.u64("id length")?),
        2 => ImageId::None,
        _ => return Err("an unknown id kind".into()),
    };
    let mut fields = Vec::new();
    for _ in 0..r.u32("field count")? {
        fields.push((r.str("field", MAX_STR)?, r.str("value", MAX_STR)?));
    }
    let mut includes = Vec::new();
    for _ in 0..r.u32("include count")? {
        includes.push(r.str("include", MAX_STR)?);
    }
    Ok(Candidate {
        key,
        title,
        id,
        fields,
        includes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(now: SystemTime) -> FolderIndex {
        let old = now - Duration::from_secs(60);
        let file = |name: &str, family, candidates| IndexedFile {
            path: PathBuf::from(format!("/defs/{name}")),
            stamp: Stamp {
                len: 499,
                mtime: Some(old),
            },
            family,
            foreign: None,
            candidates,
        };
        FolderIndex {
            dir: "/defs".into(),
            builder: 7,
            families: vec![("ecuflash".into(), 0x1234_5678_9abc_def0)],
            files: vec![
                file(
                    "A2UG000N.xml",
                    Some(0),
                    Some(Ok(vec![Candidate {
                        key: "0".into(),
                        title: "A2UG000N".into(),
                        id: ImageId::Bytes {
                            offset: 0x2000,
                            bytes: b"A2UG000N".to_vec(),
                        },
                        fields: vec![("memmodel".into(), "SH7058".into())],
                        includes: vec!["A2UG000L".into()],
                    }])),
                ),
                file("broken.xml", Some(0), Some(Err("no <rom>".into()))),
                IndexedFile {
                    foreign: Some("RomRaider"),
                    ..file("logger.xml", None, None)
                },
                file(
                    "base.xml",
                    Some(0),
                    Some(Ok(vec![Candidate {
                        key: "0".into(),
                        title: "32BITBASE".into(),
                        id: ImageId::None,
                        fields: Vec::new(),
                        includes: Vec::new(),
                    }])),
                ),
            ],
        }
    }

    #[test]
    fn an_index_reads_back_as_written() {
        let now = SystemTime::now();
        let kept = sample(now);
        assert_eq!(FolderIndex::decode(&kept.encode(now)).unwrap(), kept);
    }

    #[test]
    fn files_touched_lately_are_not_kept() {
        let now = SystemTime::now();
        let mut kept = sample(now);
        kept.files[1].stamp.mtime = Some(now - Duration::from_millis(500));
        kept.files[2].stamp.mtime = None;
        let read = FolderIndex::decode(&kept.encode(now)).unwrap();
        let names: Vec<_> = read.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            names,
            [kept.files[0].path.clone(), kept.files[3].path.clone()]
        );
    }

    #[test]
    fn a_damaged_index_is_refused_not_misread() {
        let now = SystemTime::now();
        let mut bytes = sample(now).encode(now);
        // Every byte flipped in turn: the frame's checksum refuses each.
        for i in 0..bytes.len() {
            bytes[i] ^= 0x40;
            assert!(FolderIndex::decode(&bytes).is_err(), "byte {i}");
            bytes[i] ^= 0x40;
        }
        assert!(FolderIndex::decode(&bytes[..bytes.len() / 2]).is_err());
    }

    #[test]
    fn the_oldest_indexes_go_past_the_limit() {
        let cache = std::env::temp_dir().join(format!("ecu-kept-{:?}", SystemTime::now()));
        std::fs::create_dir_all(&cache).unwrap();
        let now = SystemTime::now();
        for i in 0..MAX_INDEXES + 3 {
            let mut kept = sample(now);
            kept.dir = PathBuf::from(format!("/defs{i}"));
            kept.write(&cache, now).unwrap();
            let written = std::fs::File::options()
                .write(true)
                .open(index_path(&cache, &kept.dir))
                .unwrap();
            written
                .set_modified(now - Duration::from_secs(1000 - i as u64))
                .unwrap();
        }
        std::fs::write(cache.join("definitions-x.idx.1.tmp"), "half").unwrap();
        let mut last = sample(now);
        last.dir = "/defs-last".into();
        last.write(&cache, now).unwrap();
        let left: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        let indexes = left
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == "idx"));
        assert_eq!(indexes.count(), MAX_INDEXES, "{left:?}");
        assert!(left.contains(&index_path(&cache, Path::new("/defs-last"))));
        assert!(!left.contains(&index_path(&cache, Path::new("/defs0"))));
        // A fresh temporary file may be another server's write in flight.
        assert!(left.contains(&cache.join("definitions-x.idx.1.tmp")));
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn each_folder_has_its_own_index() {
        let cache = Path::new("/cache");
        assert_ne!(
            index_path(cache, Path::new("/a/defs")),
            index_path(cache, Path::new("/b/defs"))
        );
        assert!(index_path(cache, Path::new("/a")).starts_with(cache));
    }
}
