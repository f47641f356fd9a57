//! The project's own sample programs (samples/dos) through the tool layer.

use std::path::{Path, PathBuf};

use serde_json::Value;
use x86_inspect::cpu::Model;
use x86_inspect::tools::Session;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/dos")
        .join(name)
}

/// A tool's result as the JSON an agent reads.
fn json(v: impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn greet_echoes_the_command_tail() {
    let mut s = Session::default();
    s.load_program(&sample("greet.com"), Some("abc"), Model::I80186, true, None)
        .unwrap();
    let r = json(s.run(None, None, &mut |_, _| true).unwrap());
    assert_eq!(r["stop_reason"], "exited");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(
        r["output"],
        "Hello from benchtop x86-inspect!\r\nCommand tail:[ abc]\r\n"
    );
}

#[test]
fn sums_exits_42_with_recursive_calls() {
    let mut s = Session::default();
    s.load_program(&sample("sums.com"), None, Model::I8086, true, None)
        .unwrap();
    let r = json(s.run(None, None, &mut |_, _| true).unwrap());
    assert_eq!(r["exit_code"], 42);
    assert_eq!(r["output"], "sum of 1..100 = 5050\r\n");
    let f = json(s.list_functions(Some(10), None).unwrap());
    let print_dec = f["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["address"] == "0087:0121")
        .expect("print_dec is catalogued");
    assert_eq!(print_dec["calledCount"], 4);
    assert_eq!(print_dec["name"], "unknown");
}
