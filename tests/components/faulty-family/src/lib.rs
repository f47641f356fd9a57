//! A faulty ECU definition family, for tests: what it does wrong is
//! chosen by the first line of the definition file it is asked about.

wit_bindgen::generate!({ path: "wit", world: "family", generate_all });

use exports::benchtop::ecu_family::family::{
    Candidate, Checksum, Definition, Guest, ImageId, Scaling, Storage, Table, Verdict,
};

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Faulty;

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

    fn claims(_file_name: String, _head: Vec<u8>) -> Result<bool, String> {
        Ok(true)
    }

    fn identify(_file_name: String, _contents: Vec<u8>) -> Result<Vec<Candidate>, String> {
        Ok(vec![Candidate {
            key: "k".into(),
            title: "Faulty".into(),
            id: ImageId::Length(16),
            fields: Vec::new(),
        }])
    }

    fn resolve(_file_name: String, contents: Vec<u8>, _key: String) -> Result<Definition, String> {
        match fault(&contents) {
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
            _ => Ok(Definition {
                fields: Vec::new(),
                chain: Vec::new(),
                tables: vec![table("Nonsense", u64::MAX, "x ** 2")],
                unreadable: Vec::new(),
                checksum: Checksum::Unknown("none".into()),
            }),
        }
    }

    fn verify(plan: String, image: Vec<u8>) -> Result<Verdict, String> {
        let (body, last) = split(&plan, &image)?;
        Ok(if sum(body) == last {
            Verdict::Valid
        } else {
            Verdict::Invalid(format!("the last byte is {last}, the sum {}", sum(body)))
        })
    }

    fn fix(plan: String, mut image: Vec<u8>) -> Result<Vec<u8>, String> {
        let (body, _) = split(&plan, &image)?;
        let total = sum(body);
        *image.last_mut().expect("split checked") = total;
        Ok(image)
    }
}

/// A one-byte table at `address` with `to` as its expression.
fn table(name: &str, address: u64, to: &str) -> Table {
    Table {
        name: name.into(),
        category: None,
        address,
        scaling: Scaling {
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

fn split<'a>(plan: &str, image: &'a [u8]) -> Result<(&'a [u8], u8), String> {
    if plan != "sum8" {
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
