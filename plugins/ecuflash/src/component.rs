//! ECUFlash as a [`Format`]: `<rom>` files with a `<romid>`, built on
//! other files by `<include>XMLID</include>`, as EcuFlash's own definitions
//! trees (SubaruDefs, EvoScan) are kept.

use crate::merge::{ChainFile, merge};
use crate::plain::first_body_element;
use crate::xml::{ROMRAIDER, RawDefinition, parse_definition};
use ecu_model::family::{self, Candidate, Format, Identified, Resolved, Source};
use ecu_model::sniff::{first_element, head_text, is_romraider};
use std::collections::HashMap;

/// The family's name, as rom_info's `definition_format` shows it.
const NAME: &str = "ECUFlash";

/// The ECUFlash family: a unit struct, because every answer is a function
/// of the bytes it is given (ecu-tables caches them per file).
#[derive(Debug, Default, Clone, Copy)]
pub struct EcuFlash;

/// The file name without its extension: what an include names a file by
/// when the file has no xmlid.
fn stem(file_name: &str) -> &str {
    let name = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// The `<romid>` fields a candidate carries: what matching an image and
/// showing its id need. The rest (make, model, year…) come with the
/// resolved definition, which merges the whole chain's; leaving them out
/// keeps the answer for each of a tree's hundreds of files small.
const CANDIDATE_FIELDS: [&str; 4] = [
    "memmodel",
    "internalidaddress",
    "internalidhex",
    "internalidstring",
];

/// A file's definition as a candidate: titled by its xmlid, else by its
/// file name (an include may name a base file so).
fn candidate_of(file_name: &str, raw: RawDefinition) -> Candidate {
    let mut romid = raw.romid;
    if romid.xmlid.is_none() {
        romid.xmlid = Some(stem(file_name).to_owned());
    }
    romid
        .fields
        .retain(|key, _| CANDIDATE_FIELDS.contains(&key.as_str()));
    family::candidate(&romid, raw.includes)
        .expect("a candidate has a title: the xmlid, else the file name")
}

impl Format for EcuFlash {
    fn name(&self) -> Result<String, String> {
        Ok(NAME.into())
    }

    fn extensions(&self) -> Result<Vec<String>, String> {
        Ok(vec!["xml".into()])
    }

    fn claims(&self, _file_name: &str, head: &[u8]) -> Result<bool, String> {
        let head = head_text(head);
        // An ECUFlash file's root is `<rom>`; a file whose head holds no
        // element at all (empty, not XML) is claimed too, so rom_info
        // reports it rather than passing over it.
        Ok(!is_romraider(head) && first_element(head).is_none_or(|root| root == "rom"))
    }

    fn identify(
        &self,
        file_name: &str,
        contents: &[u8],
        whole: bool,
    ) -> Result<Identified, String> {
        if whole {
            let raw = parse_definition(family::utf8_text(file_name, contents)?)
                .map_err(|e| format!("not a readable ECUFlash XML file: {e}"))?;
            return Ok(Identified::Candidates(vec![candidate_of(file_name, raw)]));
        }
        // The id and the includes come before the first table or scaling:
        // the head up to there, closed, is the file's opening as a
        // document of its own.
        let head = head_text(contents);
        if is_romraider(head) {
            return Err(ROMRAIDER.into());
        }
        let Some(body) = first_body_element(head) else {
            return Ok(Identified::NeedsWholeFile);
        };
        match parse_definition(&format!("{}</rom>", &head[..body])) {
            Ok(raw) => Ok(Identified::Candidates(vec![candidate_of(file_name, raw)])),
            // A comment or an element still open where the body starts.
            Err(_) => Ok(Identified::NeedsWholeFile),
        }
    }

    fn resolve(&self, key: &str, files: &[Source<'_>]) -> Result<Resolved, String> {
        let raws = files
            .iter()
            .map(|f| {
                parse_definition(family::utf8_text(f.file_name, f.contents)?)
                    .map(|raw| (f.file_name, raw))
                    .map_err(|e| format!("{}: not a readable ECUFlash XML file: {e}", f.file_name))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let title = |(name, raw): &(&str, RawDefinition)| {
            raw.romid
                .xmlid
                .clone()
                .unwrap_or_else(|| stem(name).to_owned())
        };
        let leaf = raws
            .first()
            .ok_or("resolve was given no file to read the definition from")?;
        if title(leaf) != key {
            return Err(format!("{} defines `{}`, not `{key}`", leaf.0, title(leaf)));
        }
        // The files are the chain ecu-tables chose (one file per included
        // xmlid, the nearest); they merge parents first, each once.
        let by_title: HashMap<String, usize> = raws
            .iter()
            .enumerate()
            .flat_map(|(i, f)| [(title(f), i), (stem(f.0).to_owned(), i)])
            .rev()
            .collect();
        let mut order = Vec::new();
        visit(0, &raws, &by_title, &mut order, &mut Vec::new())?;
        let chain: Vec<ChainFile<'_>> = order
            .iter()
            .map(|&i| ChainFile {
                label: title(&raws[i]),
                raw: &raws[i].1,
            })
            .collect();
        let definition = merge(leaf.0.into(), &chain);
        Ok(Resolved::of(&definition, NAME))
    }

    fn describe(&self) -> String {
        "ECU definition family: ECUFlash definitions (<rom><romid>…<include>, .xml)".into()
    }
}

/// Depth-first include resolution: parents first, each file once.
fn visit(
    at: usize,
    raws: &[(&str, RawDefinition)],
    by_title: &HashMap<String, usize>,
    order: &mut Vec<usize>,
    stack: &mut Vec<usize>,
) -> Result<(), String> {
    if order.contains(&at) {
        return Ok(());
    }
    if stack.contains(&at) {
        let mut cycle: Vec<&str> = stack.iter().map(|&i| stem(raws[i].0)).collect();
        cycle.push(stem(raws[at].0));
        return Err(format!("include cycle: {}", cycle.join(" → ")));
    }
    stack.push(at);
    for include in &raws[at].1.includes {
        let Some(&parent) = by_title.get(include) else {
            return Err(format!(
                "{} includes `{include}`, which no file given defines",
                raws[at].0
            ));
        };
        visit(parent, raws, by_title, order, stack)?;
    }
    stack.pop();
    order.push(at);
    Ok(())
}

// Natively the exported symbol names are not valid in a linker version
// script, so the component exports them on wasm only; natively the tests
// call the format directly.
#[cfg(target_arch = "wasm32")]
mod export {
    type Component = ecu_family_guest::Exported<super::EcuFlash>;
    ecu_family_guest::bindings::export!(Component with_types_in ecu_family_guest::bindings);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecu_model::family::{HEAD_BYTES, ImageId};

    fn found(answer: Identified) -> Candidate {
        match answer {
            Identified::Candidates(mut c) if c.len() == 1 => c.remove(0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_and_includes_are_read_from_the_head() {
        let text = format!(
            "<?xml version=\"1.0\"?>\n<rom>\n <romid><xmlid>A2UG000N</xmlid><internalidaddress>2004</internalidaddress>\
             <internalidhex>41324547</internalidhex><make>Subaru</make></romid>\n <include>32BITBASE</include>\n\
             <table name=\"t\" address=\"10\"/>{}</rom>",
            " ".repeat(HEAD_BYTES)
        );
        let head = &text.as_bytes()[..HEAD_BYTES];
        let c = found(EcuFlash.identify("A2UG000N.xml", head, false).unwrap());
        assert_eq!(
            (c.title.as_str(), c.includes.as_slice()),
            ("A2UG000N", &["32BITBASE".to_string()][..])
        );
        assert_eq!(
            c.id,
            ImageId::Bytes {
                offset: 0x2004,
                bytes: b"A2EG".to_vec()
            }
        );
        assert_eq!(
            c,
            found(
                EcuFlash
                    .identify("A2UG000N.xml", text.as_bytes(), true)
                    .unwrap()
            )
        );
    }

    #[test]
    fn a_head_that_cannot_tell_asks_for_the_whole_file() {
        // A long comment first: the head holds no table to stop at.
        let pad = "x".repeat(HEAD_BYTES);
        let text = format!("<rom><!-- {pad} --><romid><xmlid>B</xmlid></romid></rom>");
        let head = &text.as_bytes()[..HEAD_BYTES];
        assert_eq!(
            EcuFlash.identify("b.xml", head, false).unwrap(),
            Identified::NeedsWholeFile
        );
        assert_eq!(
            found(EcuFlash.identify("b.xml", text.as_bytes(), true).unwrap()).title,
            "B"
        );
        // A table start inside a comment is no body.
        let text =
            "<rom><!-- <table name=\"old\"> --><romid><xmlid>C</xmlid></romid><include>D</include>";
        assert_eq!(
            EcuFlash.identify("c.xml", text.as_bytes(), false).unwrap(),
            Identified::NeedsWholeFile
        );
    }

    #[test]
    fn a_base_without_an_xmlid_is_titled_by_its_file_name() {
        let c = found(
            EcuFlash
                .identify(
                    "base/evo10base.xml",
                    b"<rom><scaling name=\"s\"/></rom>",
                    true,
                )
                .unwrap(),
        );
        assert_eq!((c.title.as_str(), &c.id), ("evo10base", &ImageId::None));
    }

    #[test]
    fn only_rom_roots_and_files_that_are_no_xml_are_claimed() {
        assert!(
            EcuFlash
                .claims("a.xml", b"<?xml version=\"1.0\"?><rom><romid>")
                .unwrap()
        );
        assert!(EcuFlash.claims("broken.xml", b"").unwrap());
        assert!(
            !EcuFlash
                .claims("rr.xml", b"<roms><rom base=\"X\">")
                .unwrap()
        );
        assert!(
            !EcuFlash
                .claims("c.xml", b"<config><item/></config>")
                .unwrap()
        );
    }

    #[test]
    fn a_chain_resolves_parents_first_and_says_what_is_wrong() {
        let base = "<rom><romid><xmlid>BASE</xmlid></romid>\
            <scaling name=\"raw\" storagetype=\"uint8\" toexpr=\"x\" frexpr=\"x\"/>\
            <table name=\"Idle\" type=\"1D\" scaling=\"raw\"/></rom>";
        let child = "<rom><romid><xmlid>CHILD</xmlid><internalidaddress>0</internalidaddress>\
            <internalidhex>01</internalidhex><checksummodule>subarudbw</checksummodule></romid>\
            <include>BASE</include><table name=\"Idle\" address=\"20\"/></rom>";
        let source = |file_name, text: &'static str| Source {
            file_name,
            contents: text.as_bytes(),
        };
        let resolved = EcuFlash
            .resolve(
                "CHILD",
                &[source("child.xml", child), source("base.xml", base)],
            )
            .unwrap();
        assert_eq!(resolved.chain, ["BASE", "CHILD"]);
        assert_eq!(resolved.tables[0].address, 0x20);
        assert_eq!(
            resolved.checksum,
            family::Checksum::Plan("subarudbw".into())
        );
        let missing = EcuFlash
            .resolve("CHILD", &[source("child.xml", child)])
            .unwrap_err();
        assert!(missing.contains("includes `BASE`"), "{missing}");
        let looped = base.replace("</romid>", "</romid><include>CHILD</include>");
        let looped: &'static str = Box::leak(looped.into_boxed_str());
        let cycle = EcuFlash
            .resolve(
                "CHILD",
                &[source("child.xml", child), source("base.xml", looped)],
            )
            .unwrap_err();
        assert!(
            cycle.contains("include cycle: child → base → child"),
            "{cycle}"
        );
    }
}
