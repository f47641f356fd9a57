//! JSON → WIT value → JSON (`benchtop_wit::convert`): the tool-argument path.
//!
//! The input is parsed as JSON (anything else is skipped) and converted
//! against every type of the WIT below, and, when it is an object, against
//! every function's parameters as tool arguments. A conversion may refuse,
//! never panic; and what it accepts must survive a second trip: `to_json` of
//! the value converts back, to the same JSON (NaN and the infinities travel
//! as strings, so JSON equality is exact).
#![no_main]

use benchtop_wit::convert::{FromJson, to_json};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;
use wasmtime::component::Val;
use wit_parser::{Resolve, Type};

const WIT: &str = r#"
package fuzz:convert@0.1.0;

interface types {
    record point { x: s32, y: s32 }
    enum color { red, green, dark-blue }
    flags perms { read, write, exec-all }
    variant shape { circle(f64), rect(point), empty, named(string) }
    record nested {
        name: string,
        origin: point,
        tags: list<string>,
        color: color,
        shape: shape,
        perms: perms,
        pair: tuple<u8, string>,
        maybe-count: option<u32>,
        path: list<point>,
        outcome: result<u16, string>,
    }
    record ints { a: u8, b: s8, c: u16, d: s16, e: u32, f: s32, g: u64, h: s64 }
    record floats { single: f32, double: f64, singles: list<f32>, doubles: list<f64> }
    record misc {
        c: char,
        flag: bool,
        text: string,
        bytes: list<u8>,
        nested-opt: option<option<string>>,
        unit-result: result,
        ok-only: result<string>,
        err-only: result<_, string>,
        numbers: option<list<s64>>,
        deep: list<list<tuple<f32, char>>>,
        quad: list<u8, 4>,
    }
    record maps { by-name: map<string, u32>, by-char: map<char, point>, by-int: map<u16, string> }
    type alias = nested;
    type alias-of-alias = alias;
    type shapes = list<shape>;
    type maybe-point = option<point>;
    type outcome = result<point, color>;

    echo-ints: func(a: u8, b: s8, c: u16, d: s16, e: u32, f: s32, g: u64, h: s64);
    echo-floats: func(single: f32, double: f64);
    echo-nested: func(value: nested);
    echo-flags: func(perms: perms, color: color, shape: shape);
    echo-option: func(value: option<string>, numbers: option<list<s64>>);
    echo-char: func(c: char, maybe: option<char>);
    nothing: func();
}

world fuzz {
    export types;
}
"#;

struct Types {
    resolve: Resolve,
    /// Every named type of the interface, plus the primitives.
    types: Vec<Type>,
    /// Each function's parameters.
    functions: Vec<Vec<(String, Type)>>,
}

fn types() -> &'static Types {
    static TYPES: OnceLock<Types> = OnceLock::new();
    TYPES.get_or_init(|| {
        let mut resolve = Resolve::default();
        let pkg = resolve.push_str("fuzz.wit", WIT).expect("the WIT parses");
        let iface = resolve.packages[pkg].interfaces["types"];
        let mut types: Vec<Type> = resolve.interfaces[iface]
            .types
            .values()
            .map(|id| Type::Id(*id))
            .collect();
        types.extend([
            Type::Bool,
            Type::U8,
            Type::S8,
            Type::U16,
            Type::S16,
            Type::U32,
            Type::S32,
            Type::U64,
            Type::S64,
            Type::F32,
            Type::F64,
            Type::Char,
            Type::String,
        ]);
        let functions = resolve.interfaces[iface]
            .functions
            .values()
            .map(|f| f.params.iter().map(|p| (p.name.clone(), p.ty)).collect())
            .collect();
        Types {
            resolve,
            types,
            functions,
        }
    })
}

fn check_type(conv: &FromJson, ty: &Type, input: &Value) {
    let Ok(val) = conv.value("arguments", ty, input) else {
        return;
    };
    let json = to_json(&val);
    let again = conv
        .value("arguments", ty, &json)
        .unwrap_or_else(|e| panic!("to_json gave {json} for {input}, which is refused: {e}"));
    assert_eq!(to_json(&again), json, "second trip of {input}");
}

fn check_fields(conv: &FromJson, params: &[(String, Type)], input: &Value) {
    let Value::Object(obj) = input else { return };
    let slots: Vec<(&str, &Type)> = params.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let Ok(fields) = conv.fields("arguments", &slots, obj) else {
        return;
    };
    // Arguments as the host would echo them back: a record of the slots.
    let json = to_json(&Val::Record(fields));
    let Value::Object(obj2) = &json else {
        panic!("a record became {json}");
    };
    let again = conv
        .fields("arguments", &slots, obj2)
        .unwrap_or_else(|e| panic!("arguments {json} (from {input}) are refused: {e}"));
    assert_eq!(to_json(&Val::Record(again)), json, "second trip of {input}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let t = types();
    let conv = FromJson::new(&t.resolve);
    for ty in &t.types {
        check_type(&conv, ty, &input);
    }
    for params in &t.functions {
        check_fields(&conv, params, &input);
    }
});
