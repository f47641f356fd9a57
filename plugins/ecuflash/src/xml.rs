//! Reading one ECUFlash definition file into its [`RawDefinition`]: plainly
//! written files directly ([`crate::plain`]), any other through a roxmltree
//! document.

use crate::raw::romid_of;
pub use crate::raw::{RawDefinition, RawScaling, RawTable, RomId};
use std::collections::BTreeMap;

/// Parses a whole definition file: read directly when plainly written
/// ([`crate::plain`]), else as a document.
pub fn parse_definition(text: &str) -> Result<RawDefinition, String> {
    match crate::plain::parse_plain(text) {
        Some(def) => Ok(def),
        None => parse_document(text),
    }
}

/// [`parse_definition`] through a roxmltree document, whatever the shape:
/// what the plain reader must agree with.
pub fn parse_document(text: &str) -> Result<RawDefinition, String> {
    let doc = parse_doc(text)?;
    let root = doc.root_element();
    if root.tag_name().name() == "roms" {
        return Err(ROMRAIDER.into());
    }
    if root.tag_name().name() != "rom" {
        return Err(format!(
            "root element is <{}>, expected <rom> (an ECUFlash definition)",
            root.tag_name().name()
        ));
    }
    let mut def = RawDefinition::default();
    for child in root.children().filter(|n| n.is_element()) {
        match child.tag_name().name() {
            "romid" => def.romid = romid(child),
            "include" => {
                let id = text_of(child);
                if !id.is_empty() {
                    def.includes.push(id);
                }
            }
            "scaling" => {
                let attrs = attributes(child);
                let Some(name) = attrs.get("name").cloned() else {
                    continue;
                };
                let blobs = child
                    .children()
                    .filter(|n| n.has_tag_name("data"))
                    .filter_map(|n| {
                        Some((
                            n.attribute("name")?.to_string(),
                            n.attribute("value")?.trim().to_string(),
                        ))
                    })
                    .collect();
                def.scalings.push(RawScaling { name, attrs, blobs });
            }
            "table" => def.tables.push(table(child, true)),
            _ => {}
        }
    }
    Ok(def)
}

/// Reads only the `<romid>` block, which is all that ROM matching and the
/// include index need: a definitions folder can hold thousands of files and
/// only a chain of two or three is ever parsed in full.
pub fn parse_romid_only(text: &str) -> Result<RomId, String> {
    // A RomRaider file's romids would match ROMs it cannot describe to us.
    if is_romraider(text) {
        return Err(ROMRAIDER.into());
    }
    let (Some(start), Some(end)) = (text.find("<romid"), text.find("</romid>")) else {
        // No romid at all is legal for a pure base file; a full parse tells
        // us whether the file is XML.
        return parse_definition(text).map(|d| d.romid);
    };
    if end < start {
        return parse_definition(text).map(|d| d.romid);
    }
    let fragment = &text[start..end + "</romid>".len()];
    let doc = parse_doc(fragment)?;
    Ok(romid(doc.root_element()))
}

/// What a RomRaider-format file is told (both tools call their files
/// "definitions", and tuners mix them up in one folder).
pub const ROMRAIDER: &str = "this is a RomRaider definition (<roms><rom base=…> with storageaddress/sizex), not an ECUFlash one (<rom><romid>…<include>): the RomRaider family's component (romraider.wasm) reads it; put it in the plugins directory";

pub use ecu_model::sniff::is_romraider;

fn parse_doc(text: &str) -> Result<roxmltree::Document<'_>, String> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, options).map_err(|e| e.to_string())
}

fn romid(node: roxmltree::Node) -> RomId {
    romid_of(
        node.children()
            .filter(|n| n.is_element())
            .map(|child| (child.tag_name().name().to_string(), text_of(child))),
    )
}

fn table(node: roxmltree::Node, top: bool) -> RawTable {
    let mut attrs = attributes(node);
    let name = attrs.remove("name").filter(|n| !n.is_empty());
    let mut t = RawTable {
        name,
        attrs,
        ..Default::default()
    };
    for child in node.children().filter(|n| n.is_element()) {
        match child.tag_name().name() {
            "data" => t.labels.push(text_of(child)),
            "table" if top => t.axes.push(table(child, false)),
            _ => {}
        }
    }
    t
}

fn attributes(node: roxmltree::Node) -> BTreeMap<String, String> {
    node.attributes()
        .map(|a| (a.name().to_string(), a.value().to_string()))
        .collect()
}

fn text_of(node: roxmltree::Node) -> String {
    node.text().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHILD: &str = r#"<rom>
  <romid><xmlid>56890009</xmlid><internalidaddress>5002a</internalidaddress>
    <internalidhex>56890009</internalidhex><make>Mitsubishi</make><submodel /></romid>
  <include>evo10base</include>
  <scaling name="AFR" toexpr="14.7*128/x" storagetype="uint8"/>
  <scaling name="Sw" storagetype="bloblist"><data name="off" value="00E9"/><data name="on" value="0100"/></scaling>
  <table name="T" address="55957" scaling="Timing">
    <table name="Load" address="6185e"/>
    <table type="Static Y Axis" elements="2"><data>ON</data><data>OFF</data></table>
  </table>
</rom>"#;

    #[test]
    fn keeps_ids_as_text_and_reads_children() {
        let d = parse_definition(CHILD).unwrap();
        assert_eq!(d.romid.xmlid.as_deref(), Some("56890009"));
        assert_eq!(d.romid.internal_id_hex.as_deref(), Some("56890009"));
        assert_eq!(d.romid.field("make"), Some("Mitsubishi"));
        assert_eq!(d.romid.field("submodel"), None);
        assert_eq!(d.includes, vec!["evo10base"]);
        assert_eq!(d.scalings[1].blobs[1], ("on".into(), "0100".into()));
        let t = &d.tables[0];
        assert_eq!(t.name.as_deref(), Some("T"));
        assert_eq!(t.attr("address"), Some("55957"));
        assert_eq!(t.axes.len(), 2);
        assert_eq!(t.axes[1].name, None);
        assert_eq!(t.axes[1].labels, vec!["ON", "OFF"]);
    }

    /// Issue 17: RomRaider's format (RR_EA1M511A.xml) is named as such.
    #[test]
    fn romraider_files_are_named_as_such() {
        let rr = "<?xml version=\"1.0\"?>\n<!-- ROMRAIDER <rom> <romid> -->\n<roms>\n  <rom base=\"32BITBASE\">\n    <romid><xmlid>EA1M511A</xmlid><internalidaddress>2000</internalidaddress><internalidstring>EA1M511A</internalidstring></romid>\n    <table name=\"T\" storageaddress=\"0x100\" sizex=\"2\"/>\n  </rom>\n</roms>";
        for err in [
            parse_romid_only(rr).unwrap_err(),
            parse_definition(rr).unwrap_err(),
        ] {
            assert!(err.starts_with("this is a RomRaider definition"), "{err}");
        }
        assert!(!is_romraider(CHILD));
        assert!(is_romraider("<roms/>"));
    }

    #[test]
    fn romid_only_matches_full_parse() {
        assert_eq!(
            parse_romid_only(CHILD).unwrap(),
            parse_definition(CHILD).unwrap().romid
        );
        assert!(parse_definition("<roms/>").is_err());
        assert!(parse_definition("<rom>").is_err());
    }
}
