//! A faulty ECU definition family, for tests: what it does wrong is
//! chosen by the first line of the definition file it is asked about.

wit_bindgen::generate!({ path: "wit", world: "family", generate_all });

use benchtop::host::blobs;
use exports::benchtop::ecu_family::family::{
    Blob, Candidate, Checksum, Definition, Edit, Fixed, Guest, Identified, ImageId, Scaling,
    Source, Storage, Table, Verdict,
};

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Faulty;

fn bytes(blob: Blob) -> Result<Vec<u8>, String> {
    blobs::read(blob, 0, u64::MAX)
}

fn fault(contents: &[u8]) -> &str {
    std::str::from_utf8(contents)
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .trim()
}

impl Guest for Faulty {
    fn name() -> Result<String, String> {
        Ok("Faulty".into())
    }

    fn extensions() -> Result<Vec<String>, String> {
        Ok(vec!["faulty".into()])
    }

    fn claims(_file_name: String, _head: Blob) -> Result<bool, String> {
        Ok(true)
    }

    fn identify(_file_name: String, contents: Blob, _whole: bool) -> Result<Identified, String> {
        let contents = bytes(contents)?;
        // `base` is only included; `child` includes it (as ECUFlash files
        // include their base by xmlid).
        let (title, id, includes) = match fault(&contents) {
            "base" => ("Base", ImageId::None, Vec::new()),
            "child" => ("Child", ImageId::Length(16), vec!["Base".to_string()]),
            _ => ("Faulty", ImageId::Length(16), Vec::new()),
        };
        Ok(Identified::Candidates(vec![Candidate {
            key: "k".into(),
            title: title.into(),
            id,
            fields: Vec::new(),
            includes,
        }]))
    }

    fn resolve(_key: String, files: Vec<Source>) -> Result<Definition, String> {
        let contents = bytes(files.first().ok_or("no file")?.contents)?;
        match fault(&contents) {
            // The child's table and its base's, as a chain.
            "child" => {
                let mut tables = vec![table("Child byte", 0, "x")];
                let mut chain = vec![files[0].file_name.clone()];
                let mut unreadable = Vec::new();
                match files.get(1) {
                    Some(base) if fault(&bytes(base.contents)?) == "base" => {
                        tables.push(table("Base byte", 3, "x"));
                        chain.insert(0, base.file_name.clone());
                    }
                    _ => unreadable.push(("Base byte".into(), "its base is missing".into())),
                }
                Ok(Definition {
                    fields: Vec::new(),
                    chain,
                    tables,
                    unreadable,
                    checksum: Checksum::Unknown("none".into()),
                })
            }
            "trap" => panic!("a family bug"),
            "loop" => loop {
                std::hint::spin_loop();
            },
            // Not a fault: one table, and a checksum the family keeps (the
            // last byte is the sum of the others), to show plans work.
            "checksum" => Ok(Definition {
                fields: Vec::new(),
                chain: Vec::new(),
                tables: vec![table("First byte", 0, "x")],
                unreadable: Vec::new(),
                checksum: Checksum::Plan("sum8".into()),
            }),
            // A fault: the same checksum, but `fix` leaves it wrong.
            "stuck-checksum" => Ok(Definition {
                fields: Vec::new(),
                chain: Vec::new(),
                tables: vec![table("First byte", 0, "x")],
                unreadable: Vec::new(),
                checksum: Checksum::Plan(STUCK.into()),
            }),
            _ => Ok(Definition {
                fields: Vec::new(),
                chain: Vec::new(),
                tables: vec![table("Nonsense", u64::MAX, "x ** 2")],
                unreadable: Vec::new(),
                checksum: Checksum::Unknown("none".into()),
            }),
        }
    }

    fn verify(plan: String, image: Blob) -> Result<Verdict, String> {
        let image = bytes(image)?;
        let (body, last) = split(&plan, &image)?;
        Ok(verify(sum(body), last))
    }

    fn fix(plan: String, image: Blob) -> Result<Fixed, String> {
        let image = bytes(image)?;
        let (body, last) = split(&plan, &image)?;
        let total = sum(body);
        if plan == STUCK {
            // No edit, and (honestly) the verdict on the image as it is.
            let after = verify(total, last);
            return Ok(Fixed {
                edits: Vec::new(),
                after,
            });
        }
        // Written, the last byte is the sum: the image is then valid.
        let edits = if total == last {
            Vec::new()
        } else {
            vec![Edit {
                offset: body.len() as u64,
                bytes: vec![total],
            }]
        };
        Ok(Fixed {
            edits,
            after: Verdict::Valid,
        })
    }
}

/// A one-byte table at `address` with `to` as its expression.
fn table(name: &str, address: u64, to: &str) -> Table {
    Table {
        name: name.into(),
        category: None,
        address,
        scaling: Scaling {
            name: None,
            storage: Storage::Uint8,
            little_endian: false,
            to_physical: to.into(),
            from_physical: Some("x".into()),
            units: None,
            format: None,
            min: None,
            max: None,
            choices: Vec::new(),
        },
        rows: None,
        columns: None,
        column_major: false,
        rows_reversed: false,
        columns_reversed: false,
        level: None,
    }
}

/// A sum8 plan whose fix writes nothing.
const STUCK: &str = "sum8-stuck";

fn verify(total: u8, last: u8) -> Verdict {
    if total == last {
        Verdict::Valid
    } else {
        Verdict::Invalid(format!("the last byte is {last}, the sum {total}"))
    }
}

fn split<'a>(plan: &str, image: &'a [u8]) -> Result<(&'a [u8], u8), String> {
    if plan != "sum8" && plan != STUCK {
        return Err(format!("unknown plan `{plan}`"));
    }
    match image.split_last() {
        Some((last, body)) => Ok((body, *last)),
        None => Err("an empty image".into()),
    }
}

fn sum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |s, b| s.wrapping_add(*b))
}

impl exports::benchtop::host::provider::Guest for Faulty {
    fn describe() -> String {
        "a faulty ECU definition family, for tests".into()
    }
}

#[cfg(target_arch = "wasm32")]
export!(Faulty);
