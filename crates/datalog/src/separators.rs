//! Where the fields, lines and quotes of a piece of CSV are: bitmaps with one
//! bit per byte.
//!
//! Finding field ends byte by byte is most of the cost of reading a wide
//! log whose query converts only a few of its columns. Classifying 64 bytes
//! at a time (with WebAssembly SIMD in the component) turns "where does
//! this field end" into clearing the lowest set bit of a word, and "does
//! this row hold a quote" into one comparison.

/// The bitmaps of one piece of a file.
#[derive(Debug, Default)]
pub struct Separators {
    /// Field ends: the delimiter, `\n` and `\r`.
    pub fields: Bitmap,
    /// Line ends: `\n` and `\r`.
    pub lines: Bitmap,
    /// Double quotes.
    pub quotes: Bitmap,
}

/// One bit per byte of the indexed piece.
#[derive(Debug, Default)]
pub struct Bitmap {
    /// Bit `i % 64` of word `i / 64` is set for byte `i`. The bit just past
    /// the end is set too, so every search stops.
    words: Vec<u64>,
    len: usize,
}

impl Separators {
    /// Indexes `data` with `delim` as the field delimiter (reusing the
    /// bitmaps' memory from the previous piece).
    pub fn index(&mut self, data: &[u8], delim: u8) {
        let blocks = data.len() / 64;
        for map in [&mut self.fields, &mut self.lines, &mut self.quotes] {
            map.words.clear();
            map.words.resize(blocks + 1, 0);
            map.len = data.len();
        }
        index_blocks(
            &data[..blocks * 64],
            delim,
            [
                &mut self.fields.words[..blocks],
                &mut self.lines.words[..blocks],
                &mut self.quotes.words[..blocks],
            ],
        );
        let tail = &data[blocks * 64..];
        let end = 1 << tail.len();
        let (mut fields, mut lines, mut quotes) = (end, end, end);
        for (bit, &c) in tail.iter().enumerate() {
            let line = (c == b'\n' || c == b'\r') as u64;
            lines |= line << bit;
            fields |= (line | (c == delim) as u64) << bit;
            quotes |= ((c == b'"') as u64) << bit;
        }
        self.fields.words[blocks] = fields;
        self.lines.words[blocks] = lines;
        self.quotes.words[blocks] = quotes;
    }
}

impl Bitmap {
    /// The first set bit at or after `i` (the indexed length when there is
    /// none). `i` must not be past the indexed length.
    #[inline(always)]
    pub fn next_from(&self, i: usize) -> usize {
        self.cursor(i).next_bit()
    }

    /// How many bits are set from `from` to `to`, both included
    /// (`from <= to`, `to` not past the indexed length).
    #[inline(always)]
    pub fn count(&self, from: usize, to: usize) -> usize {
        let (first, last) = (from / 64, to / 64);
        let head = u64::MAX << (from % 64);
        let tail = u64::MAX >> (63 - to % 64);
        if first == last {
            return (self.words[first] & head & tail).count_ones() as usize;
        }
        let middle: u32 = self.words[first + 1..last]
            .iter()
            .map(|w| w.count_ones())
            .sum();
        ((self.words[first] & head).count_ones() + middle + (self.words[last] & tail).count_ones())
            as usize
    }

    /// Writes the set bits at or after `from` and before `to` in order
    /// into the start of `out`, and returns how many it wrote: all of
    /// them, or at least `most` (it stops after the word that reaches
    /// `most`). `out` is scratch space that it grows as it needs; entries
    /// past the count are junk. `from` must not be past the indexed length.
    ///
    /// A word's first bits are written without a loop (four, then twelve
    /// more when it has more than four; those past the word's count are
    /// junk): a loop per bit is a branch that mispredicts at each word's
    /// end, and in a component an interruption check at each of its turns.
    /// A sparse map (line ends: about one a word) writes four a word.
    pub fn positions(&self, from: usize, to: usize, most: usize, out: &mut Vec<usize>) -> usize {
        if from >= to {
            return 0;
        }
        if out.len() < most + 64 {
            out.resize(most + 64, 0);
        }
        let last_word = (to - 1) / 64;
        let mut word = from / 64;
        let mut bits = self.words[word] & (u64::MAX << (from % 64));
        let mut n = 0;
        loop {
            if word == last_word {
                bits &= u64::MAX >> (63 - (to - 1) % 64);
            }
            let base = word * 64;
            let count = bits.count_ones() as usize;
            let mut write = |slots: &mut [usize]| {
                for slot in slots {
                    *slot = base + bits.trailing_zeros() as usize;
                    bits &= bits.wrapping_sub(1);
                }
            };
            // `n < most` here, and a word adds at most 64: all in `out`.
            write(&mut out[n..n + 4]);
            if count > 4 {
                write(&mut out[n + 4..n + 16]);
                if count > 16 {
                    write(&mut out[n + 16..n + count]);
                }
            }
            n += count;
            if word == last_word || n >= most {
                return n;
            }
            word += 1;
            bits = self.words[word];
        }
    }

    /// A cursor yielding the set bits at or after `i` in order. `i` must not
    /// be past the indexed length.
    #[inline(always)]
    pub fn cursor(&self, i: usize) -> Cursor<'_> {
        let word = i / 64;
        Cursor {
            words: &self.words,
            word,
            bits: self.words[word] & (u64::MAX << (i % 64)),
            len: self.len,
        }
    }
}

/// Walks the set bits of a [`Bitmap`] in order.
///
/// Going from one separator to the next only clears the lowest set bit, so
/// the work per field does not wait on loading and shifting a word from the
/// previous field's end.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    words: &'a [u64],
    word: usize,
    /// The bits of `words[word]` not yet returned.
    bits: u64,
    len: usize,
}

impl Cursor<'_> {
    /// The next set bit: the indexed length after the last one, and one
    /// past it once that has been returned.
    #[inline(always)]
    pub fn next_bit(&mut self) -> usize {
        // Most fields end in the word already loaded: answered without
        // entering `nth_bit`'s loop, whose every turn in a component is
        // also an interruption check.
        if self.bits != 0 {
            let at = self.word * 64 + self.bits.trailing_zeros() as usize;
            self.bits &= self.bits - 1;
            return at;
        }
        self.nth_bit(0)
    }

    /// The `n + 1`th next set bit (skipping `n`), as [`Cursor::next_bit`].
    #[inline(always)]
    pub fn nth_bit(&mut self, mut n: usize) -> usize {
        loop {
            let here = self.bits.count_ones() as usize;
            if n < here {
                for _ in 0..n {
                    self.bits &= self.bits - 1;
                }
                let at = self.word * 64 + self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return at;
            }
            if self.word + 1 >= self.words.len() {
                self.bits = 0;
                return self.len + 1;
            }
            n -= here;
            self.word += 1;
            self.bits = self.words[self.word];
        }
    }
}

/// Fills `maps` (field ends, line ends, quotes) with the bits of `data`
/// (`data.len() == 64 * words`).
#[cfg(all(target_arch = "wasm32", not(test)))]
fn index_blocks(data: &[u8], delim: u8, maps: [&mut [u64]; 3]) {
    // `simd128` is a feature of the engines benchtop's components target
    // (wasmtime enables it by default, as do browsers); an engine without
    // it rejects the module when loading it, so this is safe to call.
    index_blocks_simd128(data, delim, maps)
}

#[cfg(all(target_arch = "wasm32", not(test)))]
#[target_feature(enable = "simd128")]
fn index_blocks_simd128(data: &[u8], delim: u8, maps: [&mut [u64]; 3]) {
    use core::arch::wasm32::*;
    let [fields, lines, quotes] = maps;
    let (d, n, r, q) = (
        u8x16_splat(delim),
        u8x16_splat(b'\n'),
        u8x16_splat(b'\r'),
        u8x16_splat(b'"'),
    );
    for (w, block) in data.chunks_exact(64).enumerate() {
        let (mut field_bits, mut line_bits, mut quote_bits) = (0u64, 0u64, 0u64);
        for (lane_no, lane) in block.chunks_exact(16).enumerate() {
            // SAFETY: `lane` is 16 readable bytes; `v128_load` has no
            // alignment requirement.
            let v = unsafe { v128_load(lane.as_ptr().cast::<v128>()) };
            let line = v128_or(u8x16_eq(v, n), u8x16_eq(v, r));
            let shift = lane_no * 16;
            line_bits |= (u8x16_bitmask(line) as u64) << shift;
            field_bits |= (u8x16_bitmask(v128_or(line, u8x16_eq(v, d))) as u64) << shift;
            quote_bits |= (u8x16_bitmask(u8x16_eq(v, q)) as u64) << shift;
        }
        fields[w] = field_bits;
        lines[w] = line_bits;
        quotes[w] = quote_bits;
    }
}

/// Fills `maps` (field ends, line ends, quotes) with the bits of `data`
/// (`data.len() == 64 * words`), eight bytes at a time in a register.
#[cfg(any(not(target_arch = "wasm32"), test))]
fn index_blocks(data: &[u8], delim: u8, maps: [&mut [u64]; 3]) {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let [fields, lines, quotes] = maps;
    // One bit per byte of `w` equal to `c`, byte j to bit j. (The high bit
    // of each zero byte of `x` is exact: no carry crosses a byte; the
    // multiplication gathers the eight high bits into the top byte.)
    let equal = |w: u64, c: u8| {
        let x = w ^ (ONES * c as u64);
        let high = !(((x & LOW7) + LOW7) | x | LOW7);
        (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    };
    for (w, block) in data.chunks_exact(64).enumerate() {
        let (mut field_bits, mut line_bits, mut quote_bits) = (0u64, 0u64, 0u64);
        for (lane_no, lane) in block.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(lane.try_into().unwrap_or([0; 8]));
            let line = equal(v, b'\n') | equal(v, b'\r');
            let shift = lane_no * 8;
            line_bits |= line << shift;
            field_bits |= (line | equal(v, delim)) << shift;
            quote_bits |= equal(v, b'"') << shift;
        }
        fields[w] = field_bits;
        lines[w] = line_bits;
        quotes[w] = quote_bits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_match_a_byte_scan() {
        let mut text = b"12.5,;x\r\n\"ab,c\"\n,,;;0123456789abcdefghij;\r\n1,2".repeat(5);
        text.extend_from_slice(&[0x80, 0xFF, 0x0B, 0x2D, 0x0A, 0x2B, 0x2C, 0x01, 0x22, 0xA2]);
        let mut seps = Separators::default();
        for delim in [b',', b';', b'\t'] {
            for len in [0, 1, 63, 64, 65, 127, 128, 129, text.len()] {
                let b = &text[..len];
                seps.index(b, delim);
                let checks: [(&Bitmap, &dyn Fn(u8) -> bool); 3] = [
                    (&seps.fields, &|c| c == delim || c == b'\n' || c == b'\r'),
                    (&seps.lines, &|c| c == b'\n' || c == b'\r'),
                    (&seps.quotes, &|c| c == b'"'),
                ];
                for (map, is_set) in checks {
                    let set: Vec<usize> = (0..len).filter(|&i| is_set(b[i])).collect();
                    for start in 0..=len {
                        let after: Vec<usize> =
                            set.iter().copied().filter(|&i| i >= start).collect();
                        assert_eq!(
                            map.next_from(start),
                            *after.first().unwrap_or(&len),
                            "{start} of {len}"
                        );
                        for to in start..len {
                            let want = set.iter().filter(|&&i| i >= start && i <= to).count();
                            assert_eq!(map.count(start, to), want, "count {start}..={to} of {len}");
                        }
                        for to in start..=len {
                            let want: Vec<usize> =
                                after.iter().copied().filter(|&i| i < to).collect();
                            for most in [1, 2, 5, len + 1] {
                                let mut out = Vec::new();
                                let n = map.positions(start, to, most, &mut out);
                                assert!(n >= most.min(want.len()), "{start}..{to} of {len}");
                                assert_eq!(
                                    &out[..n],
                                    &want[..n],
                                    "positions {start}..{to} of {len}"
                                );
                                // It stops within a word of `most`.
                                if n < want.len() {
                                    assert_eq!(out[n - 1] / 64, out[most - 1] / 64);
                                    assert_ne!(want[n] / 64, out[n - 1] / 64);
                                }
                            }
                        }
                        let mut cursor = map.cursor(start);
                        let walked: Vec<usize> =
                            (0..=after.len() + 1).map(|_| cursor.next_bit()).collect();
                        let want: Vec<usize> =
                            after.iter().copied().chain([len, len + 1]).collect();
                        assert_eq!(walked, want, "{start} of {len}");
                        for skip in 0..=after.len() + 1 {
                            let want = after.get(skip).copied().unwrap_or(if skip == after.len() {
                                len
                            } else {
                                len + 1
                            });
                            assert_eq!(
                                map.cursor(start).nth_bit(skip),
                                want,
                                "nth {skip} from {start} of {len}"
                            );
                        }
                    }
                }
            }
        }
    }
}
