//! Families other plugins serve: components exporting
//! `benchtop:ecu-family/family` (wit/ecu-family), reached through the
//! host's `benchtop:host/peers` routing. [`PeerFormat`] is such a
//! component as an ecu-model [`Format`]: each call routed to the plugin,
//! bytes handed over as blobs, WIT records turned into ecu-model's types;
//! [`super::format::FormatFamily`] does the rest, as for a format linked
//! in natively.
//!
//! A served family reads no files: this plugin reads the definitions
//! folder (it holds the grant) and hands each file's bytes over once per
//! change; the answers are cached by the family, keyed by the file's stamp
//! and dropped when the serving plugin is loaded again.

use super::format::FormatFamily;
use super::{Family, Served};
use crate::bindings::benchtop::ecu_family::family as wit;
use crate::bindings::benchtop::host::{blobs, peers};
use crate::definition::{Axis, AxisSource, Table, TableType};
use crate::expr::Expr;
use crate::printf::Format as Printf;
use crate::scaling::{Endian, Kind, Scaling, Storage};
use ecu_model::family::{
    Candidate, Checksum, Edit, Fixed, Format, Identified, ImageId, Resolved, Source, Verdict,
    apply_edits,
};
use std::sync::Arc;

/// The interface a family component serves, as the host names it.
pub const INTERFACE: &str = "benchtop:ecu-family/family@0.1.0";

/// Sends the next calls of [`INTERFACE`] to `plugin`.
fn route(plugin: &str) -> Result<(), String> {
    peers::route(INTERFACE, plugin)
}

/// The families the host's loaded plugins serve.
pub struct PeerFamilies;

impl Served for PeerFamilies {
    fn providers(&self) -> Vec<(String, u64)> {
        peers::providers(INTERFACE)
            .into_iter()
            .map(|p| (p.plugin, p.generation))
            .collect()
    }

    fn family(&self, plugin: &str, code: u64) -> Result<Box<dyn Family>, String> {
        let format = PeerFormat {
            plugin: plugin.to_owned(),
            code,
        };
        Ok(Box::new(FormatFamily::new(Arc::new(format))?))
    }
}

/// The format plugin `plugin` serves.
pub struct PeerFormat {
    plugin: String,
    /// Its code (the host's `generation`): what a remembered answer of
    /// its is keyed by.
    code: u64,
}

/// Bytes kept in the host for one peer call (`benchtop:host/blobs`), let
/// go when dropped: a file or an image crosses to the family as one copy.
struct Kept(blobs::Blob);

impl Kept {
    fn new(bytes: &[u8]) -> Result<Self, String> {
        blobs::keep(bytes).map(Self)
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        blobs::release(self.0);
    }
}

impl Format for PeerFormat {
    fn name(&self) -> Result<String, String> {
        route(&self.plugin)?;
        wit::name()
    }

    fn extensions(&self) -> Result<Vec<String>, String> {
        route(&self.plugin)?;
        wit::extensions()
    }

    fn claims(&self, file_name: &str, head: &[u8]) -> Result<bool, String> {
        route(&self.plugin)?;
        let head = Kept::new(head)?;
        wit::claims(file_name, head.0)
    }

    fn identify(
        &self,
        file_name: &str,
        contents: &[u8],
        whole: bool,
    ) -> Result<Identified, String> {
        route(&self.plugin)?;
        let contents = Kept::new(contents)?;
        Ok(match wit::identify(file_name, contents.0, whole)? {
            wit::Identified::Candidates(found) => {
                Identified::Candidates(found.into_iter().map(candidate).collect())
            }
            wit::Identified::NeedsWholeFile => Identified::NeedsWholeFile,
        })
    }

    fn resolve(&self, key: &str, files: &[Source<'_>]) -> Result<Resolved, String> {
        let cache = plugin_kit::paths::cache_dir();
        let question = super::remembered::Question {
            plugin: &self.plugin,
            code: self.code,
            key,
            files,
        };
        if let Some(cache) = &cache
            && let Some(answer) = super::remembered::recall(cache, &question)
        {
            return Ok(resolved(answer));
        }
        route(&self.plugin)?;
        let kept = files
            .iter()
            .map(|f| Kept::new(f.contents))
            .collect::<Result<Vec<_>, _>>()?;
        let sources: Vec<wit::Source> = files
            .iter()
            .zip(&kept)
            .map(|(f, blob)| wit::Source {
                file_name: f.file_name.to_owned(),
                contents: blob.0,
            })
            .collect();
        let answer = wit::resolve(key, &sources)?;
        // Remembered under the code that answered: a hot swap since this
        // family was made would otherwise file the new code's answer
        // under the old code.
        let still_serving = || {
            peers::providers(INTERFACE)
                .iter()
                .any(|p| p.plugin == self.plugin && p.generation == self.code)
        };
        if let Some(cache) = &cache
            && still_serving()
            && let Err(e) = super::remembered::remember(cache, &question, &answer)
        {
            eprintln!("ecu-tables: the resolved definition was not remembered: {e}");
        }
        Ok(resolved(answer))
    }

    fn verify(&self, plan: &str, image: &[u8]) -> Result<Verdict, String> {
        route(&self.plugin)?;
        let image = Kept::new(image)?;
        Ok(verdict(wit::verify(plan, image.0)?))
    }

    fn fix(&self, plan: &str, image: &mut [u8]) -> Result<Vec<Edit>, String> {
        Ok(self.fix_checked(plan, image)?.edits)
    }

    /// One call: the family fixes and verifies in the same pass.
    fn fix_checked(&self, plan: &str, image: &mut [u8]) -> Result<Fixed, String> {
        route(&self.plugin)?;
        let wit::Fixed { edits, after } = wit::fix(plan, Kept::new(image)?.0)?;
        let edits: Vec<Edit> = edits
            .into_iter()
            .map(|e| Edit {
                offset: e.offset,
                bytes: e.bytes,
            })
            .collect();
        apply_edits(image, &edits)?;
        Ok(Fixed {
            edits,
            after: verdict(after),
        })
    }
}

fn verdict(v: wit::Verdict) -> Verdict {
    match v {
        wit::Verdict::Valid => Verdict::Valid,
        wit::Verdict::Disabled(why) => Verdict::Disabled(why),
        wit::Verdict::Invalid(why) => Verdict::Invalid(why),
        wit::Verdict::Unknown(why) => Verdict::Unknown(why),
    }
}

fn candidate(c: wit::Candidate) -> Candidate {
    Candidate {
        key: c.key,
        title: c.title,
        id: match c.id {
            wit::ImageId::Bytes(id) => ImageId::Bytes {
                offset: id.offset,
                bytes: id.bytes,
            },
            wit::ImageId::Length(n) => ImageId::Length(n),
            wit::ImageId::None => ImageId::None,
        },
        fields: c.fields,
        includes: c.includes,
    }
}

/// The definition a remembered entry's payload holds (past its question),
/// as a resolution reads it: any bytes give one or an error (the fuzz
/// target `ecu_kept` feeds it).
pub fn resolved_from_payload(payload: &[u8]) -> Result<Resolved, String> {
    super::remembered::definition_from_payload(payload).map(resolved)
}

/// A served definition as the tools use it. Tables the family described
/// but this plugin cannot use (an expression outside the subset, an
/// address past 4 GiB) are listed as unreadable with the reason.
fn resolved(served: wit::Definition) -> Resolved {
    let mut unreadable = served.unreadable;
    let mut tables = Vec::with_capacity(served.tables.len());
    for t in served.tables {
        let name = t.name.clone();
        match table(t) {
            Ok(t) => tables.push(t),
            Err(why) => unreadable.push((name, why)),
        }
    }
    Resolved {
        fields: served.fields,
        chain: served.chain,
        tables,
        unreadable,
        checksum: match served.checksum {
            wit::Checksum::Plan(plan) => Checksum::Plan(plan),
            wit::Checksum::Unknown(why) => Checksum::Unknown(why),
        },
    }
}

fn table(t: wit::Table) -> Result<Table, String> {
    let address = address(t.address)?;
    let scaling = Arc::new(scaling(&t.name, t.scaling)?);
    let (rows, columns) = match (t.rows, t.columns) {
        // One axis is a one-axis table whichever side the family put it.
        (None, Some(only)) => (Some(only), None),
        other => other,
    };
    let table_type = match (&rows, &columns) {
        (None, _) => TableType::Scalar,
        (Some(_), None) => TableType::OneAxis,
        (Some(_), Some(_)) => TableType::Grid,
    };
    let row_label = if columns.is_some() { "Y Axis" } else { "Axis" };
    Ok(Table {
        id: t.name.clone(),
        name: t.name,
        category: t.category,
        table_type,
        address,
        scaling,
        swapxy: t.column_major,
        flipy: t.rows_reversed,
        flipx: t.columns_reversed,
        level: t.level,
        row_axis: rows.map(|a| axis(a, row_label)).transpose()?,
        col_axis: columns.map(|a| axis(a, "X Axis")).transpose()?,
    })
}

fn address(offset: u64) -> Result<u32, String> {
    u32::try_from(offset).map_err(|_| format!("address 0x{offset:X} is past 4 GiB"))
}

fn axis(a: wit::Axis, role: &str) -> Result<Axis, String> {
    let (xml_type, source) = match a.points {
        wit::Points::Labels(labels) => (format!("Static {role}"), AxisSource::Static(labels)),
        wit::Points::Stored(p) => (
            role.to_owned(),
            AxisSource::Dynamic {
                address: address(p.address)?,
                elements: p.count as usize,
                scaling: Arc::new(scaling(a.name.as_deref().unwrap_or(role), p.scaling)?),
            },
        ),
    };
    Ok(Axis {
        name: a.name,
        xml_type,
        source,
        flip: a.reversed,
    })
}

fn scaling(name: &str, s: wit::Scaling) -> Result<Scaling, String> {
    let endian = if s.little_endian {
        Endian::Little
    } else {
        Endian::Big
    };
    let (storage, kind) = if s.storage == wit::Storage::Bits {
        if !s.choices.is_empty() {
            return Err("a bit table cannot also have choices".into());
        }
        (Storage::Bits, Kind::Bit)
    } else if s.choices.is_empty() {
        let storage = match s.storage {
            wit::Storage::Uint8 => Storage::U8,
            wit::Storage::Int8 => Storage::I8,
            wit::Storage::Uint16 => Storage::U16,
            wit::Storage::Int16 => Storage::I16,
            wit::Storage::Uint32 => Storage::U32,
            wit::Storage::Int32 => Storage::I32,
            wit::Storage::Float32 => Storage::F32,
            wit::Storage::Bits => unreachable!("bit tables are handled above"),
        };
        let to = Expr::parse(&s.to_physical).map_err(|e| format!("to-physical: {e}"))?;
        let from = s
            .from_physical
            .as_deref()
            .map(Expr::parse)
            .transpose()
            .map_err(|e| format!("from-physical: {e}"))?;
        (storage, Kind::Numeric { to, from })
    } else {
        let len = s.choices[0].bytes.len();
        if len == 0 || s.choices.iter().any(|c| c.bytes.len() != len) {
            return Err("its choices' byte patterns are empty or differ in length".into());
        }
        let blobs = s.choices.into_iter().map(|c| (c.name, c.bytes)).collect();
        (Storage::Blob(len), Kind::Blobs(blobs))
    };
    Ok(Scaling {
        name: s.name.clone().unwrap_or_else(|| name.to_owned()),
        units: s.units.filter(|u| !u.is_empty()),
        format: s.format.as_deref().map(Printf::parse).unwrap_or_default(),
        format_text: s.format,
        min: s.min,
        max: s.max,
        storage,
        endian,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(storage: wit::Storage, to: &str, from: Option<&str>) -> wit::Scaling {
        wit::Scaling {
            name: None,
            storage,
            little_endian: false,
            to_physical: to.into(),
            from_physical: from.map(str::to_string),
            units: Some("kg/h".into()),
            format: Some("%0.1f".into()),
            min: None,
            max: None,
            choices: Vec::new(),
        }
    }

    fn served_table(rows: Option<wit::Axis>, columns: Option<wit::Axis>) -> wit::Table {
        wit::Table {
            name: "KL_HFM".into(),
            category: Some("Air".into()),
            address: 0x608C,
            scaling: cells(wit::Storage::Int16, "x/4", Some("x*4")),
            rows,
            columns,
            column_major: false,
            rows_reversed: false,
            columns_reversed: false,
            level: None,
        }
    }

    fn stored(address: u64, count: u32) -> wit::Axis {
        wit::Axis {
            name: Some("Voltage".into()),
            points: wit::Points::Stored(wit::StoredPoints {
                address,
                count,
                scaling: cells(wit::Storage::Uint16, "x/1023*5", None),
            }),
            reversed: false,
        }
    }

    #[test]
    fn a_served_table_becomes_a_table_the_tools_read() {
        let t = table(served_table(Some(stored(0x604A, 33)), None)).unwrap();
        assert_eq!(t.table_type, TableType::OneAxis);
        assert_eq!((t.address, t.rows(), t.cols()), (0x608C, 33, 1));
        assert_eq!(t.scaling.storage, Storage::I16);
        assert_eq!(t.scaling.to_physical(400.0), 100.0);
        assert_eq!(t.unit(), Some("kg/h"));
        // An axis given as columns alone is the table's only axis.
        let t = table(served_table(None, Some(stored(0x604A, 33)))).unwrap();
        assert_eq!(
            (t.table_type, t.rows(), t.cols()),
            (TableType::OneAxis, 33, 1)
        );
        let grid = table(served_table(Some(stored(0x10, 3)), Some(stored(0x20, 18)))).unwrap();
        assert_eq!(
            (grid.table_type, grid.rows(), grid.cols()),
            (TableType::Grid, 3, 18)
        );
        let scalar = table(served_table(None, None)).unwrap();
        assert_eq!(scalar.table_type, TableType::Scalar);
    }

    #[test]
    fn what_the_tools_cannot_use_is_refused_with_the_reason() {
        let mut t = served_table(None, None);
        t.scaling.to_physical = "x % 7".into();
        assert!(table(t).unwrap_err().contains("to-physical"));
        let mut t = served_table(None, None);
        t.address = 1 << 40;
        assert!(table(t).unwrap_err().contains("past 4 GiB"));
        let mut t = served_table(None, None);
        t.scaling.choices = vec![
            wit::Choice {
                name: "on".into(),
                bytes: vec![1],
            },
            wit::Choice {
                name: "off".into(),
                bytes: vec![0, 0],
            },
        ];
        assert!(table(t).unwrap_err().contains("differ in length"));
        let mut t = served_table(None, None);
        t.scaling.storage = wit::Storage::Bits;
        t.scaling.choices = vec![wit::Choice {
            name: "on".into(),
            bytes: vec![1],
        }];
        assert!(table(t).unwrap_err().contains("bit table"));
    }

    #[test]
    fn a_bits_storage_is_a_bit_table() {
        let mut t = served_table(Some(stored(0x10, 8)), None);
        t.scaling.storage = wit::Storage::Bits;
        let t = table(t).unwrap();
        assert_eq!(
            (t.scaling.storage, &t.scaling.kind),
            (Storage::Bits, &Kind::Bit)
        );
        // Eight one-bit cells take one byte.
        assert_eq!(t.byte_len(), 1);
        assert_eq!(t.unit(), None);
    }
}
