//! A definition file's content as written, before includes are merged:
//! what both readers ([`crate::xml`] through a document, [`crate::plain`]
//! directly) make of a file.
//!
//! Values are kept as text: `internalidhex`/`xmlid` such as `56890009` must
//! never become numbers, and merging needs to know which attributes a file
//! actually gave.

use std::collections::BTreeMap;

pub use ecu_model::definition::RomId;

/// A `<scaling>` element.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawScaling {
    /// The `name` attribute, as tables refer to it.
    pub name: String,
    /// Every other attribute as written (toexpr, frexpr, storagetype, units,
    /// …).
    pub attrs: BTreeMap<String, String>,
    /// `<data name value>` children of a bloblist scaling.
    pub blobs: Vec<(String, String)>,
}

/// A `<table>` element, or one of its axis children (same shape, one level).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawTable {
    /// The `name` attribute; axes may lack one.
    pub name: Option<String>,
    /// Every attribute as written (address, type, scaling, category, …).
    pub attrs: BTreeMap<String, String>,
    /// `<data>` texts (static axis labels).
    pub labels: Vec<String>,
    /// Axis children (`X Axis`, `Y Axis`, static ones) of a table.
    pub axes: Vec<RawTable>,
}

impl RawTable {
    /// The attribute `key` as written, if given.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

/// A parsed definition file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawDefinition {
    /// The `<romid>` block; without internal id only an include parent.
    pub romid: RomId,
    /// xmlids of the `<include>`d parent definitions, in order.
    pub includes: Vec<String>,
    /// Every `<scaling>` element, in order.
    pub scalings: Vec<RawScaling>,
    /// Every `<table>` element, in order.
    pub tables: Vec<RawTable>,
}

/// The id a `<romid>` of these `(tag, text)` children, in document order,
/// makes (a later child of the same tag wins).
pub(crate) fn romid_of(children: impl IntoIterator<Item = (String, String)>) -> RomId {
    let mut id = RomId::default();
    for (key, value) in children {
        let given = || Some(value.clone()).filter(|v| !v.is_empty());
        match key.as_str() {
            "xmlid" => id.xmlid = given(),
            "internalidaddress" => id.internal_id_address = given(),
            "internalidhex" => id.internal_id_hex = given(),
            "internalidstring" => id.internal_id_string = given(),
            _ => {}
        }
        id.fields.insert(key, value);
    }
    id
}
