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

#[test]
fn shared_openings_read_quickly_are_read_as_roxmltree_reads_them() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    if !fixtures.join("realworld/ecuflash").is_dir() {
        eprintln!("skipping: {} not found", fixtures.display());
        return;
    }
    let mut files = Vec::new();
    xml_files(&fixtures, &mut files);
    let (mut quick, mut full) = (0, 0);
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let head = text_of(&bytes[..bytes.len().min(ecu_model::family::HEAD_BYTES)]);
        if is_romraider(head) || !head.contains("<rom") {
            continue;
        }
        // Read as identify reads it: the opening of the head, or the whole
        // file when it holds no table or scaling.
        let (text, closed) = match first_body_element(head) {
            Some(body) => (head[..body].to_owned(), false),
            None => match std::str::from_utf8(&bytes) {
                Ok(whole) => (whole.to_owned(), true),
                Err(_) => continue,
            },
        };
        // Closed as identify closes a head's opening.
        let text = if closed {
            text
        } else {
            format!("{text}</rom>")
        };
        let Some(read) = parse_plain(&text) else {
            full += 1;
            continue;
        };
        quick += 1;
        assert_eq!(Ok(read), parse_document(&text), "{}", path.display());
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
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    if !fixtures.join("realworld/ecuflash").is_dir() {
        eprintln!("skipping: {} not found", fixtures.display());
        return;
    }
    let mut files = Vec::new();
    xml_files(&fixtures, &mut files);
    let (mut plain, mut full) = (Vec::new(), Vec::new());
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if is_romraider(&text) || !text.contains("<rom") {
            continue;
        }
        match parse_plain(&text) {
            Some(read) => {
                assert_eq!(Ok(read), parse_document(&text), "{}", path.display());
                plain.push(path);
            }
            None => full.push(path),
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
