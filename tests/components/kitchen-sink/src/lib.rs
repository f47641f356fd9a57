//! A test plugin: functions over every WIT type, and probes of the sandbox.

use plugin_kit::paths;
use std::cell::Cell;
use std::io::Write;

wit_bindgen::generate!({
    path: "wit",
    world: "plugin",
    generate_all,
});

use benchtop::host::content::{Audio, Block, Embedded, EmbeddedContents, Image, Link};
use benchtop::host::{log, progress};
use exports::benchtop_test::kitchen_sink::{offers, sandbox, types};
use types::{AppError, Color, Nested, Perms, Point, Shape};

// Constructed only by the wasm32 export below.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct KitchenSink;

impl types::Guest for KitchenSink {
    fn echo_ints(
        a: u8,
        b: i8,
        c: u16,
        d: i16,
        e: u32,
        f: i32,
        g: u64,
        h: i64,
    ) -> (u8, i8, u16, i16, u32, i32, u64, i64) {
        (a, b, c, d, e, f, g, h)
    }

    fn echo_floats(single: f32, double: f64) -> (f32, f64, f64) {
        (single, double, single as f64 + double)
    }

    fn divide(a: f64, b: f64) -> f64 {
        a / b
    }

    fn echo_nested(value: Nested) -> Nested {
        value
    }

    fn echo_char(c: char) -> (char, u32) {
        (c, c as u32)
    }

    fn echo_flags(perms: Perms, color: Color, shape: Shape) -> (Perms, Color, Shape) {
        (perms, color, shape)
    }

    fn echo_option(value: Option<String>, numbers: Option<Vec<i64>>) -> Option<String> {
        value.map(|v| format!("{v} {:?}", numbers.unwrap_or_default()))
    }

    fn hello() -> String {
        "hello from kitchen-sink".into()
    }

    fn nothing() {}

    fn read_sensor(knock: bool) -> types::Reading {
        types::Reading {
            rpm: 3000,
            knock_retard: knock.then_some(1.5),
            source_name: "bench".into(),
        }
    }

    fn structured_error(fail: bool) -> Result<Point, AppError> {
        if fail {
            Err(AppError {
                code: "BAD_THING".into(),
                message: "the thing was bad; pass fail=false".into(),
            })
        } else {
            Ok(Point { x: 1, y: -1 })
        }
    }

    fn plain_error(fail: bool) -> Result<String, String> {
        if fail {
            Err("plain failure".into())
        } else {
            Ok("plain success".into())
        }
    }

    fn blocks() -> Vec<Block> {
        vec![
            Block::Text("a caption".into()),
            Block::Image(Image {
                mime_type: "image/png".into(),
                data: vec![0x89, b'P', b'N', b'G'],
            }),
            Block::Resource(Embedded {
                uri: "kitchen://bytes".into(),
                mime_type: "application/octet-stream".into(),
                contents: EmbeddedContents::Bytes(vec![0, 1, 254, 255]),
            }),
            Block::ResourceLink(Link {
                uri: "kitchen://greeting".into(),
                name: "greeting".into(),
                description: Some("A fixed greeting.".into()),
                mime_type: None,
            }),
            Block::Audio(Audio {
                mime_type: "audio/wav".into(),
                data: b"RIFF".to_vec(),
            }),
        ]
    }
}

thread_local! {
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

impl sandbox::Guest for KitchenSink {
    fn read_file(path: String) -> Result<String, String> {
        let path = paths::resolve(&path);
        std::fs::read_to_string(&path).map_err(|e| paths::explain_io_error(&path, &e, false))
    }

    fn write_file(path: String, contents: String) -> Result<(), String> {
        let path = paths::resolve(&path);
        std::fs::write(&path, contents).map_err(|e| paths::explain_io_error(&path, &e, true))
    }

    fn list_dir(path: String) -> Result<Vec<String>, String> {
        let path = paths::resolve(&path);
        let entries =
            std::fs::read_dir(&path).map_err(|e| paths::explain_io_error(&path, &e, false))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn env_var(name: String) -> Option<String> {
        std::env::var(name).ok()
    }

    #[allow(clippy::empty_loop)]
    fn spin() {
        loop {}
    }

    fn allocate(mebibytes: u32) -> u32 {
        let mut chunks = Vec::new();
        for _ in 0..mebibytes {
            let mut chunk = vec![0u8; 1 << 20];
            for page in chunk.iter_mut().step_by(4096) {
                *page = 1;
            }
            chunks.push(chunk);
        }
        chunks.len() as u32
    }

    fn panic(message: String) {
        panic!("{message}");
    }

    fn noisy() -> String {
        println!("this line goes to guest stdout");
        eprintln!("this line goes to guest stderr");
        let _ = std::io::stdout().flush();
        log::write(log::Level::Info, "a log line from kitchen-sink");
        "noisy done".into()
    }

    fn counter() -> u32 {
        CALLS.with(|c| {
            c.set(c.get() + 1);
            c.get()
        })
    }

    fn slow_count(steps: u32, millis_per_step: u32) -> Result<u32, String> {
        for i in 0..steps {
            if !progress::report(i as u64, steps as u64, &format!("step {i}")) {
                return Err(format!("cancelled after {i} steps"));
            }
            let until = std::time::Instant::now()
                + std::time::Duration::from_millis(millis_per_step as u64);
            while std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        Ok(steps)
    }

    fn link_file(target: String, link: String) -> Result<(), String> {
        let (target, link) = (paths::resolve(&target), paths::resolve(&link));
        std::fs::hard_link(&target, &link).map_err(|e| paths::explain_io_error(&link, &e, true))
    }

    fn rename_file(src: String, dst: String) -> Result<(), String> {
        let (src, dst) = (paths::resolve(&src), paths::resolve(&dst));
        std::fs::rename(&src, &dst).map_err(|e| paths::explain_io_error(&dst, &e, true))
    }

    fn symlink_file(target: String, link: String) -> Result<(), String> {
        // The target is stored as given (it may point anywhere); the
        // sandbox must refuse to create it or to follow it.
        let link = paths::resolve(&link);
        #[cfg(not(target_arch = "wasm32"))]
        return Err(format!(
            "symlinks are probed in WebAssembly only ({target} -> {})",
            link.display()
        ));
        // std's symlink is unstable on WASI: call wasi:filesystem directly,
        // through the preopened directory that holds the link.
        #[cfg(target_arch = "wasm32")]
        let (dir, rel) = wasip2::filesystem::preopens::get_directories()
            .into_iter()
            .find_map(|(dir, root)| {
                let rel = link.strip_prefix(&root).ok()?.to_str()?.to_string();
                Some((dir, rel))
            })
            .ok_or_else(|| {
                format!(
                    "`{}` is outside the directories this plugin may use",
                    link.display()
                )
            })?;
        #[cfg(target_arch = "wasm32")]
        dir.symlink_at(&target, &rel).map_err(|e| {
            format!(
                "cannot create the symlink `{}`: {}",
                link.display(),
                e.message()
            )
        })
    }

    fn recurse(depth: u64) -> u64 {
        // black_box keeps the optimizer from turning this into a loop.
        if std::hint::black_box(depth) == 0 {
            0
        } else {
            1 + Self::recurse(depth - 1)
        }
    }

    fn big_result(mebibytes: u32) -> String {
        "x".repeat((mebibytes as usize) << 20)
    }

    fn connect(address: String) -> Result<String, String> {
        std::net::TcpStream::connect(&address)
            .map(|_| format!("connected to {address}"))
            .map_err(|e| format!("{address}: {e}"))
    }
}

impl offers::Guest for KitchenSink {
    fn greeting() -> String {
        "hello from a resource".into()
    }

    fn item_view() -> String {
        "<!doctype html><title>item</title><pre id=item></pre>".into()
    }

    fn show_item(id: String) -> String {
        format!("item {id}")
    }

    fn raw_bytes() -> Vec<u8> {
        vec![0, 1, 254, 255]
    }

    fn item(id: String) -> Result<String, String> {
        if id == "missing" {
            return Err(format!("NO_ITEM: no item `{id}`; try `apple`"));
        }
        Ok(format!("item {id}"))
    }

    fn review(subject: String, focus: Option<String>) -> String {
        match focus {
            Some(f) => format!("Review {subject}, looking first at {f}."),
            None => format!("Review {subject}."),
        }
    }

    fn touch_items(ids: Vec<String>, times: u32) -> String {
        for _ in 0..times {
            for id in &ids {
                benchtop::host::resources::changed(&format!("kitchen://items/{id}"));
            }
            benchtop::host::resources::changed("elsewhere://not-mine");
        }
        format!("touched {} items {times} times", ids.len())
    }

    fn delete_item(
        id: String,
        confirm: Option<bool>,
        with_reason: Option<bool>,
    ) -> Result<String, String> {
        use benchtop::host::elicit::{Answer, ask};
        if confirm == Some(true) {
            return Ok(format!("deleted {id} (confirmed by argument)"));
        }
        let schema = if with_reason == Some(true) {
            r#"{"type":"object","properties":{"reason":{"type":"string","description":"Why"}},"required":["reason"]}"#
        } else {
            ""
        };
        match ask(&format!("Delete item {id}?"), schema) {
            Answer::Accepted(form) => Ok(format!("deleted {id} {form}")),
            Answer::Declined => Ok(format!("kept {id}: the user declined")),
            Answer::Cancelled => Ok(format!("kept {id}: the user cancelled")),
            Answer::Unsupported => Err(format!(
                "cannot ask the user to confirm deleting {id}; call again with confirm: true"
            )),
        }
    }

    fn complete(target: String, argument: String, value: String) -> Vec<String> {
        let pool: &[&str] = match (target.as_str(), argument.as_str()) {
            ("kitchen://items/{id}", "id") => &["apple", "apricot", "banana"],
            ("review", "subject") => &["patch", "plan"],
            _ => &[],
        };
        pool.iter()
            .filter(|v| v.starts_with(&value))
            .map(|v| v.to_string())
            .collect()
    }
}

// Natively (a plain `cargo build` of the workspace) the component export
// names (`benchtop-test:kitchen-sink/types#echo-ints`) are not valid in an
// ELF linker version script: export on wasm only.
#[cfg(target_arch = "wasm32")]
export!(KitchenSink);
