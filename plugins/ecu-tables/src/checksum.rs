//! ROM checksum modules, keyed by the definition's `checksummodule`.
//! All sums are modulo 2^32 over big-endian u32 words.

/// mitsucan: Σ of every word of the 1 MiB image ≡ this.
pub const MITSUCAN_TARGET: u32 = 0x5AA5_5AA5;
/// Offset of the mitsucan correction word.
pub const MITSUCAN_WORD: usize = 0x0B_FFF0;
const MITSUCAN_SIZE: usize = 0x10_0000;
/// subarudbw: Σ words in [start, end) + stored checksum ≡ this.
pub const SUBARUDBW_TARGET: u32 = 0x5AA5_A55A;
const SUBARUDBW_ENTRIES: usize = 17;

/// A checksum module we can validate and fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    MitsuCan,
    SubaruDbw,
}

/// Why a checksum cannot be computed for an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumError {
    #[error(
        "checksum module `{0}` is not supported (known: mitsucan, subarudbw); the checksum cannot be verified or updated"
    )]
    Unknown(String),
    #[error("{module} expects a {expected}-byte image, this one has {actual} bytes")]
    Size {
        module: &'static str,
        expected: usize,
        actual: usize,
    },
    #[error(
        "subarudbw table entry {index} at 0x{offset:X} has an invalid range 0x{start:X}..0x{end:X}"
    )]
    BadRange {
        index: usize,
        offset: usize,
        start: u32,
        end: u32,
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

    pub fn name(self) -> &'static str {
        match self {
            Module::MitsuCan => "mitsucan",
            Module::SubaruDbw => "subarudbw",
        }
    }

    /// True when the image's checksum is correct.
    pub fn validate(self, rom: &[u8]) -> Result<bool, ChecksumError> {
        match self {
            Module::MitsuCan => {
                mitsucan_guard(rom)?;
                Ok(word_sum(rom) == MITSUCAN_TARGET)
            }
            Module::SubaruDbw => {
                let entries = subarudbw_entries(rom)?;
                Ok(entries.iter().all(|e| {
                    word_sum(&rom[e.start as usize..e.end as usize]).wrapping_add(e.checksum)
                        == SUBARUDBW_TARGET
                }))
            }
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
                    let sum = word_sum(&rom[e.start as usize..e.end as usize]);
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
pub fn word_sum(bytes: &[u8]) -> u32 {
    bytes.chunks_exact(4).fold(0u32, |acc, w| {
        acc.wrapping_add(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    })
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

/// The checksum table sits 0x480 bytes below the end of the image
/// (0x7FB80 on 512 KiB SH7055, 0xFFB80 on 1 MiB SH7058).
fn subarudbw_table(rom: &[u8]) -> Result<usize, ChecksumError> {
    match rom.len() {
        0x8_0000 => Ok(0x7_FB80),
        0x10_0000 => Ok(0xF_FB80),
        actual => Err(ChecksumError::Size {
            module: "subarudbw",
            expected: 0x10_0000,
            actual,
        }),
    }
}

fn subarudbw_entries(rom: &[u8]) -> Result<Vec<DbwEntry>, ChecksumError> {
    let base = subarudbw_table(rom)?;
    let mut out = Vec::new();
    for index in 0..SUBARUDBW_ENTRIES {
        let at = base + index * 12;
        let (start, end, checksum) = (read_be(rom, at), read_be(rom, at + 4), read_be(rom, at + 8));
        if start == 0 && end == 0 {
            // A disabled first entry disables the whole table (RomRaider).
            if index == 0 {
                return Ok(Vec::new());
            }
            continue;
        }
        if start >= end || end as usize > rom.len() || start % 4 != 0 || end % 4 != 0 {
            return Err(ChecksumError::BadRange {
                index,
                offset: at,
                start,
                end,
            });
        }
        out.push(DbwEntry {
            index,
            start,
            end,
            checksum,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn subarudbw_fixes_every_entry() {
        let mut rom = vec![0xA5u8; 0x8_0000];
        let base = 0x7_FB80;
        rom[base..base + 17 * 12].fill(0);
        for (i, (s, e)) in [(0u32, 0x4_0000u32), (0x4_0000, 0x7_F000)]
            .iter()
            .enumerate()
        {
            write_be(&mut rom, base + i * 12, *s);
            write_be(&mut rom, base + i * 12 + 4, *e);
        }
        // Entry 0 starting at 0 with a non-zero end is enabled.
        assert!(!Module::SubaruDbw.validate(&rom).unwrap());
        Module::SubaruDbw.fix(&mut rom).unwrap();
        assert!(Module::SubaruDbw.validate(&rom).unwrap());
        rom[0x5_0000] = 0;
        assert!(!Module::SubaruDbw.validate(&rom).unwrap());
    }

    #[test]
    fn subarudbw_disabled_table_is_valid() {
        let rom = vec![0u8; 0x8_0000];
        assert!(Module::SubaruDbw.validate(&rom).unwrap());
    }

    #[test]
    fn unknown_modules_are_named() {
        let e = Module::by_name("mitsuh8").unwrap_err();
        assert!(e.to_string().contains("mitsuh8"));
        assert_eq!(Module::by_name("MitsuCAN").unwrap(), Module::MitsuCan);
    }
}
