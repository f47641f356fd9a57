//! Directory search through the DTA (INT 21h AH=4Eh/4Fh), TRUENAME
//! (AH=60h) and the DBCS lead-byte table (AH=63h), answered as MS-DOS 3.3
//! answers them (MS-DOS 4.0's published source, `SEARCH.ASM`, `ISEARCH.ASM`,
//! `DIR.ASM` and `MACRO2.ASM`, is the reference for what the 3.x line does).
//!
//! A search keeps its state where DOS keeps it: in the first 21 bytes of
//! the find data block at the DTA, so two searches with two DTAs run side by
//! side and a snapshot carries them. A search in a subdirectory also names
//! its directory in a small table in DOS's own memory (as DOS keeps its
//! directory clusters), which the DTA's state points into.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::files::{dos_attributes, entry_named, is_link};
use super::{Dos, dos_err, dos_ok};
use crate::cpu::{AX, CX, Cpu, DI, DS, DX, ES, SI, STUB_SEGMENT};

/// A name in FCB form: 8 name and 3 extension bytes, space padded, upper
/// case, `?` for any character.
pub type FcbName = [u8; 11];

/// Segment of DOS's own data: the stub segment, past the 256 IRET stubs.
pub const DOS_DATA_SEGMENT: u16 = STUB_SEGMENT;
/// Offset of the empty DBCS lead-byte table (a 00h,00h end pair) AH=63h
/// points at.
pub const DBCS_TABLE: u16 = 0x0100;
/// Offset of the search clock: a word counting directory-table uses.
const SEARCH_CLOCK: u16 = 0x03FE;
/// Offset of the table of directories searched (other than the root).
const SEARCH_DIRS: u16 = 0x0400;
/// Directory searches that can run at once in distinct subdirectories: a
/// deeper tree walk than this would need a path over DOS's 64 characters.
const SEARCH_SLOTS: u16 = 24;
/// Bytes per table slot: the slot's last-use clock (word), then the
/// directory's path from the root (`SUB\INNER`) as ASCIZ.
const SLOT_BYTES: u16 = 128;

/// Most entries a directory search lists per directory: the first by 8.3
/// name (a FAT hard disk's root holds 512; each search re-reads the
/// directory, so this bounds its work).
pub const MAX_SEARCH_ENTRIES: usize = 4096;
/// Longest canonical path: TRUENAME's buffer is 128 bytes with the NUL.
const MAX_PATH: usize = 127;
/// Drive C: as the find data block's drive byte (A=1).
const DRIVE_C: u8 = 3;

/// Offsets in the find data block: the search state, then what was found.
const FOUND_ATTR: u16 = 0x15;
const FOUND_TIME: u16 = 0x16;
const FOUND_DATE: u16 = 0x18;
const FOUND_SIZE: u16 = 0x1A;
const FOUND_NAME: u16 = 0x1E;

/// Attribute bits.
const ATTR_VOLUME: u8 = 0x08;
const ATTR_DIRECTORY: u8 = 0x10;
/// Bits a search ignores: read-only, archive and device (`attr_ignore`).
const ATTR_IGNORED: u8 = 0x61;
/// Bits an entry may only have when the search asks for them: hidden,
/// system and directory (`attr_all`).
const ATTR_HARD: u8 = 0x16;

/// Why a DOS path has no canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty, or a bad name with no directory part after it (DOS error 2).
    #[error("invalid name")]
    BadName,
    /// A bad directory part, `..` above the root, another drive or a path
    /// over 127 characters (DOS error 3).
    #[error("invalid path")]
    BadPath,
}

impl PathError {
    /// The DOS error code TRUENAME answers.
    pub fn code(self) -> u16 {
        match self {
            PathError::BadName => 2,
            PathError::BadPath => 3,
        }
    }
}

/// A path as DOS canonicalises it: components from the root of drive C:
/// (the current directory is always the root), each in FCB form.
#[derive(Debug, PartialEq, Eq)]
pub struct Canonical {
    /// The components, `.` and `..` resolved.
    pub components: Vec<FcbName>,
    /// Whether the path ended in a separator (`SUB\`), which DOS keeps.
    pub trailing: bool,
}

impl Canonical {
    /// The path as TRUENAME returns it: `C:\DIR\FILE.EXT`.
    pub fn text(&self) -> String {
        let mut s = String::from("C:\\");
        let parts: Vec<String> = self.components.iter().map(packed).collect();
        s.push_str(&parts.join("\\"));
        if self.trailing && !self.components.is_empty() {
            s.push('\\');
        }
        s
    }
}

fn is_separator(b: u8) -> bool {
    b == b'\\' || b == b'/'
}

/// Characters that end a name in a path (DOS's `CharType` table: control
/// characters and `. " / \ [ ] : < | > + = ; ,`).
fn ends_name(b: u8) -> bool {
    b < 0x20 || b".\"/\\[]:<|>+=;,".contains(&b)
}

/// Reads one path component from `s[i..]` as DOS's `NameTrans` does: up to
/// 8 name and 3 extension characters, upper-cased; characters past a
/// field's width are dropped (DOS truncates to 8.3), and `*` fills the rest
/// of its field with `?`. Spaces are allowed inside a name but cannot start
/// one. Returns the FCB form, whether it has wildcards and where it ends;
/// `None` when no name character was read.
fn component(s: &[u8], i: usize) -> Option<(FcbName, bool, usize)> {
    let mut out = [b' '; 11];
    let mut wild = false;
    let mut at = i;
    let mut field = |range: std::ops::Range<usize>, at: &mut usize| {
        let first = *at;
        let mut k = range.start;
        while let Some(&c) = s.get(*at) {
            if ends_name(c) || (c == b' ' && *at == first) {
                break;
            }
            *at += 1;
            if k >= range.end {
                continue;
            }
            match c {
                b'*' => {
                    out[k..range.end].fill(b'?');
                    k = range.end;
                    wild = true;
                }
                b'?' => {
                    out[k] = b'?';
                    k += 1;
                    wild = true;
                }
                _ => {
                    out[k] = c.to_ascii_uppercase();
                    k += 1;
                }
            }
        }
    };
    field(0..8, &mut at);
    if at == i {
        return None;
    }
    if s.get(at) == Some(&b'.') {
        at += 1;
        field(8..11, &mut at);
    }
    Some((out, wild, at))
}

/// Canonicalises a DOS path as TRUENAME does: `/` and `\` both separate,
/// letters are upper-cased, names cut to 8.3, `*` expanded to `?`s, `.` and
/// `..` resolved (never above the root); only drive C: exists. Wildcards
/// may appear in the last component only. The path need not exist.
pub fn canonical(path: &[u8]) -> Result<Canonical, PathError> {
    if path.is_empty() {
        return Err(PathError::BadName);
    }
    // DOS's ScanPathChar: a bad name with a separator after it is a bad
    // path, otherwise a bad file name.
    let bad_at = |from: usize| {
        if path[from..].iter().any(|&b| is_separator(b)) {
            PathError::BadPath
        } else {
            PathError::BadName
        }
    };
    let mut i = 0;
    if path.len() >= 2 && path[1] == b':' {
        if !path[0].eq_ignore_ascii_case(&b'C') {
            return Err(PathError::BadPath);
        }
        i = 2;
    }
    while i < path.len() && is_separator(path[i]) {
        i += 1;
    }
    let mut components: Vec<FcbName> = Vec::new();
    let mut wild_before = false;
    let mut trailing = false;
    while i < path.len() {
        trailing = false;
        if path[i] == b'.' {
            let dots = if path.get(i + 1) == Some(&b'.') { 2 } else { 1 };
            let end = i + dots;
            if end < path.len() && !is_separator(path[end]) {
                return Err(bad_at(i));
            }
            if dots == 2 && components.pop().is_none() {
                return Err(PathError::BadPath);
            }
            i = end;
        } else {
            let Some((name, wild, end)) = component(path, i) else {
                return Err(bad_at(i));
            };
            if end < path.len() && !is_separator(path[end]) {
                return Err(bad_at(i));
            }
            // A wildcard in a directory part: the search could not go on.
            if wild_before {
                return Err(if wild {
                    bad_at(end)
                } else {
                    PathError::BadPath
                });
            }
            wild_before = wild;
            components.push(name);
            i = end;
        }
        if i < path.len() {
            trailing = true;
            while i < path.len() && is_separator(path[i]) {
                i += 1;
            }
        }
    }
    let c = Canonical {
        components,
        trailing,
    };
    if c.text().len() > MAX_PATH {
        return Err(PathError::BadPath);
    }
    Ok(c)
}

/// An FCB-form name as DOS packs it for the find data block: name without
/// its padding, then `.` and the extension when there is one.
pub fn packed(name: &FcbName) -> String {
    let part = |b: &[u8]| {
        let end = b.iter().rposition(|&c| c != b' ').map_or(0, |p| p + 1);
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let (n, e) = (part(&name[..8]), part(&name[8..]));
    if e.is_empty() { n } else { format!("{n}.{e}") }
}

/// A host name as DOS sees it, if it is a valid 8.3 name that a program
/// could pass to open: ASCII, one name of 1-8 and an extension of 0-3
/// characters, none of them separators, wildcards or spaces. Long or
/// otherwise foreign names have no 8.3 form here and are not listed.
pub fn dos_name(host: &str) -> Option<FcbName> {
    if !host.is_ascii()
        || host.ends_with('.')
        || host.bytes().any(|b| b == b' ' || b == b'*' || b == b'?')
    {
        return None;
    }
    let (name, _, end) = component(host.as_bytes(), 0)?;
    let (n, e) = host.split_once('.').unwrap_or((host, ""));
    // Nothing dropped by the 8.3 cut and nothing left unread.
    (end == host.len() && n.len() <= 8 && e.len() <= 3).then_some(name)
}

/// One entry a search can list.
#[derive(Clone, Debug)]
struct Entry {
    /// 0 for `.` and `..` (listed first, as DOS's directory holds them),
    /// 1 for the rest.
    rank: u8,
    name: FcbName,
    /// The host name (`.` or `..` for those).
    host: String,
    dir: bool,
}

impl Entry {
    fn key(&self) -> (u8, FcbName) {
        (self.rank, self.name)
    }
}

/// The FCB form of `.` or `..`.
fn dots(n: usize) -> FcbName {
    let mut f = [b' '; 11];
    f[..n].fill(b'.');
    f
}

/// A directory's entries as searches list them, kept while the directory
/// is unchanged (its modification time), so that a FindNext loop reads it
/// once rather than once per file.
pub(super) struct Listing {
    dir: PathBuf,
    modified: SystemTime,
    entries: Arc<[Entry]>,
}

/// What a search reads from and writes to the DTA's first 21 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SearchState {
    template: FcbName,
    attr: u8,
    /// The listing position to go on from when the last name is unknown.
    next: u16,
    /// 0: the root; 1..: a slot of the directory table.
    slot: u8,
    /// Check of the directory's path (a slot may be reused).
    dir_check: u16,
    /// Check of the last name returned (the program may overwrite it).
    name_check: u16,
}

/// A 16-bit check (FNV-1a, folded).
fn check(bytes: &[u8]) -> u16 {
    let mut h: u32 = 0x811C_9DC5;
    for &b in bytes {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 16)) as u16
}

fn read_bytes(cpu: &Cpu, seg: u16, off: u16, n: u16) -> Vec<u8> {
    (0..n)
        .map(|i| cpu.rb(Cpu::lin(seg, off.wrapping_add(i))))
        .collect()
}

fn write_bytes(cpu: &mut Cpu, seg: u16, off: u16, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        cpu.wb(Cpu::lin(seg, off.wrapping_add(i as u16)), *b);
    }
}

impl SearchState {
    /// Reads the state at the DTA; `None` when it is no search of ours.
    fn read(cpu: &Cpu, (seg, off): (u16, u16)) -> Option<SearchState> {
        let b = read_bytes(cpu, seg, off, 21);
        if b[0] != DRIVE_C {
            return None;
        }
        let word = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(SearchState {
            template: b[1..12].try_into().ok()?,
            attr: b[12],
            next: word(13),
            slot: b[15],
            dir_check: word(16),
            name_check: word(18),
        })
    }

    /// Writes the state at the DTA, in DOS's order: drive, template,
    /// attribute, entry position; then this DOS's directory slot and checks
    /// where DOS keeps its directory cluster and reserved bytes.
    fn write(&self, cpu: &mut Cpu, (seg, off): (u16, u16)) {
        let mut b = vec![DRIVE_C];
        b.extend_from_slice(&self.template);
        b.push(self.attr);
        b.extend_from_slice(&self.next.to_le_bytes());
        b.push(self.slot);
        b.extend_from_slice(&self.dir_check.to_le_bytes());
        b.extend_from_slice(&self.name_check.to_le_bytes());
        b.push(0);
        write_bytes(cpu, seg, off, &b);
    }
}

/// Whether a search for `attr` with `template` lists `e` (DOS's FINDENTRY
/// and MatchAttributes): the name matches, `?` matching any character
/// (padding too, so `AB?` finds `AB`); an entry with hidden, system or
/// directory bits only when the search has them; a search for the volume
/// label alone lists only labels, and drive C: has none.
fn matches(template: &FcbName, attr: u8, e: &Entry) -> bool {
    let search = attr & !ATTR_IGNORED;
    if search == ATTR_VOLUME {
        return false;
    }
    let found = if e.dir { ATTR_DIRECTORY } else { 0 };
    found & !search & ATTR_HARD == 0
        && template
            .iter()
            .zip(e.name.iter())
            .all(|(t, c)| *t == b'?' || t == c)
}

/// DOS's packed time and date of a host time, in UTC (the plugin has no
/// time zone), clamped to what the fields hold: 1980-01-01 to 2107-12-31.
pub fn dos_time_date(t: SystemTime) -> (u16, u16) {
    let secs = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year < 1980 {
        return (0, 0x0021);
    }
    if year > 2107 {
        return (23 << 11 | 59 << 5 | 29, 127 << 9 | 12 << 5 | 31);
    }
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    (
        (h << 11 | m << 5 | (s / 2)) as u16,
        ((year - 1980) << 9 | month << 5 | day) as u16,
    )
}

impl Dos {
    /// INT 21h AH=4Eh: find the first entry matching the ASCIZ pattern at
    /// DS:DX with attributes CX, into the find data block at the DTA.
    /// Errors: 3 when the path is malformed or its directory does not
    /// exist, 18 when nothing matches (MS-DOS 3.x/4.x; DOS 2.x said 2 for
    /// a bad path).
    pub(super) fn find_first(&mut self, cpu: &mut Cpu) {
        let pattern = Self::read_asciiz(cpu, cpu.sregs[DS], cpu.regs[DX]);
        let attr = cpu.regs[CX] as u8;
        // DOS maps every malformed path onto "path not found".
        let Ok(mut c) = canonical(&pattern) else {
            return dos_err(cpu, 3);
        };
        let template = if c.trailing { None } else { c.components.pop() };
        let Some(dir) = self.search_dir(&c.components) else {
            return dos_err(cpu, 3);
        };
        // The root (or a directory named with a trailing `\`) itself
        // cannot be found.
        let Some(template) = template else {
            return dos_err(cpu, 18);
        };
        let path = dir_text(&c.components);
        let slot = if c.components.is_empty() {
            0
        } else {
            Self::claim_slot(cpu, &path)
        };
        let state = SearchState {
            template,
            attr,
            next: 0,
            slot,
            dir_check: check(path.as_bytes()),
            name_check: 0,
        };
        let entries = self.listing(&dir, !c.components.is_empty());
        self.search_on(cpu, &dir, &entries, state, 0);
    }

    /// INT 21h AH=4Fh: the next entry of the search whose state is at the
    /// DTA. Error 18 when there is none (or the DTA holds no search).
    pub(super) fn find_next(&mut self, cpu: &mut Cpu) {
        let Some(state) = SearchState::read(cpu, self.dta) else {
            return dos_err(cpu, 18);
        };
        if state.slot > SEARCH_SLOTS as u8 {
            return dos_err(cpu, 18);
        }
        let path = if state.slot == 0 {
            String::new()
        } else {
            Self::slot_path(cpu, state.slot)
        };
        // The slot went to another directory since (or was overwritten).
        if check(path.as_bytes()) != state.dir_check {
            return dos_err(cpu, 18);
        }
        let components = if path.is_empty() {
            Some(Vec::new())
        } else {
            canonical(path.as_bytes()).ok().map(|c| c.components)
        };
        let Some(dir) = components.and_then(|c| self.search_dir(&c)) else {
            return dos_err(cpu, 18);
        };
        let entries = self.listing(&dir, state.slot != 0);
        // Go on after the name last returned, wherever it now sorts: files
        // deleted or made since (a program deleting what it finds) then
        // neither skip nor repeat an entry. The position is for a program
        // that overwrote the name.
        let found = read_bytes(cpu, self.dta.0, self.dta.1.wrapping_add(FOUND_NAME), 13);
        let found = &found[..found.iter().position(|&b| b == 0).unwrap_or(13)];
        let last = match found {
            b"." => Some((0, dots(1))),
            b".." => Some((0, dots(2))),
            _ => std::str::from_utf8(found)
                .ok()
                .and_then(dos_name)
                .map(|n| (1, n)),
        }
        .filter(|(_, n)| check(n) == state.name_check);
        let start = match last {
            Some(key) => entries.partition_point(|e| e.key() <= key),
            None => state.next as usize,
        };
        self.search_on(cpu, &dir, &entries, state, start);
    }

    /// Writes the first entry from `start` on that the search lists into
    /// the find data block, or answers error 18.
    fn search_on(
        &self,
        cpu: &mut Cpu,
        dir: &Path,
        entries: &[Entry],
        mut state: SearchState,
        start: usize,
    ) {
        for (i, e) in entries.iter().enumerate().skip(start) {
            if !matches(&state.template, state.attr, e) {
                continue;
            }
            // Gone since the listing was made: look further.
            let Ok(meta) = std::fs::symlink_metadata(dir.join(&e.host)) else {
                continue;
            };
            let (time, date) = meta.modified().map_or((0, 0x0021), dos_time_date);
            let size = if e.dir {
                0
            } else {
                meta.len().min(u32::MAX as u64) as u32
            };
            state.next = (i + 1) as u16;
            state.name_check = check(&e.name);
            state.write(cpu, self.dta);
            let (seg, off) = self.dta;
            let attr = if e.dir {
                ATTR_DIRECTORY
            } else {
                dos_attributes(&meta)
            };
            cpu.wb(Cpu::lin(seg, off.wrapping_add(FOUND_ATTR)), attr);
            cpu.write_word(seg, off.wrapping_add(FOUND_TIME), time);
            cpu.write_word(seg, off.wrapping_add(FOUND_DATE), date);
            cpu.write_word(seg, off.wrapping_add(FOUND_SIZE), size as u16);
            cpu.write_word(seg, off.wrapping_add(FOUND_SIZE + 2), (size >> 16) as u16);
            let mut name = packed(&e.name).into_bytes();
            name.push(0);
            write_bytes(cpu, seg, off.wrapping_add(FOUND_NAME), &name);
            return dos_ok(cpu);
        }
        // DOS leaves the state as it was: a later FindNext finds files
        // made since, as DOS finds entries added to the directory.
        state.write(cpu, self.dta);
        dos_err(cpu, 18);
    }

    /// The host directory a search's directory components name, found as
    /// open finds them (ASCII case ignored, links refused), or `None`.
    fn search_dir(&self, components: &[FcbName]) -> Option<PathBuf> {
        let mut dir = self.root.clone();
        for c in components {
            let host = entry_named(&dir, &packed(c))?;
            dir.push(host);
            if is_link(&dir) || !dir.is_dir() {
                return None;
            }
        }
        Some(dir)
    }

    /// The entries of `dir` a search lists, sorted by 8.3 name, with `.`
    /// and `..` first in a subdirectory: for each 8.3 name the entry open
    /// would reach (see [`entry_named`]), when it is a plain file or a
    /// directory. At most [`MAX_SEARCH_ENTRIES`]; what is left out (names
    /// with no 8.3 form, entries past the cap) is kept for a note.
    fn listing(&mut self, dir: &Path, subdir: bool) -> Arc<[Entry]> {
        let modified = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
        if let (Some(l), Some(m)) = (&self.search_cache, modified)
            && l.dir == dir
            && l.modified == m
        {
            return l.entries.clone();
        }
        let mut seen: HashSet<FcbName> = HashSet::new();
        let mut entries = Vec::new();
        let mut foreign = 0usize;
        for e in plugin_kit::paths::read_dir_entries(dir).unwrap_or_default() {
            let host = e.file_name().to_string_lossy().into_owned();
            let Some(name) = dos_name(&host) else {
                foreign += 1;
                continue;
            };
            // Host names differing in case only: open reaches the first.
            if !seen.insert(name) {
                continue;
            }
            // Links and devices: open refuses them.
            let Ok(t) = e.file_type() else { continue };
            if t.is_symlink() || !(t.is_file() || t.is_dir()) {
                continue;
            }
            entries.push(Entry {
                rank: 1,
                name,
                host,
                dir: t.is_dir(),
            });
        }
        entries.sort_by_key(Entry::key);
        let over = entries.len().saturating_sub(MAX_SEARCH_ENTRIES);
        entries.truncate(MAX_SEARCH_ENTRIES);
        if subdir {
            for (n, host) in [(2, ".."), (1, ".")] {
                entries.insert(
                    0,
                    Entry {
                        rank: 0,
                        name: dots(n),
                        host: host.into(),
                        dir: true,
                    },
                );
            }
        }
        if foreign > 0 || over > 0 {
            let shown = dir
                .strip_prefix(&self.root)
                .map(|p| format!("C:\\{}", p.to_string_lossy().replace('/', "\\")))
                .unwrap_or_else(|_| "C:".into());
            let mut parts = Vec::new();
            if over > 0 {
                parts.push(format!(
                    "listed the first {MAX_SEARCH_ENTRIES} entries by name and left out {over} (the cap per directory)"
                ));
            }
            if foreign > 0 {
                parts.push(format!(
                    "left out {foreign} host name(s) with no 8.3 form (DOS programs see 8.3 names only)"
                ));
            }
            self.search_note = Some(format!(
                "a DOS directory search (INT 21h AH=4Eh/4Fh) in {shown} {}",
                parts.join(" and ")
            ));
        }
        let entries: Arc<[Entry]> = entries.into();
        if let Some(modified) = modified {
            self.search_cache = Some(Listing {
                dir: dir.to_path_buf(),
                modified,
                entries: entries.clone(),
            });
        }
        entries
    }

    /// A slot of the directory table for `path`: its own if it has one,
    /// else a free one, else the one used longest ago.
    fn claim_slot(cpu: &mut Cpu, path: &str) -> u8 {
        let clock = cpu.read_word(DOS_DATA_SEGMENT, SEARCH_CLOCK);
        let mut pick = None;
        let mut oldest = (0u16, 1u8);
        for k in 1..=SEARCH_SLOTS as u8 {
            let held = Self::slot_path(cpu, k);
            if held == path {
                pick = Some(k);
                break;
            }
            if held.is_empty() && pick.is_none() {
                pick = Some(k);
            }
            let age = clock.wrapping_sub(cpu.read_word(DOS_DATA_SEGMENT, slot_offset(k)));
            if age >= oldest.0 {
                oldest = (age, k);
            }
        }
        let k = pick.unwrap_or(oldest.1);
        let at = slot_offset(k);
        cpu.write_word(DOS_DATA_SEGMENT, at, clock);
        let mut text = path.as_bytes().to_vec();
        text.push(0);
        write_bytes(cpu, DOS_DATA_SEGMENT, at + 2, &text);
        cpu.write_word(DOS_DATA_SEGMENT, SEARCH_CLOCK, clock.wrapping_add(1));
        k
    }

    /// The directory path slot `k` holds (empty when free).
    fn slot_path(cpu: &Cpu, k: u8) -> String {
        let b = read_bytes(cpu, DOS_DATA_SEGMENT, slot_offset(k) + 2, SLOT_BYTES - 2);
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    }

    /// INT 21h AH=60h (TRUENAME): the canonical path of the ASCIZ name at
    /// DS:SI into the 128-byte buffer at ES:DI; error 2 or 3 as DOS.
    pub(super) fn truename(&mut self, cpu: &mut Cpu) {
        let name = Self::read_asciiz(cpu, cpu.sregs[DS], cpu.regs[SI]);
        match canonical(&name) {
            Ok(c) => {
                let mut text = c.text().into_bytes();
                text.push(0);
                write_bytes(cpu, cpu.sregs[ES], cpu.regs[DI], &text);
                // AH=0; AL is the current directory's last character.
                cpu.regs[AX] = b'\\' as u16;
                dos_ok(cpu);
            }
            Err(e) => dos_err(cpu, e.code()),
        }
    }

    /// INT 21h AX=6300h: the DBCS lead-byte table, as a DOS without double
    /// byte characters answers (US DOS 4.0 and later): DS:SI at an empty
    /// table, AL=0. US MS-DOS 3.30 sets AL=0 and leaves DS:SI alone;
    /// pointing at an empty table is what both kinds of caller accept.
    pub(super) fn dbcs_table(cpu: &mut Cpu) {
        cpu.sregs[DS] = DOS_DATA_SEGMENT;
        cpu.regs[SI] = DBCS_TABLE;
        cpu.regs[AX] &= 0xFF00;
        dos_ok(cpu);
    }
}

/// Offset of directory-table slot `k` (1-based).
fn slot_offset(k: u8) -> u16 {
    SEARCH_DIRS + (k as u16 - 1) * SLOT_BYTES
}

/// `SUB\INNER` for the components of a directory (empty for the root).
fn dir_text(components: &[FcbName]) -> String {
    components.iter().map(packed).collect::<Vec<_>>().join("\\")
}

/// Sets DOS's own data at load: the empty DBCS table and a clear
/// directory table.
pub(super) fn init_dos_data(cpu: &mut Cpu) {
    write_bytes(cpu, DOS_DATA_SEGMENT, DBCS_TABLE, &[0; 4]);
    let table = vec![0u8; (SEARCH_SLOTS * SLOT_BYTES) as usize + 2];
    write_bytes(cpu, DOS_DATA_SEGMENT, SEARCH_CLOCK, &table);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{BX, CF, Model};
    use crate::dos::PSP_SEGMENT;

    /// ABC.TXT's modification time: 2001-02-03 04:05:06 UTC.
    const ABC_TIME: u64 = 981_173_106;

    /// Drive C: with files of several kinds, and a machine loaded there.
    fn drive(name: &str) -> (Dos, Cpu, PathBuf) {
        let dir = std::env::temp_dir().join(format!("x86-search-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("SUB")).unwrap();
        for (n, body) in [
            ("A.TXT", "a"),
            ("ABC.TXT", "abc"),
            ("AXC.TXT", "axc"),
            ("lower.txt", "lower"),
            ("MAIN.C", "c"),
            ("MAIN.CC", "cc"),
            ("README", "readme"),
            ("longname.text", "long"),
            ("SUB/INNER.DAT", "inner"),
        ] {
            std::fs::write(dir.join(n), body).unwrap();
        }
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(ABC_TIME);
        std::fs::File::options()
            .write(true)
            .open(dir.join("ABC.TXT"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        let mut cpu = Cpu::new(Model::I80186);
        let mut dos = Dos::new(dir.clone());
        dos.load(&mut cpu, &dir.join("T.COM"), &[0xC3], "").unwrap();
        (dos, cpu, dir)
    }

    /// Writes `text` and a NUL at PSP:`off`.
    fn asciiz(cpu: &mut Cpu, off: u16, text: &str) {
        let mut b = text.as_bytes().to_vec();
        b.push(0);
        write_bytes(cpu, PSP_SEGMENT, off, &b);
    }

    /// INT 21h with AX and the given registers set; the carry and AX after.
    fn int21(dos: &mut Dos, cpu: &mut Cpu, ax: u16, regs: &[(usize, u16)]) -> (bool, u16) {
        cpu.regs[AX] = ax;
        for &(r, v) in regs {
            cpu.regs[r] = v;
        }
        cpu.sregs[DS] = PSP_SEGMENT;
        cpu.sregs[ES] = PSP_SEGMENT;
        dos.service(0x21, cpu);
        (cpu.flags & CF != 0, cpu.regs[AX])
    }

    /// FindFirst on `pattern` with `attr`, then FindNext until it fails:
    /// the names found and the error that ended the search.
    fn search(dos: &mut Dos, cpu: &mut Cpu, pattern: &str, attr: u16) -> (Vec<String>, u16) {
        asciiz(cpu, 0x200, pattern);
        let mut names = Vec::new();
        let (mut failed, mut ax) = int21(dos, cpu, 0x4E00, &[(DX, 0x200), (CX, attr)]);
        while !failed {
            names.push(found_name(cpu, dos.dta));
            (failed, ax) = int21(dos, cpu, 0x4F00, &[]);
        }
        (names, ax)
    }

    fn found_name(cpu: &Cpu, (seg, off): (u16, u16)) -> String {
        let b = read_bytes(cpu, seg, off + FOUND_NAME, 13);
        let end = b.iter().position(|&c| c == 0).unwrap();
        String::from_utf8(b[..end].to_vec()).unwrap()
    }

    #[test]
    fn find_first_and_next_walk_a_directory_with_wildcards() {
        let (mut dos, mut cpu, dir) = drive("walk");
        // The default DTA is PSP:80h.
        assert_eq!(dos.dta, (PSP_SEGMENT, 0x80));
        let (all, end) = search(&mut dos, &mut cpu, "*.*", 0);
        assert_eq!(
            all,
            [
                "A.TXT",
                "ABC.TXT",
                "AXC.TXT",
                "LOWER.TXT",
                "MAIN.C",
                "MAIN.CC",
                "README"
            ]
        );
        assert_eq!(end, 18, "no more files");
        // Every name found opens (AH=3Dh), and nothing else was found: the
        // long name and the directory are not listed.
        for n in &all {
            asciiz(&mut cpu, 0x200, n);
            let (failed, h) = int21(&mut dos, &mut cpu, 0x3D00, &[(DX, 0x200)]);
            assert!(!failed, "{n}");
            int21(&mut dos, &mut cpu, 0x3E00, &[(BX, h)]);
        }
        assert_eq!(
            dos.search_note.as_deref(),
            Some(
                "a DOS directory search (INT 21h AH=4Eh/4Fh) in C:\\ left out 1 host name(s) with no 8.3 form (DOS programs see 8.3 names only)"
            )
        );
        // `?` matches one character (or the padding); `*` the rest of a field.
        assert_eq!(
            search(&mut dos, &mut cpu, "A?C.TXT", 0).0,
            ["ABC.TXT", "AXC.TXT"]
        );
        assert_eq!(
            search(&mut dos, &mut cpu, "MAIN.C?", 0).0,
            ["MAIN.C", "MAIN.CC"]
        );
        assert_eq!(search(&mut dos, &mut cpu, "*.C", 0).0, ["MAIN.C"]);
        assert_eq!(search(&mut dos, &mut cpu, "*", 0).0, ["README"]);
        assert_eq!(search(&mut dos, &mut cpu, "c:\\readme", 0).0, ["README"]);
        assert_eq!(search(&mut dos, &mut cpu, "sub/*.*", 0).0, ["INNER.DAT"]);
        // The 43-byte find data block for ABC.TXT.
        asciiz(&mut cpu, 0x200, "abc.txt");
        let (failed, _) = int21(&mut dos, &mut cpu, 0x4E00, &[(DX, 0x200), (CX, 0)]);
        assert!(!failed);
        let block = read_bytes(&cpu, PSP_SEGMENT, 0x80, 43);
        assert_eq!(block[0], 3, "drive C:");
        assert_eq!(&block[1..12], b"ABC     TXT", "search template");
        assert_eq!(block[12], 0, "search attribute");
        assert_eq!(block[0x15], 0x20, "archive");
        assert_eq!(
            u16::from_le_bytes([block[0x16], block[0x17]]),
            4 << 11 | 5 << 5 | 3
        );
        assert_eq!(
            u16::from_le_bytes([block[0x18], block[0x19]]),
            21 << 9 | 2 << 5 | 3
        );
        assert_eq!(&block[0x1A..0x1E], &[3, 0, 0, 0], "size");
        assert_eq!(&block[0x1E..0x26], b"ABC.TXT\0");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn searches_filter_attributes_as_dos() {
        let (mut dos, mut cpu, dir) = drive("attrs");
        // Directories only when asked for; normal files always.
        let (with_dirs, _) = search(&mut dos, &mut cpu, "*.*", 0x10);
        assert_eq!(with_dirs.len(), 8);
        assert!(with_dirs.contains(&"SUB".to_string()));
        assert_eq!(search(&mut dos, &mut cpu, "S*", 0x10).0, ["SUB"]);
        assert_eq!(cpu.rb(Cpu::lin(PSP_SEGMENT, 0x80 + FOUND_ATTR)), 0x10);
        // Read-only, hidden, system and archive asked: still no directory.
        assert_eq!(search(&mut dos, &mut cpu, "*.*", 0x27).0.len(), 7);
        // The volume label alone: drive C: has none, files are not listed.
        assert_eq!(search(&mut dos, &mut cpu, "*.*", 0x08), (vec![], 18));
        // A subdirectory holds `.` and `..`, listed first, as directories.
        assert_eq!(
            search(&mut dos, &mut cpu, "SUB\\*.*", 0x10).0,
            [".", "..", "INNER.DAT"]
        );
        assert_eq!(search(&mut dos, &mut cpu, "SUB\\*.*", 0).0, ["INNER.DAT"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn search_failures_answer_dos_error_codes() {
        let (mut dos, mut cpu, dir) = drive("errors");
        for (pattern, code) in [
            ("*.XYZ", 18),      // no match: no more files
            ("NOSUCH.TXT", 18), // no match without wildcards
            ("\\", 18),         // the root itself cannot be found
            ("NOSUCH\\*.*", 3), // path not found
            ("A.TXT\\*.*", 3),  // a file as a directory
            ("..\\*.*", 3),     // above the root
            ("D:*.*", 3),       // no drive D:
            ("*\\A.TXT", 3),    // a wildcard in the directory part
            ("", 3),            // malformed: path not found
        ] {
            assert_eq!(
                search(&mut dos, &mut cpu, pattern, 0),
                (vec![], code),
                "{pattern:?}"
            );
            assert!(cpu.flags & CF != 0);
        }
        // Past the end FindNext keeps failing; a DTA holding no search fails.
        search(&mut dos, &mut cpu, "A.TXT", 0);
        assert_eq!(int21(&mut dos, &mut cpu, 0x4F00, &[]), (true, 18));
        int21(&mut dos, &mut cpu, 0x1A00, &[(DX, 0x300)]);
        assert_eq!(int21(&mut dos, &mut cpu, 0x4F00, &[]), (true, 18));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn two_searches_with_their_own_dtas_interleave() {
        let (mut dos, mut cpu, dir) = drive("interleave");
        let set_dta = |dos: &mut Dos, cpu: &mut Cpu, off: u16| {
            int21(dos, cpu, 0x1A00, &[(DX, off)]);
            // AH=2Fh answers what AH=1Ah set.
            int21(dos, cpu, 0x2F00, &[]);
            assert_eq!((cpu.sregs[ES], cpu.regs[BX]), (PSP_SEGMENT, off));
        };
        let first = |dos: &mut Dos, cpu: &mut Cpu, dta: u16, pattern: &str, attr: u16| {
            set_dta(dos, cpu, dta);
            asciiz(cpu, 0x200, pattern);
            assert!(!int21(dos, cpu, 0x4E00, &[(DX, 0x200), (CX, attr)]).0);
            found_name(cpu, (PSP_SEGMENT, dta))
        };
        let next = |dos: &mut Dos, cpu: &mut Cpu, dta: u16| {
            set_dta(dos, cpu, dta);
            let (failed, ax) = int21(dos, cpu, 0x4F00, &[]);
            if failed {
                format!("error {ax}")
            } else {
                found_name(cpu, (PSP_SEGMENT, dta))
            }
        };
        assert_eq!(first(&mut dos, &mut cpu, 0x300, "*.TXT", 0), "A.TXT");
        assert_eq!(first(&mut dos, &mut cpu, 0x400, "SUB\\*.*", 0x10), ".");
        assert_eq!(next(&mut dos, &mut cpu, 0x300), "ABC.TXT");
        assert_eq!(next(&mut dos, &mut cpu, 0x400), "..");
        assert_eq!(next(&mut dos, &mut cpu, 0x300), "AXC.TXT");
        assert_eq!(next(&mut dos, &mut cpu, 0x400), "INNER.DAT");
        assert_eq!(next(&mut dos, &mut cpu, 0x300), "LOWER.TXT");
        assert_eq!(next(&mut dos, &mut cpu, 0x400), "error 18");
        assert_eq!(next(&mut dos, &mut cpu, 0x300), "error 18");

        // A program deleting each file it finds (DEL *.TXT) neither skips
        // nor repeats one: the search goes on after the last name.
        let mut deleted = vec![first(&mut dos, &mut cpu, 0x300, "*.TXT", 0)];
        loop {
            let name = deleted.last().unwrap().clone();
            asciiz(&mut cpu, 0x200, &name);
            assert!(
                !int21(&mut dos, &mut cpu, 0x4100, &[(DX, 0x200)]).0,
                "{name}"
            );
            match next(&mut dos, &mut cpu, 0x300) {
                n if n.starts_with("error") => break,
                n => deleted.push(n),
            }
        }
        assert_eq!(deleted, ["A.TXT", "ABC.TXT", "AXC.TXT", "LOWER.TXT"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truename_gives_the_canonical_path() {
        let (mut dos, mut cpu, dir) = drive("truename");
        for (name, want) in [
            ("data.txt", Ok("C:\\DATA.TXT")),
            ("sub/../Sub\\.\\file.c", Ok("C:\\SUB\\FILE.C")),
            ("c:longfilename.text", Ok("C:\\LONGFILE.TEX")),
            ("*.*", Ok("C:\\????????.???")),
            ("SUB\\", Ok("C:\\SUB\\")),
            ("\\", Ok("C:\\")),
            ("c:", Ok("C:\\")),
            ("", Err(2)),
            ("A+B", Err(2)),
            ("A+B\\C", Err(3)),
            ("..\\X", Err(3)),
            ("D:X", Err(3)),
            ("*\\X", Err(3)),
        ] {
            asciiz(&mut cpu, 0x200, name);
            write_bytes(&mut cpu, PSP_SEGMENT, 0x300, &[0xEE; 128]);
            let (failed, ax) = int21(&mut dos, &mut cpu, 0x6000, &[(SI, 0x200), (DI, 0x300)]);
            let got = if failed {
                Err(ax)
            } else {
                let b = read_bytes(&cpu, PSP_SEGMENT, 0x300, 128);
                let end = b.iter().position(|&c| c == 0).unwrap();
                Ok(String::from_utf8(b[..end].to_vec()).unwrap())
            };
            assert_eq!(got, want.map(String::from), "{name:?}");
        }
        assert!(dos.unsupported.is_empty(), "{:?}", dos.unsupported);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_dbcs_lead_byte_table_is_empty() {
        let (mut dos, mut cpu, dir) = drive("dbcs");
        cpu.regs[SI] = 0x1234;
        let (failed, ax) = int21(&mut dos, &mut cpu, 0x6300, &[]);
        assert!(!failed);
        assert_eq!(ax & 0xFF, 0);
        let (ds, si) = (cpu.sregs[DS], cpu.regs[SI]);
        assert_eq!((ds, si), (DOS_DATA_SEGMENT, DBCS_TABLE));
        assert_eq!(cpu.read_word(ds, si), 0, "the 00h,00h end pair");
        assert!(dos.unsupported.is_empty(), "{:?}", dos.unsupported);
        // The interim console flag (Far East DOS only) is listed.
        int21(&mut dos, &mut cpu, 0x6301, &[]);
        assert_eq!(dos.unsupported.get("INT 21h AX=6301h"), Some(&1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_service_not_performed_is_listed_with_its_count() {
        let (mut dos, mut cpu, dir) = drive("unsupported");
        asciiz(&mut cpu, 0x200, "SUB");
        int21(&mut dos, &mut cpu, 0x3B00, &[(DX, 0x200)]); // chdir
        int21(&mut dos, &mut cpu, 0x3B00, &[(DX, 0x200)]);
        asciiz(&mut cpu, 0x200, "A.TXT");
        assert_eq!(
            int21(&mut dos, &mut cpu, 0x4301, &[(DX, 0x200), (CX, 1)]),
            (false, 0x4301),
            "set attributes answers as DOS, but nothing is kept"
        );
        assert!(int21(&mut dos, &mut cpu, 0x4401, &[(BX, 1)]).0);
        assert!(int21(&mut dos, &mut cpu, 0x4203, &[(BX, 1)]).0);
        // Services performed are not listed.
        search(&mut dos, &mut cpu, "*.*", 0);
        int21(&mut dos, &mut cpu, 0x6000, &[(SI, 0x200), (DI, 0x300)]);
        int21(&mut dos, &mut cpu, 0x6300, &[]);
        int21(&mut dos, &mut cpu, 0x4400, &[(BX, 1)]);
        let listed: Vec<(&str, u64)> = dos
            .unsupported
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(
            listed,
            [
                ("INT 21h AH=3Bh", 2),
                ("INT 21h AX=4203h", 1),
                ("INT 21h AX=4301h", 1),
                ("INT 21h AX=4401h", 1)
            ]
        );
        // Bounded: every subfunction of every partly performed function
        // (and every AH of the interrupts) fits the bound restore checks.
        for ah in [0x33u16, 0x37, 0x42, 0x43, 0x44, 0x58, 0x63, 0x3B] {
            for al in 0..=255u16 {
                int21(
                    &mut dos,
                    &mut cpu,
                    ah << 8 | al,
                    &[(BX, 1), (CX, 0), (DX, 0x200)],
                );
            }
        }
        for ah in 0..=255u16 {
            if ![0x00, 0x31, 0x4B, 0x4C].contains(&ah) {
                int21(&mut dos, &mut cpu, ah << 8 | 0xFF, &[(BX, 1), (DX, 0x200)]);
            }
        }
        assert!(dos.unsupported.len() <= super::super::MAX_UNSUPPORTED_SERVICES);
        assert!(
            dos.unsupported
                .keys()
                .all(|k| super::super::is_service_name(k))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_lists_at_most_the_cap_and_says_so() {
        let dir = std::env::temp_dir().join(format!("x86-search-cap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..MAX_SEARCH_ENTRIES + 3 {
            std::fs::write(dir.join(format!("F{i:05}.TXT")), "").unwrap();
        }
        let mut cpu = Cpu::new(Model::I80186);
        let mut dos = Dos::new(dir.clone());
        dos.load(&mut cpu, &dir.join("T.COM"), &[0xC3], "").unwrap();
        let (names, end) = search(&mut dos, &mut cpu, "*.TXT", 0);
        assert_eq!((names.len(), end), (MAX_SEARCH_ENTRIES, 18));
        assert_eq!(
            names.last().unwrap(),
            &format!("F{:05}.TXT", MAX_SEARCH_ENTRIES - 1)
        );
        let note = dos.search_note.unwrap();
        assert!(
            note.contains("listed the first 4096 entries by name and left out 3"),
            "{note}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dos_dates_and_names() {
        let t = |s| dos_time_date(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(t(0), (0, 0x0021), "before 1980: 1 Jan 1980");
        // 2000-02-29 23:59:59 UTC (a leap day).
        assert_eq!(
            t(951_868_799),
            (23 << 11 | 59 << 5 | 29, 20 << 9 | 2 << 5 | 29)
        );
        assert_eq!(dos_name("readme"), Some(*b"README     "));
        assert_eq!(dos_name("a.b.c"), None);
        assert_eq!(dos_name("abc."), None);
        assert_eq!(dos_name(".profile"), None);
        assert_eq!(dos_name("toolongname.c"), None);
        assert_eq!(dos_name("a b.txt"), None);
        assert_eq!(dos_name("x.tx+"), None);
        assert_eq!(packed(b"A       B  "), "A.B");
        assert_eq!(packed(b"README     "), "README");
    }
}
