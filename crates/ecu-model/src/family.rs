//! A definition family in Rust: the [`Format`] trait, the contract of
//! `benchtop:ecu-family/family` (wit/ecu-family) with Rust types.
//!
//! A family knows one definition format and nothing else: which files are
//! its own ([`Format::claims`]), the definitions a file holds and what
//! identifies their images ([`Format::identify`]), a definition's tables
//! once its files are given ([`Format::resolve`]), and its checksums
//! ([`Format::verify`], [`Format::fix`]). Everything around it is
//! ecu-tables': listing the folder, caching by file stamps, matching ids
//! against an image, following includes, and every tool.
//!
//! The trait is what a first-party family implements (ECUFlash,
//! RomRaider); `ecu-family-guest` exports any implementation as a
//! component, and ecu-tables reads a served component through the same
//! trait, so a family runs natively in tests and as a component in the
//! server with one code path past the boundary.

use crate::checksum::Module;
use crate::definition::{Definition, RomId, Table};

/// Bytes of a file's head a family is first asked to identify it from
/// (and to claim it from): a definitions tree of hundreds of files is read
/// in heads only, the whole of a file only when its family asks.
pub const HEAD_BYTES: usize = 4 * 1024;

/// What identifies a definition's images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageId {
    /// These bytes at `offset` (an ECU address under a memory model that
    /// starts above 0, see [`crate::memmodel`]).
    Bytes {
        /// Where the id sits.
        offset: u64,
        /// What the image holds there.
        bytes: Vec<u8>,
    },
    /// Only the image's length: the format carries no id (a weaker match).
    Length(u64),
    /// Nothing: a base other definitions include, which no image is.
    None,
}

/// A definition a file holds, before it is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Names the definition within its file; passed back to `resolve`.
    pub key: String,
    /// How tuners name it (an xmlid, an XDF title); includes name it so.
    pub title: String,
    /// What identifies its images.
    pub id: ImageId,
    /// Informational fields (`make`, `model`, `memmodel`…).
    pub fields: Vec<(String, String)>,
    /// Titles of the definitions it builds on, in the order it names them.
    pub includes: Vec<String>,
}

/// What [`Format::identify`] found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identified {
    /// The definitions it holds (none: a file of the format that holds no
    /// definition).
    Candidates(Vec<Candidate>),
    /// The head given is not enough to tell: ask again with the whole file.
    NeedsWholeFile,
}

/// A definitions file handed to [`Format::resolve`].
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// Its name in the definitions folder.
    pub file_name: &'a str,
    /// Its bytes.
    pub contents: &'a [u8],
}

/// How an image's checksum is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// The family verifies and fixes it under this plan (text only the
    /// family reads).
    Plan(String),
    /// The images carry no checksum the family knows: why, in a sentence.
    Unknown(String),
}

/// A definition as a family resolved it: what the interface's
/// `definition` record carries.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Fields shown in rom_info (`make`, `model`, `year`…).
    pub fields: Vec<(String, String)>,
    /// Files or ids it was built from, parents first.
    pub chain: Vec<String>,
    /// Every readable table, in definition order.
    pub tables: Vec<Table>,
    /// Tables that cannot be read: name and why.
    pub unreadable: Vec<(String, String)>,
    /// The images' checksum.
    pub checksum: Checksum,
}

impl Resolved {
    /// A definition a family built as ecu-model's [`Definition`] (ECUFlash
    /// chains, RomRaider documents): its checksum is the [`Module`] its
    /// `checksummodule` field names, the plan being the module's name.
    pub fn of(d: &Definition, family: &str) -> Self {
        let mut fields: Vec<(String, String)> = d
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        fields.sort();
        let checksum = match d.checksum_module() {
            Some(name) => match Module::by_name(name) {
                Ok(module) => Checksum::Plan(module.name().to_owned()),
                Err(e) => Checksum::Unknown(e.to_string()),
            },
            None => Checksum::Unknown(format!("this {family} definition names no checksum module")),
        };
        Resolved {
            fields,
            chain: d.chain.clone(),
            tables: d.tables.clone(),
            unreadable: d.unresolvable.clone(),
            checksum,
        }
    }
}

/// Verdict of [`Format::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The checksum is right.
    Valid,
    /// The image switches its checksum off: why, in a sentence.
    Disabled(String),
    /// The checksum is wrong: what was expected where.
    Invalid(String),
    /// It cannot be checked on this image: why.
    Unknown(String),
}

/// Bytes a checksum fix writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// File offset of the first byte.
    pub offset: u64,
    /// The bytes written there.
    pub bytes: Vec<u8>,
}

/// What [`Format::fix_checked`] did to an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// The bytes it wrote, as [`Format::fix`] gave them.
    pub edits: Vec<Edit>,
    /// [`Format::verify`]'s verdict on the image with them written.
    pub after: Verdict,
}

/// Writes checksum `edits` into `image`; none is written unless all fit.
pub fn apply_edits(image: &mut [u8], edits: &[Edit]) -> Result<(), String> {
    let span = |e: &Edit| {
        let start = usize::try_from(e.offset).ok()?;
        Some(start..start.checked_add(e.bytes.len())?)
    };
    if let Some(bad) = edits
        .iter()
        .find(|e| span(e).is_none_or(|r| r.end > image.len()))
    {
        return Err(format!(
            "checksum fix writes {} bytes at 0x{:X}, past the end of the {}-byte image",
            bad.bytes.len(),
            bad.offset,
            image.len()
        ));
    }
    for e in edits {
        let range = span(e).expect("checked above");
        image[range].copy_from_slice(&e.bytes);
    }
    Ok(())
}

/// One definition format. Every answer is a function of the bytes given:
/// a family reads no files and keeps no state a caller relies on.
pub trait Format: Send + Sync {
    /// The format's name as tuners know it (`ECUFlash`, `TunerPro XDF`).
    fn name(&self) -> Result<String, String>;

    /// Extensions (lowercase, no dot) of its definition files.
    fn extensions(&self) -> Result<Vec<String>, String>;

    /// Whether a file with one of [`Format::extensions`] is in this
    /// format, from its name and its first bytes (up to [`HEAD_BYTES`]).
    fn claims(&self, file_name: &str, head: &[u8]) -> Result<bool, String>;

    /// The definitions a file holds. `whole` says whether `contents` is
    /// the whole file or only its head (up to [`HEAD_BYTES`]); a family
    /// answers from the head when it can, else [`Identified::NeedsWholeFile`].
    fn identify(&self, file_name: &str, contents: &[u8], whole: bool)
    -> Result<Identified, String>;

    /// Definition `key`, resolved from `files`: `files[0]` holds it, the
    /// rest hold what it includes, transitively, each file once, parents
    /// after the files that include them.
    fn resolve(&self, key: &str, files: &[Source<'_>]) -> Result<Resolved, String>;

    /// Checks an image's checksum under a plan of [`Resolved::checksum`].
    /// By default the plan names one of ecu-model's checksum [`Module`]s.
    fn verify(&self, plan: &str, image: &[u8]) -> Result<Verdict, String> {
        let module = Module::by_name(plan).map_err(|e| e.to_string())?;
        Ok(match module.validate(image) {
            Ok(true) => match module.disabled_note(image) {
                Some(why) => Verdict::Disabled(why),
                None => Verdict::Valid,
            },
            Ok(false) => Verdict::Invalid(format!("the {plan} checksum does not match")),
            Err(e) => Verdict::Unknown(e.to_string()),
        })
    }

    /// Makes the image's checksum right again, in place, and returns the
    /// bytes written (none when it already was). By default through the
    /// named [`Module`]; `image` is left whole when it fails.
    fn fix(&self, plan: &str, image: &mut [u8]) -> Result<Vec<Edit>, String> {
        let module = Module::by_name(plan).map_err(|e| e.to_string())?;
        // What a fix may rewrite is small (a word, a table of sums): kept
        // aside to tell the edits, instead of a copy of the whole image.
        let span = module.correction_span(image);
        let before = image[span.clone()].to_vec();
        module.fix(image).map_err(|e| e.to_string())?;
        let mut edits = changed_runs(&before, &image[span.clone()]);
        for edit in &mut edits {
            edit.offset += span.start as u64;
        }
        Ok(edits)
    }

    /// [`Format::fix`], then [`Format::verify`] of the fixed image: what a
    /// patch asks, as one question, so that a family served as a
    /// component is passed the image once (each crossing of a 1 MiB image
    /// costs a patch about 0.35 ms).
    fn fix_checked(&self, plan: &str, image: &mut [u8]) -> Result<Fixed, String> {
        let edits = self.fix(plan, image)?;
        let after = self.verify(plan, image)?;
        Ok(Fixed { edits, after })
    }

    /// One line on what the family reads, for `benchtop plugins`.
    fn describe(&self) -> String {
        let name = self.name().unwrap_or_default();
        format!("ECU definition family: {name} definitions")
    }
}

/// The candidate a `<romid>` makes (ECUFlash's and RomRaider's id block):
/// its xmlid names it, its internal id (hex, else text) at its internal id
/// address identifies its images; a romid without both is a base, which no
/// image is. None without an xmlid.
pub fn candidate(romid: &RomId, includes: Vec<String>) -> Option<Candidate> {
    let title = romid.xmlid.clone().filter(|x| !x.trim().is_empty())?;
    let id = match romid.internal_id() {
        Some(id) if !id.bytes.is_empty() => ImageId::Bytes {
            offset: u64::from(id.address),
            bytes: id.bytes,
        },
        _ => ImageId::None,
    };
    Some(Candidate {
        key: title.clone(),
        title,
        id,
        fields: romid
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        includes,
    })
}

/// A definitions file's bytes as text, or an error naming the file: the
/// XML formats are UTF-8 (or its ASCII subset).
pub fn utf8_text<'a>(file_name: &str, contents: &'a [u8]) -> Result<&'a str, String> {
    std::str::from_utf8(contents).map_err(|e| format!("{file_name} is not UTF-8 text: {e}"))
}

/// The runs of bytes where `after` differs from `before` (same length). A
/// checksum fix changes a few bytes of a 1 MiB image: equal stretches are
/// skipped a word at a time ([`plugin_kit::bytes::differences`]).
pub fn changed_runs(before: &[u8], after: &[u8]) -> Vec<Edit> {
    let mut edits: Vec<Edit> = Vec::new();
    for i in plugin_kit::bytes::differences(before, after) {
        match edits.last_mut() {
            Some(e) if e.offset as usize + e.bytes.len() == i => e.bytes.push(after[i]),
            _ => edits.push(Edit {
                offset: i as u64,
                bytes: vec![after[i]],
            }),
        }
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{SUBARUDBW_TARGET, word_sum};

    struct Plain;

    impl Format for Plain {
        fn name(&self) -> Result<String, String> {
            Ok("Plain".into())
        }
        fn extensions(&self) -> Result<Vec<String>, String> {
            Ok(vec!["xml".into()])
        }
        fn claims(&self, _: &str, _: &[u8]) -> Result<bool, String> {
            Ok(true)
        }
        fn identify(&self, _: &str, _: &[u8], _: bool) -> Result<Identified, String> {
            Ok(Identified::Candidates(Vec::new()))
        }
        fn resolve(&self, _: &str, _: &[Source<'_>]) -> Result<Resolved, String> {
            Err("nothing to resolve".into())
        }
    }

    #[test]
    fn changed_runs_span_block_boundaries() {
        let before = vec![0u8; 1000];
        let mut after = before.clone();
        after[254..258].copy_from_slice(&[1, 2, 3, 4]);
        after[999] = 9;
        assert_eq!(
            changed_runs(&before, &after),
            [
                Edit {
                    offset: 254,
                    bytes: vec![1, 2, 3, 4]
                },
                Edit {
                    offset: 999,
                    bytes: vec![9]
                }
            ]
        );
        assert!(changed_runs(&before, &before).is_empty());
    }

    #[test]
    fn romids_become_candidates_and_bases_have_no_id() {
        let mut id = RomId {
            xmlid: Some("AE5L500V".into()),
            internal_id_address: Some("2004".into()),
            internal_id_string: Some("AE5L500V".into()),
            ..RomId::default()
        };
        id.fields.insert("memmodel".into(), "SH7058".into());
        let c = candidate(&id, Vec::new()).unwrap();
        assert_eq!(c.key, "AE5L500V");
        assert_eq!(
            c.id,
            ImageId::Bytes {
                offset: 0x2004,
                bytes: b"AE5L500V".to_vec()
            }
        );
        assert_eq!(c.fields, [("memmodel".to_string(), "SH7058".to_string())]);
        id.internal_id_hex = Some("0x2249".into());
        assert!(matches!(
            candidate(&id, Vec::new()).unwrap().id,
            ImageId::Bytes { bytes, .. } if bytes == [0x22, 0x49]
        ));
        let base = RomId {
            xmlid: Some("32BITBASE".into()),
            ..RomId::default()
        };
        assert_eq!(candidate(&base, Vec::new()).unwrap().id, ImageId::None);
        assert!(candidate(&RomId::default(), Vec::new()).is_none());
    }

    #[test]
    fn module_checksums_verify_and_fix_as_edits() {
        // A subarudbw table at 0x480 below the end: entry 0 sums 0..0x100.
        let mut image = vec![0u8; 0x8_0000];
        image[0x10..0x14].copy_from_slice(&7u32.to_be_bytes());
        let table = image.len() - 0x480;
        let entry = |image: &mut Vec<u8>, i: usize, words: [u32; 3]| {
            for (k, w) in words.iter().enumerate() {
                let at = table + i * 12 + k * 4;
                image[at..at + 4].copy_from_slice(&w.to_be_bytes());
            }
        };
        entry(&mut image, 0, [0, 0x100, 0]);
        for i in 1..17 {
            entry(&mut image, i, [0, 0, SUBARUDBW_TARGET]);
        }
        assert!(matches!(
            Plain.verify("subarudbw", &image),
            Ok(Verdict::Invalid(_))
        ));
        let unfixed = image.clone();
        let edits = Plain.fix("subarudbw", &mut image).unwrap();
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!(edits[0].offset as usize, table + 8);
        assert_eq!(Plain.verify("subarudbw", &image), Ok(Verdict::Valid));
        // The edits are what the fix wrote, and all it wrote.
        let mut replayed = unfixed;
        apply_edits(&mut replayed, &edits).unwrap();
        assert_eq!(replayed, image);
        assert_eq!(
            word_sum(&image[..0x100]).wrapping_add(u32::from_be_bytes(
                image[table + 8..table + 12].try_into().unwrap()
            )),
            SUBARUDBW_TARGET
        );
        // mitsucan: only the correction word is rewritten, where it lies.
        let mut image = vec![0u8; 0x10_0000];
        image[0x40..0x44].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        let edits = Plain.fix("mitsucan", &mut image).unwrap();
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!(edits[0].offset as usize, crate::checksum::MITSUCAN_WORD);
        assert_eq!(Plain.verify("mitsucan", &image), Ok(Verdict::Valid));
        assert!(Plain.fix("sum8", &mut image).unwrap_err().contains("sum8"));
        // A fix that fails leaves the image whole.
        let mut short = vec![7u8; 64];
        assert!(Plain.fix("mitsucan", &mut short).is_err());
        assert_eq!(short, [7; 64]);
        // Fixed and checked at once: the edits written, the verdict after.
        image[0x80] ^= 0xFF;
        let fixed = Plain.fix_checked("mitsucan", &mut image).unwrap();
        assert_eq!((fixed.edits.len(), fixed.after), (1, Verdict::Valid));
        assert_eq!(Plain.verify("mitsucan", &image), Ok(Verdict::Valid));
        // Edits are written all or none.
        let edit = |offset, bytes: &[u8]| Edit {
            offset,
            bytes: bytes.to_vec(),
        };
        let mut short = vec![0u8; 8];
        let err = apply_edits(&mut short, &[edit(0, &[9]), edit(6, &[1, 2, 3])]).unwrap_err();
        assert!(err.contains("past the end of the 8-byte image"), "{err}");
        assert!(apply_edits(&mut short, &[edit(u64::MAX, &[1])]).is_err());
        assert_eq!(
            short, [0; 8],
            "nothing is written when an edit does not fit"
        );
        assert_eq!(Plain.describe(), "ECU definition family: Plain definitions");
    }
}
