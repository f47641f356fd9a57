//! A definition family in another shape than ecu-tables expects (see
//! `wit/shifted-family.wit`), for tests.

wit_bindgen::generate!({ path: "wit", world: "family" });

use exports::benchtop::ecu_family::family::Guest;
use exports::benchtop::host::provider::Guest as Provider;

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Shifted;

impl Guest for Shifted {
    fn name() -> Result<String, String> {
        Ok("Shifted".into())
    }

    fn extensions() -> Result<Vec<u32>, String> {
        Ok(vec![7])
    }
}

impl Provider for Shifted {
    fn describe() -> String {
        "ECU definitions, in another shape of the family interface".into()
    }
}

export!(Shifted);
