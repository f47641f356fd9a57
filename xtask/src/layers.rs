//! `xtask layers`: the import graph of every crate's modules, refused when
//! it has a loop, and, in the host, when a layer imports one above it.
//!
//! A loop means two files cannot be read, tested or moved apart, and the
//! host is what plugin authors and new maintainers read first: its folders
//! are layers (`wit` → `runtime` → `mcp` → `transport`), each importing only
//! the ones below. The graph is read from the source as text: a module's
//! `crate::…` paths outside comments and outside its `#[cfg(test)]` tail
//! (tests may reach anywhere).

use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The host's layers, bottom up: a module in one may import from the same
/// layer or those before it.
pub const HOST_LAYERS: [&str; 4] = ["wit", "runtime", "mcp", "transport"];

/// What is wrong with one crate's graph.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Modules that import each other, directly or around a loop.
    pub loops: Vec<Vec<String>>,
    /// Imports from a lower layer up: (importer, imported).
    pub upward: Vec<(String, String)>,
}

/// The module path of a source file below `src` (`wit::convert` for
/// `src/wit/convert.rs`, `wit` for `src/wit/mod.rs`, `` for the root).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The modules `text` (a module's source) imports by `crate::` paths,
/// resolved to the longest known module, leaving out comments and the
/// `#[cfg(test)]` tail.
pub fn imports_of(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = code.split("//").next().unwrap_or(code);
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            // `crate::` inside a longer word (`$crate::`) is not a path here.
            let before = rest[..at].chars().last();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let path: Vec<&str> = rest
                .split("::")
                .map(|seg| {
                    let end = seg
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(seg.len());
                    &seg[..end]
                })
                .take_while(|seg| !seg.is_empty())
                .collect();
            let mut best = None;
            for n in 1..=path.len() {
                let candidate = path[..n].join("::");
                if modules.contains(&candidate) {
                    best = Some(candidate);
                }
            }
            if let Some(m) = best {
                out.insert(m);
            }
        }
    }
    out
}

/// The loops of `graph` (its strongly connected components of more than
/// one module), each sorted, by Tarjan's algorithm.
pub fn loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.graph.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut part = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    part.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The findings for the crate whose sources are in `src`; `layers` (bottom
/// up) are the top-level modules that must import only downward.
pub fn check_crate(src: &Path, layers: &[&str]) -> Result<Findings> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let me = module_of(src, file);
        let text = std::fs::read_to_string(file)?;
        let mut deps = imports_of(&text, &modules);
        deps.remove(&me);
        // A parent module declaring its children is not an import.
        deps.retain(|d| !d.starts_with(&format!("{me}::")) || me.is_empty());
        if !me.is_empty() {
            graph.insert(me, deps);
        }
    }
    let layer = |m: &str| {
        let top = m.split("::").next().unwrap_or("");
        layers.iter().position(|l| *l == top)
    };
    let mut upward = Vec::new();
    for (m, deps) in &graph {
        for d in deps {
            if let (Some(a), Some(b)) = (layer(m), layer(d))
                && b > a
            {
                upward.push((m.clone(), d.clone()));
            }
        }
    }
    Ok(Findings {
        loops: loops(&graph),
        upward,
    })
}

/// Checks every crate of the workspace at `root` (the host with its
/// layers, each plugin and shared crate); the report of what failed.
pub fn check_workspace(root: &Path) -> Result<Vec<String>> {
    let mut crates = vec![(root.join("host/src"), &HOST_LAYERS[..])];
    for parent in ["plugins", "crates"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(parent))?
            .filter_map(|e| e.ok().map(|e| e.path().join("src")))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        crates.extend(dirs.into_iter().map(|d| (d, &[][..])));
    }
    let mut report = Vec::new();
    for (src, layers) in crates {
        let found = check_crate(&src, layers)?;
        let name = src
            .parent()
            .and_then(|p| p.strip_prefix(root).ok())
            .unwrap_or(&src)
            .display()
            .to_string();
        for l in &found.loops {
            report.push(format!(
                "{name}: modules import each other in a loop: {} (move what they share into the lowest module that needs it)",
                l.join(", ")
            ));
        }
        for (a, b) in &found.upward {
            report.push(format!(
                "{name}: `{a}` imports `{b}`, a layer above it (layers bottom up: {})",
                layers.join(" → ")
            ));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn imports_are_read_from_code_not_comments_or_tests() {
        let modules = set(&["wit", "wit::convert", "mcp::call", "runtime::plugin"]);
        let text = "use crate::wit::convert::{to_json, FromJson};\n\
                    /// see [`crate::mcp::call`]\n\
                    fn f() { crate::runtime::plugin::Plugin::new(); } // crate::mcp::call\n\
                    #[cfg(test)]\nmod tests { use crate::mcp::call; }\n";
        assert_eq!(
            imports_of(text, &modules),
            set(&["wit::convert", "runtime::plugin"])
        );
    }

    #[test]
    fn a_loop_is_found_and_a_chain_is_not() {
        let g = |edges: &[(&str, &str)]| {
            let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (a, b) in edges {
                g.entry(a.to_string()).or_default().insert(b.to_string());
                g.entry(b.to_string()).or_default();
            }
            g
        };
        assert!(loops(&g(&[("a", "b"), ("b", "c")])).is_empty());
        assert_eq!(
            loops(&g(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
            vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
        );
    }

    /// The workspace itself: no loops anywhere, and the host's layers
    /// import only downward. A new loop fails `make test` here.
    #[test]
    fn the_workspace_has_no_loops_and_the_host_no_upward_imports() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let report = check_workspace(root).unwrap();
        assert!(report.is_empty(), "{}", report.join("\n"));
    }
}
