//! import_btsnoop: a capture file (btsnoop, as Android's HCI snoop log and
//! Linux's btmon write it) read as a stream into the packet ring, with what
//! it held (ATT writes and notifications per handle), what it pushed out,
//! and a content hash so the same capture is not imported twice.

use super::*;

/// Largest capture imported. It is read as a stream (one record in memory
/// at a time), so this bounds the time an import takes, not its memory.
const MAX_IMPORT_BYTES: u64 = 256 << 20;
/// Bytes read from a capture at a time.
const IMPORT_READ_BUFFER: usize = 256 << 10;
/// Imports remembered (for duplicate checks and notes); older ones are
/// forgotten, so repeated imports cannot grow the state without bound.
const MAX_IMPORTS: usize = 64;
/// One import, remembered for duplicate checks, default windows and notes.
#[derive(Debug, Clone)]
pub struct ImportRecord {
    /// 1, 2, … since the plugin started.
    pub number: u32,
    /// The capture's path as given to import_btsnoop.
    pub path: String,
    /// FNV-1a hash of the file's bytes, to recognise the same capture again.
    pub hash: u64,
    /// File size in bytes.
    pub size: u64,
    /// Id of the first packet it added, if any.
    pub first_id: Option<u64>,
    /// Id of the last packet it added, if any.
    pub last_id: Option<u64>,
    /// Time of the capture's first record, in µs since 1970 UTC.
    pub capture_start: Option<Micros>,
    /// Time of the capture's last record.
    pub capture_end: Option<Micros>,
    /// When the import ran, in µs since 1970 UTC.
    pub at: Micros,
}

impl ImportRecord {
    pub(super) fn ids(&self) -> String {
        match (self.first_id, self.last_id) {
            (Some(a), Some(b)) => format!("ids {a}..{b}"),
            _ => "no packets".into(),
        }
    }
}

/// FNV-1a (64 bit) of a file's bytes: enough to recognise the same capture
/// imported twice, without a hashing dependency in the guest.
pub fn content_hash(bytes: &[u8]) -> u64 {
    plugin_kit::fnv::fold(plugin_kit::fnv::OFFSET, bytes)
}

/// A reader that hashes and counts what passes through it, so a capture
/// is hashed while it is parsed, never held whole.
struct Hashing<R> {
    inner: R,
    hash: u64,
    len: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash = plugin_kit::fnv::fold(self.hash, &buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// ATT writes and notifications on one attribute handle in an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandleCount {
    /// HCI connection handle.
    pub conn: u16,
    /// ATT attribute handle.
    pub handle: u16,
    /// Write requests, write commands and signed writes imported.
    pub writes: u32,
    /// Notifications and indications imported.
    pub notifications: u32,
}

/// What import_btsnoop did with a capture.
pub struct ImportSummary {
    /// The capture's datalink: 1002 (H4 UART, Android) or 2001 (Linux monitor,
    /// btmon).
    pub datalink: u32,
    /// Records in the file.
    pub records: u32,
    /// ATT writes imported as TX.
    pub tx: u32,
    /// ATT notifications and indications imported as RX.
    pub rx: u32,
    /// Records that were not ATT writes or notifications.
    pub skipped: u32,
    /// First packet id assigned (the earlier import's, when already imported).
    pub first_id: Option<u64>,
    /// Last packet id assigned.
    pub last_id: Option<u64>,
    /// Problems found (evictions, a duplicate, truncated records, unfinished
    /// fragments), at most 12.
    pub warnings: Vec<String>,
    /// get_logs `since` that starts at this import's first packet.
    pub since: Option<String>,
    /// Older packets this import pushed out of the buffer.
    pub evicted: u32,
    /// FNV-1a hash of the file's bytes as `fnv1a64:` and 16 hex digits.
    pub content_hash: String,
    /// Time of the capture's first record, in µs since 1970 UTC.
    pub capture_start: Option<Micros>,
    /// Time of the capture's last record.
    pub capture_end: Option<Micros>,
    /// Short kinds of traffic in the capture (`ble-att`, `a2dp`, …).
    pub holds: Vec<&'static str>,
    /// What the capture holds besides the imported values, in a sentence.
    pub contents: String,
    /// L2CAP frames per protocol, most first.
    pub channels: Vec<(String, u32)>,
    /// Imported values per (connection, attribute handle), most first.
    pub handles: Vec<HandleCount>,
    /// Handles left out of `handles` (beyond MAX_HANDLE_ROWS).
    pub handles_left_out: u32,
    /// What to do next, or why nothing was imported.
    pub note: String,
    /// The number of the earlier import of the same content, when this
    /// one added nothing because those packets are still buffered.
    pub already_imported: Option<u32>,
}

/// The per-handle table of an import, most packets first, capped.
fn handle_rows(per_handle: BTreeMap<(u16, u16), (u32, u32)>) -> (Vec<HandleCount>, u32) {
    let mut handles: Vec<HandleCount> = per_handle
        .into_iter()
        .map(|((conn, handle), (writes, notifications))| HandleCount {
            conn,
            handle,
            writes,
            notifications,
        })
        .collect();
    handles.sort_by(|a, b| {
        (b.writes + b.notifications)
            .cmp(&(a.writes + a.notifications))
            .then((a.conn, a.handle).cmp(&(b.conn, b.handle)))
    });
    let left_out = handles.len().saturating_sub(MAX_HANDLE_ROWS) as u32;
    handles.truncate(MAX_HANDLE_ROWS);
    (handles, left_out)
}

/// Metrics about imports.
#[derive(Debug, Clone, Default)]
pub struct ImportMetrics {
    /// Captures imported since the plugin started.
    pub files: u32,
    /// Packets imported as TX.
    pub tx: u64,
    /// Packets imported as RX.
    pub rx: u64,
    /// Payload bytes imported.
    pub bytes: u64,
    /// Packets evicted from the buffer by imports.
    pub evicted: u64,
    /// The path of the last capture imported.
    pub last_file: Option<String>,
}

impl Service {
    /// Imports a capture. The same content (by hash) is refused while its
    /// packets are still buffered, unless `force`.
    pub fn import_btsnoop(&mut self, path: &Path, force: bool) -> Result<ImportSummary, ToolError> {
        let shown = path.display().to_string();
        let unreadable = |e: std::io::Error| {
            ToolError::new(
                "FILE_NOT_READABLE",
                plugin_kit::paths::explain_io_error(path, &e, false),
            )
        };
        let meta = std::fs::metadata(path).map_err(unreadable)?;
        if meta.len() > MAX_IMPORT_BYTES {
            return Err(ToolError::new(
                "FILE_TOO_LARGE",
                format!(
                    "{shown} is {} MiB; the import reads at most {} MiB (split the capture)",
                    meta.len() >> 20,
                    MAX_IMPORT_BYTES >> 20
                ),
            ));
        }
        // Read as a stream and hashed on the way, and only what the buffer
        // can hold is kept from it: the import's memory is at most the
        // buffer's byte limit (staged) besides the buffer itself, whatever
        // the file's size (a 256 MiB file read whole beside a full ring
        // once came near the plugin's 512 MiB cap).
        let file = plugin_kit::file_stream::FileStream::open(path).map_err(unreadable)?;
        let mut src = Hashing {
            inner: std::io::BufReader::with_capacity(
                IMPORT_READ_BUFFER,
                file.take(MAX_IMPORT_BYTES),
            ),
            hash: plugin_kit::fnv::OFFSET,
            len: 0,
        };
        let keep = btsnoop::Keep {
            packets: self.log.capacity(),
            bytes: self.log.byte_limit(),
        };
        let mut cap = btsnoop::read_keeping(&mut src, keep)
            .map_err(unreadable)?
            .map_err(|e| ToolError::new("BAD_CAPTURE", format!("{shown}: {e}")))?;
        // The hash covers the whole file, also what follows a damaged record.
        std::io::copy(&mut src, &mut std::io::sink()).map_err(unreadable)?;
        let (hash, size) = (src.hash, src.len);
        let mut warnings = Vec::new();
        let (tx, rx) = (cap.tally.tx, cap.tally.rx);
        let (handles, left_out) = handle_rows(cap.tally.per_handle.clone());
        // Beyond MAX_TALLY_HANDLES distinct handles the rest count as one.
        let handles_left_out = left_out + (cap.tally.other_handles > 0) as u32;
        // What every answer says of the capture itself; each outcome below
        // adds its ids, warnings and note.
        let capture = ImportSummary {
            datalink: cap.datalink,
            records: cap.records,
            tx,
            rx,
            skipped: cap.skipped,
            first_id: None,
            last_id: None,
            warnings: Vec::new(),
            since: None,
            evicted: 0,
            content_hash: format!("fnv1a64:{hash:016x}"),
            capture_start: cap.first_ts,
            capture_end: cap.last_ts,
            holds: cap.contents.kinds(),
            contents: cap.contents.describe(),
            channels: cap.contents.channel_list(),
            handles,
            handles_left_out,
            note: String::new(),
            already_imported: None,
        };
        let oldest = self.log.oldest_id();
        if let Some(prev) = self
            .imports
            .iter()
            .rev()
            .find(|r| r.hash == hash && r.size == size)
        {
            let still_here = prev.last_id.is_some_and(|l| oldest.is_some_and(|o| l >= o));
            if still_here && !force {
                // Idempotent: the same capture again adds nothing and
                // answers with the earlier import's ids.
                let since = prev
                    .first_id
                    .map_or(0, |f| f - 1)
                    .max(oldest.unwrap_or(1) - 1);
                return Ok(ImportSummary {
                    first_id: prev.first_id,
                    last_id: prev.last_id,
                    warnings: vec![format!(
                        "already imported: {shown} has the same content (fnv1a64 {hash:016x}) as import #{} of {} at {}, whose packets ({}) are still in the buffer; nothing was added (force=true imports a second copy)",
                        prev.number,
                        prev.path,
                        format_iso(prev.at),
                        prev.ids(),
                    )],
                    since: prev.first_id.map(|_| since.to_string()),
                    note: format!(
                        "already imported as #{} ({}): nothing added; read them with get_logs since=\"{since}\"",
                        prev.number,
                        prev.ids()
                    ),
                    already_imported: Some(prev.number),
                    ..capture
                });
            }
            warnings.push(if prev.first_id.is_none() {
                format!(
                    "same content as import #{} of {}, which held no ATT packets either",
                    prev.number, prev.path
                )
            } else if still_here {
                format!(
                    "duplicate: same content as import #{} of {} ({}), imported again because force=true",
                    prev.number,
                    prev.path,
                    prev.ids()
                )
            } else {
                format!(
                    "same content as import #{} of {}, whose packets have since been evicted; imported again",
                    prev.number, prev.path
                )
            });
        }
        let (mut first, mut last) = (None, None);
        // Evicted packets: how many, their id range, how many were live.
        let (mut evicted, mut ev_first, mut ev_last, mut ev_live) = (0u32, None, None, 0u32);
        let this_import_first = self.log.newest_id().map_or(1, |n| n + 1);
        let for_bytes_before = self.log.evicted_for_bytes();
        // Each staged value is freed as it is buffered, so staging and
        // buffer together never hold more than the two limits.
        while let Some(v) = cap.values.pop_front() {
            let att = Att {
                opcode: v.opcode,
                handle: v.handle,
                conn: v.conn,
            };
            let (id, gone) = self.log.push_imported(v.dir, &v.value, v.ts, att);
            for g in gone.iter().filter(|g| g.id < this_import_first) {
                evicted += 1;
                ev_first.get_or_insert(g.id);
                ev_last = Some(g.id);
                ev_live += g.att.is_none() as u32;
            }
            first.get_or_insert(id);
            last = Some(id);
        }
        let for_bytes = self.log.evicted_for_bytes() > for_bytes_before;
        let n = cap.tally.total() as usize;
        let at = now_us();
        self.imports_total += 1;
        let number = self.imports_total;
        if evicted > 0 {
            let live = if ev_live > 0 {
                format!(", {ev_live} of them live bridge packets")
            } else {
                String::new()
            };
            let (a, b) = (ev_first.unwrap_or(0), ev_last.unwrap_or(0));
            let w = if for_bytes {
                format!(
                    "this import evicted {evicted} older packets (ids {a}..{b}{live}) to stay within the buffer's byte limit of {} (it holds {} packets, {})",
                    human_bytes(self.log.byte_limit()),
                    self.log.len(),
                    human_bytes(self.log.bytes())
                )
            } else {
                format!(
                    "this import evicted {evicted} older packets (ids {a}..{b}{live}) to stay within the buffer's {} packets",
                    self.log.capacity()
                )
            };
            self.log
                .push_event(Level::Warn, format!("import #{number} of {shown}: {w}"), at);
            warnings.push(w);
        }
        let mut since_id = first.map(|f| f - 1);
        // This import's packets still buffered: fewer than it found when the
        // buffer's packet count or byte limit could not hold them all.
        let kept_from = self.log.oldest_id().unwrap_or(0).max(first.unwrap_or(0));
        let kept = last.map_or(0, |l| (l + 1).saturating_sub(kept_from)) as usize;
        if kept < n {
            warnings.push(if kept == self.log.capacity() {
                format!(
                    "{n} packets imported but the buffer keeps {}: only the newest remain (ids {kept_from}..{})",
                    self.log.capacity(),
                    last.unwrap_or(0)
                )
            } else {
                format!(
                    "{n} packets imported ({}) but the buffer keeps {}: only the newest {kept} remain (ids {kept_from}..{})",
                    human_bytes(cap.tally.bytes as usize),
                    human_bytes(self.log.byte_limit()),
                    last.unwrap_or(0)
                )
            });
            since_id = Some(kept_from.saturating_sub(1));
        }
        warnings.extend(cap.warnings.iter().cloned());
        let note = if n == 0 {
            format!(
                "no ATT writes or notifications in this capture, so nothing was imported: it holds {}",
                capture.contents
            )
        } else {
            format!(
                "read them with get_logs since=\"{}\" (get_logs without since also starts there until they are read); filter with handle, connection or opcode; the buffer holds {} packets, {} of its {} byte limit",
                since_id.unwrap_or(0),
                self.log.len(),
                human_bytes(self.log.bytes()),
                human_bytes(self.log.byte_limit())
            )
        };
        self.log.push_event(
            Level::Info,
            format!(
                "import #{number}: {n} ATT packets ({tx} TX, {rx} RX) from {shown}{}",
                match (first, last) {
                    (Some(a), Some(b)) => format!(" as ids {a}..{b}"),
                    _ => String::new(),
                }
            ),
            at,
        );
        for w in &warnings {
            if self.recent_warnings.len() == MAX_RECENT_WARNINGS {
                self.recent_warnings.pop_front();
            }
            self.recent_warnings
                .push_back(format!("import #{number} of {shown}: {w}"));
        }
        if self.imports.len() == MAX_IMPORTS {
            self.imports.pop_front();
        }
        self.imports.push_back(ImportRecord {
            number,
            path: shown,
            hash,
            size,
            first_id: first,
            last_id: last,
            capture_start: cap.first_ts,
            capture_end: cap.last_ts,
            at,
        });
        warnings.truncate(btsnoop::MAX_WARNINGS + 2);
        Ok(ImportSummary {
            first_id: first,
            last_id: last,
            warnings,
            since: since_id.map(|s| s.to_string()),
            evicted,
            note,
            ..capture
        })
    }

    /// Import counts for get_metrics.
    pub fn import_metrics(&self) -> ImportMetrics {
        let (t, r) = (
            self.log.imported(Direction::Tx),
            self.log.imported(Direction::Rx),
        );
        ImportMetrics {
            files: self.imports_total,
            tx: t.packets,
            rx: r.packets,
            bytes: t.bytes + r.bytes,
            evicted: self.log.evicted_by_imports(),
            last_file: self.imports.back().map(|r| r.path.clone()),
        }
    }
}
