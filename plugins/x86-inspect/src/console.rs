//! Bounded output streams and the pending-input queue of one machine.
//!
//! A program printing in a loop must not grow the plugin without limit (one
//! instance serves every client, and losing it to its memory cap loses every
//! machine), so each stream keeps only its last `cap` bytes plus totals.
//! Offsets are absolute positions in everything the program ever wrote, so
//! they stay valid while old bytes are dropped.

use std::collections::VecDeque;

/// Default bytes kept per output stream.
pub const DEFAULT_CONSOLE_KIB: u32 = 256;
/// Largest configurable console size per stream.
pub const MAX_CONSOLE_KIB: u32 = 16 * 1024;
/// Most input bytes that may wait unread (client-supplied; bounded too).
pub const MAX_PENDING_INPUT: usize = 1 << 20;
/// Largest byte count a restored stream or input may start from. Far above
/// anything a program can write in the life of a machine, and far enough
/// below 2^64 that the counters never wrap; a snapshot claiming more is
/// refused rather than trusted.
pub const MAX_RESTORED_TOTAL: u64 = 1 << 62;

/// One output stream (stdout, stderr or the screen): the last `cap` bytes
/// kept, every byte counted, so offsets stay absolute after older bytes drop.
pub struct Stream {
    buf: VecDeque<u8>,
    total: u64,
    cap: usize,
}

impl Stream {
    /// An empty stream keeping at most `cap` bytes (at least 1).
    pub fn new(cap: usize) -> Self {
        Stream {
            buf: VecDeque::new(),
            total: 0,
            cap: cap.max(1),
        }
    }

    /// Appends one byte, dropping the oldest when full.
    pub fn push(&mut self, b: u8) {
        if self.buf.len() == self.cap {
            self.buf.pop_front();
        }
        self.buf.push_back(b);
        self.total = self.total.saturating_add(1);
    }

    /// Appends bytes, keeping only the last `cap`.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let keep = &bytes[bytes.len().saturating_sub(self.cap)..];
        let excess = (self.buf.len() + keep.len()).saturating_sub(self.cap);
        self.buf.drain(..excess);
        self.buf.extend(keep);
    }

    /// The most bytes it keeps.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes kept now.
    pub fn kept(&self) -> usize {
        self.buf.len()
    }

    /// Bytes ever written.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes dropped from the front (absolute offset of the first kept byte).
    pub fn dropped(&self) -> u64 {
        self.total - self.buf.len() as u64
    }

    /// Up to `max` bytes from absolute offset `from` (clamped to what is
    /// kept); returns the bytes and the absolute offset they start at.
    pub fn read(&self, from: u64, max: usize) -> (Vec<u8>, u64) {
        let start = from.clamp(self.dropped(), self.total);
        let i = (start - self.dropped()) as usize;
        let end = (i + max).min(self.buf.len());
        (self.buf.range(i..end).copied().collect(), start)
    }

    /// Everything kept.
    pub fn contents(&self) -> Vec<u8> {
        self.buf.iter().copied().collect()
    }
}

/// Standard input: bytes queued by the client and whether more may come.
#[derive(Default)]
pub struct Input {
    pending: VecDeque<u8>,
    /// No more input will come: reads past the end get end-of-file.
    pub closed: bool,
    /// Bytes the program consumed.
    pub consumed: u64,
}

/// What a read of stdin found.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// The next byte.
    Byte(u8),
    /// Input is closed and empty.
    Eof,
    /// Nothing queued yet: the run must wait for the client.
    Wait,
}

impl Input {
    /// Queues bytes; fails when more than [`MAX_PENDING_INPUT`] would wait.
    pub fn add(&mut self, bytes: &[u8]) -> Result<(), usize> {
        if self.pending.len() + bytes.len() > MAX_PENDING_INPUT {
            return Err(MAX_PENDING_INPUT - self.pending.len());
        }
        self.pending.extend(bytes);
        Ok(())
    }

    /// Bytes queued and not yet read.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// What the next read would get, without consuming it.
    pub fn peek(&self) -> Read {
        match self.pending.front() {
            Some(&b) => Read::Byte(b),
            None if self.closed => Read::Eof,
            None => Read::Wait,
        }
    }

    /// The byte after the next, if queued (an extended key's scan code).
    pub fn peek_second(&self) -> Option<u8> {
        self.pending.get(1).copied()
    }

    /// Reads the next byte (or finds the end, or that the run must wait).
    pub fn take(&mut self) -> Read {
        let r = self.peek();
        if matches!(r, Read::Byte(_)) {
            self.pending.pop_front();
            self.consumed = self.consumed.saturating_add(1);
        }
        r
    }

    /// Whether a whole line (ending in CR or LF) or the end is available,
    /// so that a line read completes without waiting.
    pub fn has_line(&self) -> bool {
        self.closed || self.pending.iter().any(|&b| b == b'\r' || b == b'\n')
    }
}

impl Stream {
    /// Writes the kept bytes, total and capacity (a snapshot).
    pub(crate) fn save(&self, w: &mut plugin_kit::blob::Writer) {
        w.u32(self.cap as u32)
            .u64(self.total)
            .u32(self.buf.len() as u32);
        w.0.extend(self.buf.iter());
    }

    /// Reads what [`Stream::save`] wrote, checking it is consistent.
    pub(crate) fn restore(r: &mut plugin_kit::blob::Reader, what: &str) -> Result<Stream, String> {
        let cap = r.u32(what)? as usize;
        let total = r.u64(what)?;
        let len = r.u32(what)? as usize;
        if cap == 0 || len > cap || len as u64 > total {
            return Err(format!(
                "{what}: {len} bytes kept of {total} with room for {cap}"
            ));
        }
        if total >= MAX_RESTORED_TOTAL {
            return Err(format!(
                "{what}: {total} bytes written, at or over the {MAX_RESTORED_TOTAL} a machine can reach"
            ));
        }
        let buf = r.bytes(len, what)?.iter().copied().collect();
        Ok(Stream { buf, total, cap })
    }
}

impl Input {
    /// Writes the queue and its state (a snapshot).
    pub(crate) fn save(&self, w: &mut plugin_kit::blob::Writer) {
        w.u8(self.closed as u8)
            .u64(self.consumed)
            .u32(self.pending.len() as u32);
        w.0.extend(self.pending.iter());
    }

    /// Reads what [`Input::save`] wrote.
    pub(crate) fn restore(r: &mut plugin_kit::blob::Reader) -> Result<Input, String> {
        let closed = match r.u8("input")? {
            0 => false,
            1 => true,
            n => return Err(format!("input closed flag {n} is neither 0 nor 1")),
        };
        let consumed = r.u64("input")?;
        if consumed >= MAX_RESTORED_TOTAL {
            return Err(format!(
                "input: {consumed} bytes consumed, at or over the {MAX_RESTORED_TOTAL} a machine can reach"
            ));
        }
        let len = r.u32("input")? as usize;
        if len > MAX_PENDING_INPUT {
            return Err(format!(
                "{len} input bytes queued, over {MAX_PENDING_INPUT}"
            ));
        }
        let pending = r.bytes(len, "input")?.iter().copied().collect();
        Ok(Input {
            pending,
            closed,
            consumed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_keeps_the_tail_and_counts_everything() {
        let mut s = Stream::new(4);
        s.extend(b"abc");
        s.push(b'd');
        s.push(b'e');
        assert_eq!(s.contents(), b"bcde");
        assert_eq!((s.total(), s.dropped()), (5, 1));
        s.extend(b"0123456789");
        assert_eq!(s.contents(), b"6789");
        assert_eq!(s.dropped(), 11);
        assert_eq!(s.read(0, 2), (b"67".to_vec(), 11));
        assert_eq!(s.read(13, 10), (b"89".to_vec(), 13));
        assert_eq!(s.read(99, 10), (Vec::new(), 15));
    }

    /// Hardening item 2: a crafted snapshot once set a total near 2^64, the
    /// next write wrapped it and `read` panicked, losing every machine.
    #[test]
    fn restored_totals_near_the_top_are_refused_and_writes_never_wrap() {
        let mut s = Stream::new(4);
        s.extend(b"ab");
        let mut w = plugin_kit::blob::Writer::new();
        s.save(&mut w);
        // cap u32, total u64, len u32: the total starts at byte 4.
        w.0[4..12].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
        let e = Stream::restore(&mut plugin_kit::blob::Reader::new(&w.0), "stdout")
            .err()
            .expect("refused");
        assert!(e.contains("stdout") && e.contains("at or over"), "{e}");

        let mut near = Stream {
            buf: VecDeque::from(b"ab".to_vec()),
            total: u64::MAX - 1,
            cap: 4,
        };
        near.extend(b"cdef");
        near.push(b'g');
        assert_eq!(near.total(), u64::MAX);
        assert_eq!(near.read(0, 10).0, b"defg");
    }

    #[test]
    fn input_waits_until_closed() {
        let mut i = Input::default();
        assert_eq!(i.take(), Read::Wait);
        i.add(b"a").unwrap();
        assert!(!i.has_line());
        assert_eq!(i.take(), Read::Byte(b'a'));
        i.closed = true;
        assert!(i.has_line());
        assert_eq!(i.take(), Read::Eof);
        assert!(i.add(&vec![0; MAX_PENDING_INPUT + 1]).is_err());
    }
}
