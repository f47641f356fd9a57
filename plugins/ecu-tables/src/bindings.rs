//! The plugin's WIT world as Rust (wit-bindgen): what the glue in
//! `component` exports, and the imports it and `family::peer` call. Its
//! own module, so both use it without importing each other.

#![allow(missing_docs)]

wit_bindgen::generate!({
    path: "../../wit/ecu-tables",
    world: "plugin",
    generate_all,
});
