//! A minimal plugin with world-level exports.

wit_bindgen::generate!({ path: "wit", world: "plugin", generate_all });

struct Greeter;

impl Guest for Greeter {
    fn hello() -> String {
        "hello from greeter".into()
    }

    fn greet(name: String) -> String {
        format!("hello, {name}")
    }
}

// Off wasm the generated export symbols clash with the host linker's rules.
#[cfg(target_arch = "wasm32")]
export!(Greeter);
