//! The plain reader ([`ecuflash::plain`]) against roxmltree, on every
//! definition under ../shared/fixtures, whole and as identify reads their
//! openings: wherever it answers, its answer is the full parse's, and it
//! answers for nearly every file real tuners keep. Skips cleanly when the
//! fixtures are absent.

use ecuflash::plain::{first_body_element, parse_plain};
use ecuflash::xml::{is_romraider, parse_document};
use std::path::{Path, PathBuf};

fn xml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            xml_files(&path, out);
        } else if path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("xml"))
        {
            out.push(path);
        }
    }
}

/// The longest UTF-8 text `bytes` starts with, as identify reads a head.
fn text_of(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap(),
    }
}

/// Every ECUFlash definition under ../shared/fixtures with its bytes (the
/// RomRaider ones left out); None, said, when the fixtures are absent.
fn ecuflash_definitions() -> Option<Vec<(PathBuf, Vec<u8>)>> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    if !fixtures.join("realworld/ecuflash").is_dir() {
        eprintln!("skipping: {} not found", fixtures.display());
        return None;
    }
    let mut files = Vec::new();
    xml_files(&fixtures, &mut files);
    Some(
        files
            .into_iter()
            .map(|path| {
                let bytes = std::fs::read(&path).unwrap();
                (path, bytes)
            })
            .filter(|(_, bytes)| {
                let head = text_of(&bytes[..bytes.len().min(ecu_model::family::HEAD_BYTES)]);
                !is_romraider(head) && head.contains("<rom")
            })
            .collect(),
    )
}

/// Whether `text` reads plainly, which must then give what roxmltree's
/// parse gives.
fn reads_plainly(path: &Path, text: &str) -> bool {
    let Some(read) = parse_plain(text) else {
        return false;
    };
    assert_eq!(Ok(read), parse_document(text), "{}", path.display());
    true
}

#[test]
fn shared_openings_read_quickly_are_read_as_roxmltree_reads_them() {
    let Some(definitions) = ecuflash_definitions() else {
        return;
    };
    let (mut quick, mut full) = (0, 0);
    for (path, bytes) in &definitions {
        let head = text_of(&bytes[..bytes.len().min(ecu_model::family::HEAD_BYTES)]);
        // Read as identify reads it: the opening of the head, closed, or
        // the whole file when it holds no table or scaling.
        let text = match first_body_element(head) {
            Some(body) => format!("{}</rom>", &head[..body]),
            None => match std::str::from_utf8(bytes) {
                Ok(whole) => whole.to_owned(),
                Err(_) => continue,
            },
        };
        if reads_plainly(path, &text) {
            quick += 1;
        } else {
            full += 1;
        }
    }
    eprintln!("{quick} openings read quickly, {full} left to the full parse");
    // Every one of the 378 (SubaruDefs, EvoScan, the Magna chains) opens
    // plainly.
    assert!(
        quick >= 378 && full == 0,
        "{quick} read quickly, {full} not"
    );
}

#[test]
fn shared_whole_definitions_read_plainly_are_read_as_roxmltree_reads_them() {
    let Some(definitions) = ecuflash_definitions() else {
        return;
    };
    let (mut plain, mut full) = (Vec::new(), Vec::new());
    for (path, bytes) in &definitions {
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        if reads_plainly(path, text) {
            plain.push(path);
        } else {
            full.push(path);
        }
    }
    eprintln!(
        "{} definitions read plainly, {} left to the full parse: {full:?}",
        plain.len(),
        full.len()
    );
    // SubaruDefs' bases among them (16BITBASE, 32BITBASE), which every
    // chain of the tree includes.
    assert!(
        plain.iter().any(|p| p.ends_with("Bases/32BITBASE.xml")),
        "32BITBASE.xml is not read plainly"
    );
    assert!(
        plain.len() >= 9 * full.len(),
        "{} plainly, {} not",
        plain.len(),
        full.len()
    );
}
