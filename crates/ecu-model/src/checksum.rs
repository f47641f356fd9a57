//! ROM checksum modules, keyed by the definition's `checksummodule`.
//! All sums are modulo 2^32 over big-endian u32 words.

/// mitsucan: Σ of every word of the 1 MiB image ≡ this.
pub const MITSUCAN_TARGET: u32 = 0x5AA5_5AA5;
/// Offset of the mitsucan correction word.
pub const MITSUCAN_WORD: usize = 0x0B_FFF0;
const MITSUCAN_SIZE: usize = 0x10_0000;
/// subarudbw: Σ words at `start..end` step 4 + stored checksum ≡ this.
pub const SUBARUDBW_TARGET: u32 = 0x5AA5_A55A;
const SUBARUDBW_ENTRIES: usize = 17;

/// An algorithm an image's checksum is kept with: one of the [`Module`]s
/// built in here, or one a definition family component owns.
pub trait Checksum: Send + Sync + std::fmt::Debug {
    /// Its name, as answers show it (`subarudbw`).
    fn name(&self) -> String;

    /// True when the image's checksum is right; Err when it cannot be
    /// checked on this image, saying why.
    fn validate(&self, rom: &[u8]) -> Result<bool, String>;

    /// Why nothing is checked although the algorithm applies, if so.
    fn disabled_note(&self, _rom: &[u8]) -> Option<String> {
        None
    }

    /// Rewrites the image's checksum so that it validates.
    fn fix(&self, rom: &mut Vec<u8>) -> Result<(), String>;

    /// [`fix`](Self::fix), then [`validate`](Self::validate) of the fixed
    /// image: Err when the fix failed, else what validating said. One
    /// question, which a family served as a component answers in one call.
    fn fix_checked(&self, rom: &mut Vec<u8>) -> Result<Result<bool, String>, String> {
        self.fix(rom)?;
        Ok(self.validate(rom))
    }
}

impl Checksum for Module {
    fn name(&self) -> String {
        Module::name(*self).to_owned()
    }

    fn validate(&self, rom: &[u8]) -> Result<bool, String> {
        Module::validate(*self, rom).map_err(|e| e.to_string())
    }

    fn disabled_note(&self, rom: &[u8]) -> Option<String> {
        Module::disabled_note(*self, rom)
    }

    fn fix(&self, rom: &mut Vec<u8>) -> Result<(), String> {
        Module::fix(*self, rom).map_err(|e| e.to_string())
    }
}

/// A checksum module we can validate and fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// Mitsubishi CAN-era ECUs (1 MiB SH7058 images): one correction word
    /// makes the sum of every word a constant.
    MitsuCan,
    /// Subaru drive-by-wire ECUs: a table of 17 (start, end, checksum)
    /// entries near the end of the image.
    SubaruDbw,
}

/// Why a checksum cannot be computed for an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumError {
    #[error(
        "checksum module `{0}` is not supported (known: mitsucan, subarudbw); the checksum cannot be verified or updated"
    )]
    /// The definition names a module this plugin does not know (its name).
    Unknown(String),
    /// The image is not the size the module sums over.
    #[error("{module} expects a {expected}-byte image, this one has {actual} bytes")]
    Size {
        /// The module's name.
        module: &'static str,
        /// The size it needs, in bytes.
        expected: usize,
        /// The image's size in bytes.
        actual: usize,
    },
    /// A subarudbw entry covers addresses past the end of the image.
    #[error(
        "subarudbw table entry {index} at 0x{offset:X} covers 0x{start:X}..=0x{end:X}, past the end of the {len}-byte image; is this image complete?"
    )]
    BadRange {
        /// The entry's index in the table, 0-based.
        index: usize,
        /// File offset of the entry.
        offset: usize,
        /// First address the entry sums.
        start: u32,
        /// End of the range the entry sums (words start below it).
        end: u32,
        /// The image's size in bytes.
        len: usize,
    },
    /// The image has none of the sizes whose checksum table position is
    /// known.
    #[error(
        "subarudbw checksums live at 0x7FB80 (SH7055, 512 KiB), 0xFFB80 (SH7058, 1 MiB) or 0x17FB80 (SH7059, 1.5 MiB); this image has {actual} bytes, so it is not a complete Subaru ROM read"
    )]
    SubaruSize {
        /// The image's size in bytes.
        actual: usize,
    },
}

impl Module {
    /// Looks a module up by name (case-insensitive).
    pub fn by_name(name: &str) -> Result<Self, ChecksumError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "mitsucan" => Ok(Module::MitsuCan),
            "subarudbw" => Ok(Module::SubaruDbw),
            _ => Err(ChecksumError::Unknown(name.to_string())),
        }
    }

    /// The module's name as definitions spell it (`checksummodule`).
    pub fn name(self) -> &'static str {
        match self {
            Module::MitsuCan => "mitsucan",
            Module::SubaruDbw => "subarudbw",
        }
    }

    /// True when the image's checksum is correct (a subarudbw table whose
    /// first entry is disabled counts as correct: the ECU checks nothing).
    pub fn validate(self, rom: &[u8]) -> Result<bool, ChecksumError> {
        match self {
            Module::MitsuCan => {
                mitsucan_guard(rom)?;
                Ok(word_sum(rom) == MITSUCAN_TARGET)
            }
            Module::SubaruDbw => Ok(subarudbw_entries(rom)?
                .iter()
                .all(|e| e.sum(rom).wrapping_add(e.checksum) == SUBARUDBW_TARGET)),
        }
    }

    /// Why the checksum is not checked although the module applies, e.g. a
    /// subarudbw table whose first entry is `{0, 0, 0x5AA5A55A}`.
    pub fn disabled_note(self, rom: &[u8]) -> Option<String> {
        match self {
            Module::SubaruDbw => {
                let base = subarudbw_table(rom).ok()?;
                subarudbw_disabled(rom, base).then(|| {
                    format!(
                        "subarudbw checksums are disabled in this ROM (entry 0 at 0x{base:X} is {{0, 0, 0x{SUBARUDBW_TARGET:08X}}}); nothing to verify or fix"
                    )
                })
            }
            Module::MitsuCan => None,
        }
    }

    /// Rewrites the correction word(s) so that the image validates.
    pub fn fix(self, rom: &mut [u8]) -> Result<(), ChecksumError> {
        match self {
            Module::MitsuCan => {
                mitsucan_guard(rom)?;
                let stored = read_be(rom, MITSUCAN_WORD);
                let others = word_sum(rom).wrapping_sub(stored);
                write_be(rom, MITSUCAN_WORD, MITSUCAN_TARGET.wrapping_sub(others));
            }
            Module::SubaruDbw => {
                let base = subarudbw_table(rom)?;
                for e in subarudbw_entries(rom)? {
                    let sum = e.sum(rom);
                    write_be(
                        rom,
                        base + e.index * 12 + 8,
                        SUBARUDBW_TARGET.wrapping_sub(sum),
                    );
                }
            }
        }
        Ok(())
    }

    /// The bytes [`fix`](Self::fix) may rewrite in `rom`: the correction
    /// word, or the whole subarudbw table. What a fix changed is found by
    /// comparing these, not the whole image.
    pub fn correction_span(self, rom: &[u8]) -> std::ops::Range<usize> {
        let span = match self {
            Module::MitsuCan => MITSUCAN_WORD..MITSUCAN_WORD + 4,
            Module::SubaruDbw => match subarudbw_table(rom) {
                Ok(base) => base..base + SUBARUDBW_ENTRIES * 12,
                Err(_) => 0..0,
            },
        };
        span.start.min(rom.len())..span.end.min(rom.len())
    }

    /// The stored correction word, for display (mitsucan only).
    pub fn stored_word(self, rom: &[u8]) -> Option<u32> {
        match self {
            Module::MitsuCan if rom.len() == MITSUCAN_SIZE => Some(read_be(rom, MITSUCAN_WORD)),
            _ => None,
        }
    }
}

fn mitsucan_guard(rom: &[u8]) -> Result<(), ChecksumError> {
    if rom.len() != MITSUCAN_SIZE {
        return Err(ChecksumError::Size {
            module: "mitsucan",
            expected: MITSUCAN_SIZE,
            actual: rom.len(),
        });
    }
    Ok(())
}

/// Σ of big-endian u32 words, mod 2^32 (a trailing partial word is ignored).
///
/// Summed by byte position: Σ (b0<<24 | b1<<16 | b2<<8 | b3) equals
/// (Σb0)<<24 + (Σb1)<<16 + (Σb2)<<8 + Σb3 mod 2^32, and the four byte sums
/// are kept in 16-bit lanes (of two u64s, or of `v128`s in WebAssembly).
/// WebAssembly has no byte swap, so the word-at-a-time loop cost about ten
/// operations a word there; a patch sums a 1 MiB image twice.
pub fn word_sum(bytes: &[u8]) -> u32 {
    /// u64s summed into 16-bit lanes before they could overflow (255 × 256
    /// fits in 16 bits).
    const BLOCK: usize = 256;
    let words = &bytes[..bytes.len() / 4 * 4];
    // Σ of the bytes at each position of a word (0 = most significant).
    let mut by_position = [0u64; 4];
    let (eights, remainder) = words.as_chunks::<8>();
    // A plain counted loop over each block, so that the compiler can keep
    // the lanes in vector registers.
    for block in eights.chunks(BLOCK) {
        let (even, odd) = lane_sums(block);
        // Lanes 0 and 2 hold bytes 0 and 4 (position 0 of the two words),
        // lanes 1 and 3 bytes 2 and 6 (position 2); `odd` likewise for
        // positions 1 and 3.
        let lane = |v: u64, i: u32| (v >> (16 * i)) & 0xFFFF;
        by_position[0] += lane(even, 0) + lane(even, 2);
        by_position[2] += lane(even, 1) + lane(even, 3);
        by_position[1] += lane(odd, 0) + lane(odd, 2);
        by_position[3] += lane(odd, 1) + lane(odd, 3);
    }
    for (position, byte) in remainder.iter().enumerate() {
        by_position[position] += u64::from(*byte);
    }
    let [b0, b1, b2, b3] = by_position.map(|sum| sum as u32);
    (b0 << 24)
        .wrapping_add(b1 << 16)
        .wrapping_add(b2 << 8)
        .wrapping_add(b3)
}

/// The even and odd bytes of `block` (at most 256 eights) summed into the
/// 16-bit lanes of two u64s, as [`word_sum`] reads them.
#[inline(always)]
fn lane_sums_u64(block: &[[u8; 8]]) -> (u64, u64) {
    /// Bytes 0, 2, 4, 6 of a little-endian u64, each in its own 16-bit lane.
    const LANES: u64 = 0x00FF_00FF_00FF_00FF;
    let (mut even, mut odd) = (0u64, 0u64);
    for eight in block {
        let x = u64::from_le_bytes(*eight);
        even += x & LANES;
        odd += (x >> 8) & LANES;
    }
    (even, odd)
}

#[cfg(not(target_arch = "wasm32"))]
use lane_sums_u64 as lane_sums;

/// [`lane_sums_u64`] sixteen bytes a step, in the 16-bit lanes of `v128`s.
/// Only this loop is built with SIMD: whether whole components gain from
/// it could not be told apart from the bench machine's noise.
///
/// `simd128` is a feature of every engine benchtop's components target
/// (wasmtime enables it by default, as do browsers); an engine without it
/// rejects the module when loading it, so this is safe to call.
#[cfg(target_arch = "wasm32")]
#[target_feature(enable = "simd128")]
fn lane_sums(block: &[[u8; 8]]) -> (u64, u64) {
    use core::arch::wasm32::{
        u16x8_add, u16x8_shr, u16x8_splat, u64x2_extract_lane, v128, v128_and,
    };
    let (pairs, rest) = block.as_chunks::<2>();
    let low = u16x8_splat(0x00FF);
    let (mut even, mut odd) = (u16x8_splat(0), u16x8_splat(0));
    for pair in pairs {
        // SAFETY: a pair of eights is 16 bytes; `read_unaligned` is one
        // `v128.load`.
        let x = unsafe { pair.as_ptr().cast::<v128>().read_unaligned() };
        even = u16x8_add(even, v128_and(x, low));
        odd = u16x8_add(odd, u16x8_shr(x, 8));
    }
    // The two u64 halves hold the same byte positions: add them, and the
    // odd eight left (no lane carries: a block adds at most 256 bytes to
    // each 16-bit lane in all).
    let halves = |v: v128| u64x2_extract_lane::<0>(v) + u64x2_extract_lane::<1>(v);
    let (rest_even, rest_odd) = lane_sums_u64(rest);
    (halves(even) + rest_even, halves(odd) + rest_odd)
}

fn read_be(rom: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([rom[at], rom[at + 1], rom[at + 2], rom[at + 3]])
}

fn write_be(rom: &mut [u8], at: usize, v: u32) {
    rom[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

struct DbwEntry {
    index: usize,
    start: u32,
    end: u32,
    checksum: u32,
}

impl DbwEntry {
    /// Σ of the big-endian words at `i = start; i < end; i += 4`, as the
    /// ECU and RomRaider/FastECU/ScoobyRom compute it: `end` is the address
    /// of the last byte (…FFF), so the word holding it is included, and an
    /// empty range (`start >= end`, e.g. a disabled `{0, 0, …}`) sums to 0.
    fn sum(&self, rom: &[u8]) -> u32 {
        if self.start >= self.end {
            return 0;
        }
        word_sum_from(
            &rom[self.start as usize..],
            (self.end - self.start) as usize,
        )
    }
}

/// Σ of the words starting in the first `span` bytes of `bytes` (the last
/// one may extend past `span`; callers checked it is inside the image).
fn word_sum_from(bytes: &[u8], span: usize) -> u32 {
    let words = span.div_ceil(4);
    word_sum(&bytes[..words * 4])
}

/// Where the 17-entry table sits: 0x480 bytes below the end of the
/// image on SH7055 (512 KiB), SH7058 (1 MiB) and SH7059 (1.5 MiB).
fn subarudbw_table(rom: &[u8]) -> Result<usize, ChecksumError> {
    match rom.len() {
        0x8_0000 => Ok(0x7_FB80),
        0x10_0000 => Ok(0xF_FB80),
        0x18_0000 => Ok(0x17_FB80),
        actual => Err(ChecksumError::SubaruSize { actual }),
    }
}

/// `{0, 0, 0x5AA5A55A}` in entry 0 switches checksumming off (RomRaider
/// `validateRomChecksum` returns "disabled" for it).
fn subarudbw_disabled(rom: &[u8], base: usize) -> bool {
    read_be(rom, base) == 0
        && read_be(rom, base + 4) == 0
        && read_be(rom, base + 8) == SUBARUDBW_TARGET
}

/// The entries to check; empty when checksumming is disabled. Entries
/// after the first with `{0, 0, 0x5AA5A55A}` are disabled and validate on
/// their own (an empty sum), so they need no special case.
fn subarudbw_entries(rom: &[u8]) -> Result<Vec<DbwEntry>, ChecksumError> {
    let base = subarudbw_table(rom)?;
    if subarudbw_disabled(rom, base) {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(SUBARUDBW_ENTRIES);
    for index in 0..SUBARUDBW_ENTRIES {
        let at = base + index * 12;
        let (start, end, checksum) = (read_be(rom, at), read_be(rom, at + 4), read_be(rom, at + 8));
        let entry = DbwEntry {
            index,
            start,
            end,
            checksum,
        };
        // The last word summed must lie inside the image.
        let words_end = (start as u64) + ((end.saturating_sub(start)) as u64).div_ceil(4) * 4;
        if start < end && words_end > rom.len() as u64 {
            return Err(ChecksumError::BadRange {
                index,
                offset: at,
                start,
                end,
                len: rom.len(),
            });
        }
        out.push(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sum by byte position is the sum of the words, for every length
    /// and alignment of the tail and for sums that wrap many times.
    #[test]
    fn word_sum_matches_summing_word_by_word() {
        fn by_words(bytes: &[u8]) -> u32 {
            bytes.chunks_exact(4).fold(0u32, |acc, w| {
                acc.wrapping_add(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            })
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let noise: Vec<u8> = (0..20_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let ones = vec![0xFFu8; 40_000];
        for bytes in [&noise[..], &ones[..]] {
            for len in (0..64).chain([2047, 2048, 2049, 4100, 8192, 8196, 19_999, 20_000]) {
                let len = len.min(bytes.len());
                for start in 0..4 {
                    let slice = &bytes[start.min(len)..len];
                    assert_eq!(word_sum(slice), by_words(slice), "len {len}, start {start}");
                }
            }
        }
        assert_eq!(word_sum(&ones), by_words(&ones));
    }

    #[test]
    fn mitsucan_all_zero_vector() {
        let mut rom = vec![0u8; MITSUCAN_SIZE];
        assert!(!Module::MitsuCan.validate(&rom).unwrap());
        Module::MitsuCan.fix(&mut rom).unwrap();
        assert_eq!(read_be(&rom, MITSUCAN_WORD), 0x5AA5_5AA5);
        assert!(Module::MitsuCan.validate(&rom).unwrap());
        rom[0x1234] ^= 1;
        assert!(!Module::MitsuCan.validate(&rom).unwrap());
        Module::MitsuCan.fix(&mut rom).unwrap();
        assert!(Module::MitsuCan.validate(&rom).unwrap());
    }

    #[test]
    fn mitsucan_refuses_other_sizes() {
        let mut rom = vec![0u8; 0x8000];
        assert!(matches!(
            Module::MitsuCan.fix(&mut rom),
            Err(ChecksumError::Size { .. })
        ));
    }

    /// The reference loop of RomRaider `RomChecksum.validateChecksum`,
    /// written out independently of the module's code.
    fn reference_sum(rom: &[u8], start: u32, end: u32) -> u32 {
        let mut sum = 0u32;
        let mut i = start as usize;
        while i < end as usize {
            sum = sum.wrapping_add(read_be(rom, i));
            i += 4;
        }
        sum
    }

    /// A pseudo-random image with a real Subaru table at `base`: entry 0
    /// over 0..=0x1FFF, entry 1 over 0x2000..=len-0x509 (…FAF7 as on the
    /// 2007 Legacy GT), the rest `{0, 0, 0x5AA5A55A}`, all valid.
    fn subaru_image(len: usize, base: usize) -> Vec<u8> {
        let mut state = 0x1234_5678u32;
        let mut rom: Vec<u8> = (0..len)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 24) as u8
            })
            .collect();
        let ranges = [(0u32, 0x1FFFu32), (0x2000, (len - 0x509) as u32)];
        for i in 0..SUBARUDBW_ENTRIES {
            let (s, e) = ranges.get(i).copied().unwrap_or((0, 0));
            write_be(&mut rom, base + i * 12, s);
            write_be(&mut rom, base + i * 12 + 4, e);
            write_be(&mut rom, base + i * 12 + 8, SUBARUDBW_TARGET);
        }
        for (i, (s, e)) in ranges.iter().enumerate() {
            let sum = reference_sum(&rom, *s, *e);
            write_be(
                &mut rom,
                base + i * 12 + 8,
                SUBARUDBW_TARGET.wrapping_sub(sum),
            );
        }
        rom
    }

    #[test]
    fn subarudbw_real_layouts_validate_with_inclusive_ends() {
        for (len, base) in [
            (0x8_0000, 0x7_FB80),
            (0x10_0000, 0xF_FB80),
            (0x18_0000, 0x17_FB80),
        ] {
            let mut rom = subaru_image(len, base);
            assert!(Module::SubaruDbw.validate(&rom).unwrap(), "{len:#X}");
            assert_eq!(Module::SubaruDbw.disabled_note(&rom), None);
            // The word holding the last byte (…AF4..AF7) is covered.
            let last = len - 0x509;
            rom[last - 1] ^= 0x40;
            assert!(!Module::SubaruDbw.validate(&rom).unwrap(), "{len:#X}");
            Module::SubaruDbw.fix(&mut rom).unwrap();
            assert!(Module::SubaruDbw.validate(&rom).unwrap());
            assert_eq!(
                read_be(&rom, base + 20),
                SUBARUDBW_TARGET.wrapping_sub(reference_sum(&rom, 0x2000, last as u32))
            );
            // Disabled entries stay as they are.
            assert_eq!(read_be(&rom, base + 2 * 12 + 8), SUBARUDBW_TARGET);
            // A byte outside every range does not matter.
            rom[len - 0x100] ^= 1;
            assert!(Module::SubaruDbw.validate(&rom).unwrap());
        }
    }

    #[test]
    fn subarudbw_disabled_first_entry_turns_checking_off() {
        let mut rom = subaru_image(0x10_0000, 0xF_FB80);
        write_be(&mut rom, 0xF_FB80 + 4, 0);
        write_be(&mut rom, 0xF_FB80 + 8, SUBARUDBW_TARGET);
        // Entry 1 no longer matters either.
        rom[0x5_0000] ^= 0xFF;
        assert!(Module::SubaruDbw.validate(&rom).unwrap());
        assert!(
            Module::SubaruDbw
                .disabled_note(&rom)
                .unwrap()
                .contains("disabled")
        );
        let before = rom.clone();
        Module::SubaruDbw.fix(&mut rom).unwrap();
        assert_eq!(rom, before, "a disabled table is not rewritten");
    }

    #[test]
    fn subarudbw_rejects_other_sizes_and_ranges_past_the_end() {
        let e = Module::SubaruDbw.validate(&[0u8; 0x4_0000]).unwrap_err();
        assert!(e.to_string().contains("0xFFB80 (SH7058"), "{e}");
        let mut rom = subaru_image(0x8_0000, 0x7_FB80);
        write_be(&mut rom, 0x7_FB80 + 16, 0xF_FFFF);
        let e = Module::SubaruDbw.validate(&rom).unwrap_err();
        assert!(e.to_string().contains("entry 1"), "{e}");
    }

    #[test]
    fn unknown_modules_are_named() {
        let e = Module::by_name("mitsuh8").unwrap_err();
        assert!(e.to_string().contains("mitsuh8"));
        assert_eq!(Module::by_name("MitsuCAN").unwrap(), Module::MitsuCan);
    }
}
