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
            _ => Ok(Definition {
                fields: Vec::new(),
                chain: Vec::new(),
                tables: vec![Table {
                    name: "Nonsense".into(),
                    category: None,
                    address: u64::MAX,
                    scaling: Scaling {
                        storage: Storage::Uint8,
                        little_endian: false,
                        to_physical: "x ** 2".into(),
                        from_physical: None,
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
                }],
                unreadable: Vec::new(),
                checksum: Checksum::Unknown("none".into()),
            }),
        }
    }

    fn verify(_plan: String, _image: Vec<u8>) -> Result<Verdict, String> {
        Err("no checksum".into())
    }

    fn fix(_plan: String, _image: Vec<u8>) -> Result<Vec<u8>, String> {
        Err("no checksum".into())
    }
}

impl exports::benchtop::host::provider::Guest for Faulty {
    fn describe() -> String {
        "a faulty ECU definition family, for tests".into()
    }
}

#[cfg(target_arch = "wasm32")]
export!(Faulty);
