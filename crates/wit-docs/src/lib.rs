//! WIT doc comments carried inside a component.
//!
//! The component toolchain (wit-bindgen → `wasm-component-ld`) drops `///`
//! doc comments, yet benchtop turns them into tool descriptions. So the build
//! [`inject`]s them as a custom section and the host [`read`]s them back.
//!
//! The section holds wit-parser's `package-docs` format (one version byte,
//! then JSON) for the plugin's own WIT package, under the name
//! [`SECTION_NAME`]. It is not named `package-docs`: a section of that name
//! must describe the component's synthetic root package, and wit-parser's
//! decoder (and so `wasm-tools component wit` and jco) rejects one that
//! describes another package.

use anyhow::{Context, Result, bail};
use std::path::Path;
use wit_parser::{PackageMetadata, Resolve, WorldItem};

/// Name of the custom section.
pub const SECTION_NAME: &str = "benchtop-package-docs";

/// Returns `wasm` with the docs of the WIT package in `wit_dir` as its docs
/// section (replacing any earlier one). Fails when an exported function has
/// no doc comment, since its tool would have no description.
pub fn inject(wit_dir: &Path, wasm: &[u8]) -> Result<Vec<u8>> {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_dir(wit_dir)
        .with_context(|| format!("parsing WIT in {}", wit_dir.display()))?;
    check_documented(&resolve, pkg)?;
    let docs = PackageMetadata::extract(&resolve, pkg).encode()?;
    let mut out = Vec::with_capacity(wasm.len() + docs.len() + 64);
    for section in sections(wasm)? {
        if section.custom_name() != Some(SECTION_NAME) {
            out.extend_from_slice(section.bytes);
        }
    }
    push_custom_section(&mut out, SECTION_NAME, &docs);
    Ok(out)
}

/// The docs section of a component, as JSON, or `None` when it has none.
pub fn read(wasm: &[u8]) -> Result<Option<serde_json::Value>> {
    let mut found = None;
    for section in sections(wasm)? {
        if section.custom_name() != Some(SECTION_NAME) {
            continue;
        }
        if found.is_some() {
            bail!("the component has more than one `{SECTION_NAME}` section");
        }
        let data = section.custom_data().context("malformed docs section")?;
        let (version, json) = data.split_first().context("the docs section is empty")?;
        if *version > 1 {
            bail!("docs section version {version} is not supported (expected 0 or 1)");
        }
        found = Some(serde_json::from_slice(json).context("the docs section is not JSON")?);
    }
    Ok(found)
}

/// Appends `from`'s docs section, if it has one, to the module or
/// component `to` (custom sections may close either), so a smaller binary
/// carrying the same WIT carries the same docs.
pub fn copy(from: &[u8], to: &mut Vec<u8>) -> Result<()> {
    for section in sections(from)? {
        if section.custom_name() == Some(SECTION_NAME) {
            to.extend_from_slice(section.bytes);
        }
    }
    Ok(())
}

fn check_documented(resolve: &Resolve, pkg: wit_parser::PackageId) -> Result<()> {
    let mut missing = Vec::new();
    for &world in resolve.packages[pkg].worlds.values() {
        for item in resolve.worlds[world].exports.values() {
            match item {
                WorldItem::Function(f) if f.docs.contents.is_none() => missing.push(f.name.clone()),
                WorldItem::Interface { id, .. } => {
                    let iface = &resolve.interfaces[*id];
                    if iface.package != Some(pkg) {
                        continue; // hooks such as benchtop:host/tick
                    }
                    for f in iface.functions.values() {
                        if f.docs.contents.is_none() {
                            missing.push(format!(
                                "{}.{}",
                                iface.name.as_deref().unwrap_or("?"),
                                f.name
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "these exported functions have no `///` doc comment, so their tools would have no description: {}",
            missing.join(", ")
        );
    }
    Ok(())
}

/// One top-level section of a module or component, with its framing.
struct Section<'a> {
    id: u8,
    /// The whole section: id, size and contents.
    bytes: &'a [u8],
    /// The contents alone.
    contents: &'a [u8],
}

impl<'a> Section<'a> {
    fn custom_name(&self) -> Option<&'a str> {
        if self.id != 0 {
            return None;
        }
        let mut pos = 0;
        let len = read_leb(self.contents, &mut pos).ok()? as usize;
        std::str::from_utf8(self.contents.get(pos..pos + len)?).ok()
    }

    fn custom_data(&self) -> Option<&'a [u8]> {
        let mut pos = 0;
        let len = read_leb(self.contents, &mut pos).ok()? as usize;
        self.contents.get(pos + len..)
    }
}

/// Splits a binary into its header and top-level sections (the header comes
/// first, as a section with id 0xff). Nested modules stay opaque.
fn sections(wasm: &[u8]) -> Result<Vec<Section<'_>>> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        bail!("not a WebAssembly binary");
    }
    let mut out = vec![Section {
        id: 0xff,
        bytes: &wasm[..8],
        contents: &[],
    }];
    let mut pos = 8;
    while pos < wasm.len() {
        let start = pos;
        let id = wasm[pos];
        pos += 1;
        let size = read_leb(wasm, &mut pos)? as usize;
        let end = pos
            .checked_add(size)
            .filter(|e| *e <= wasm.len())
            .context("truncated section")?;
        out.push(Section {
            id,
            bytes: &wasm[start..end],
            contents: &wasm[pos..end],
        });
        pos = end;
    }
    Ok(out)
}

fn push_custom_section(out: &mut Vec<u8>, name: &str, data: &[u8]) {
    let mut contents = Vec::with_capacity(name.len() + data.len() + 5);
    push_leb(&mut contents, name.len() as u32);
    contents.extend_from_slice(name.as_bytes());
    contents.extend_from_slice(data);
    out.push(0);
    push_leb(out, contents.len() as u32);
    out.extend_from_slice(&contents);
}

fn push_leb(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_leb(bytes: &[u8], pos: &mut usize) -> Result<u32> {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*pos).context("truncated LEB128")?;
        *pos += 1;
        value |= u32::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    bail!("LEB128 too long")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal core module: the header alone.
    const EMPTY_MODULE: &[u8] = b"\0asm\x01\0\0\0";

    fn wit_dir(source: &str) -> tempdir::Dir {
        tempdir::Dir::with_file("p.wit", source)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn with_file(name: &str, text: &str) -> Self {
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let dir = std::env::temp_dir().join(format!("wit-docs-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(name), text).unwrap();
                Dir(dir)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn injected_docs_read_back_and_reinjection_replaces_them() {
        let dir =
            wit_dir("package a:b;\nworld w {\n  /// Says hi.\n  export hi: func() -> string;\n}\n");
        let once = inject(&dir.0, EMPTY_MODULE).unwrap();
        let twice = inject(&dir.0, &once).unwrap();
        assert_eq!(once, twice, "injecting again replaces the section");
        let json = read(&twice).unwrap().expect("a docs section");
        assert!(
            json["worlds"]["w"].to_string().contains("Says hi."),
            "{json}"
        );
        assert!(read(EMPTY_MODULE).unwrap().is_none());
    }

    #[test]
    fn undocumented_exports_are_refused() {
        let dir = wit_dir("package a:c;\nworld w {\n  export hi: func() -> string;\n}\n");
        let err = inject(&dir.0, EMPTY_MODULE).unwrap_err().to_string();
        assert!(err.contains("hi"), "{err}");
    }

    #[test]
    fn leb128_round_trips() {
        for v in [0u32, 1, 127, 128, 300, 1 << 20, u32::MAX] {
            let mut buf = Vec::new();
            push_leb(&mut buf, v);
            let mut pos = 0;
            assert_eq!(read_leb(&buf, &mut pos).unwrap(), v);
            assert_eq!(pos, buf.len());
        }
    }
}
