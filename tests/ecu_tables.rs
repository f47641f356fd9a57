//! End-to-end tests of the ecu-tables plugin through a real MCP client: the
//! bundled sample (samples/ecu) and, in `shared_` tests, every ROM of
//! ../shared/fixtures/ecuflash against its expected JSON.

use e2e::{
    Server, ecu_plugins, field, fixtures, is_error, markdown_rows, only_plugin, repo,
    required_field, samples, text,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

const TOOLS: [&str; 8] = [
    "diff_tables",
    "list_tables",
    "lookup_table",
    "overlay_log",
    "patch_table",
    "propose_patch",
    "read_table",
    "rom_info",
];

fn ecu_samples() -> PathBuf {
    samples("ecu")
}

fn sample_rom() -> String {
    ecu_samples()
        .join("BT000001.bin")
        .to_string_lossy()
        .into_owned()
}

/// A server with only ecu-tables, the given definitions, and the given grants.
struct Ecu {
    server: Server,
    _plugins: TempDir,
}

impl Ecu {
    async fn start(defs: &Path, allow: &[String], workspace: Option<&Path>) -> Ecu {
        let plugins = ecu_plugins();
        let mut args: Vec<String> = vec![
            "--plugins".into(),
            plugins.path().to_string_lossy().into(),
            "--definitions-path".into(),
            defs.to_string_lossy().into(),
        ];
        for a in allow {
            args.extend(["--allow".into(), a.clone()]);
        }
        if let Some(ws) = workspace {
            args.extend(["--workspace".into(), ws.to_string_lossy().into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Ecu {
            server: Server::start(&args).await,
            _plugins: plugins,
        }
    }

    /// The sample definitions, samples/ecu read-only, and `rw` read-write.
    async fn sample(rw: Option<&Path>) -> Ecu {
        let mut allow = vec![format!("{}:ro", ecu_samples().display())];
        if let Some(rw) = rw {
            allow.push(format!("{}:rw", rw.display()));
        }
        Ecu::start(&ecu_samples().join("definitions"), &allow, rw).await
    }

    /// Calls a tool that must succeed; returns its text.
    async fn ok(&self, tool: &str, args: Value) -> String {
        text(&self.server.ok(tool, args).await)
    }

    /// Calls a tool that must fail; returns the error text.
    async fn err(&self, tool: &str, args: Value) -> String {
        text(&self.server.err(tool, args).await)
    }
}

/// A writable temp dir holding a copy of `rom` under `name`.
fn copy_rom(rom: &Path, name: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().canonicalize().unwrap().join(name);
    std::fs::copy(rom, &to).unwrap();
    let mut perms = std::fs::metadata(&to).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&to, perms).unwrap();
    (dir, to)
}

/// The mitsucan rule, computed independently of the plugin: the big-endian
/// 32-bit words of the image sum to 0x5AA55AA5.
fn mitsucan_valid(image: &[u8]) -> bool {
    let sum = image.chunks_exact(4).fold(0u32, |s, w| {
        s.wrapping_add(u32::from_be_bytes(w.try_into().unwrap()))
    });
    sum == 0x5AA5_5AA5
}

/// A frontmatter value without YAML quotes.
/// A frontmatter value without the quotes YAML puts around some strings.
fn val(doc: &str, key: &str) -> String {
    required_field(doc, key).trim_matches('"').to_owned()
}

/// A read_table/patch_table grid: column labels, row labels, cells
/// (`cells[row][col]` in the fixture convention: a one-axis table has one
/// row per element and one column; a scalar is 1×1).
#[derive(Debug)]
struct Grid {
    col_labels: Vec<String>,
    row_labels: Vec<String>,
    cells: Vec<Vec<String>>,
}

fn grid(doc: &str) -> Grid {
    let rows = markdown_rows(doc);
    let (header, body) = rows
        .split_first()
        .unwrap_or_else(|| panic!("no table in\n{doc}"));
    if header[0] == "Y\\X" {
        Grid {
            col_labels: header[1..].to_vec(),
            row_labels: body.iter().map(|r| r[0].clone()).collect(),
            cells: body.iter().map(|r| r[1..].to_vec()).collect(),
        }
    } else if header.len() == 2 {
        Grid {
            col_labels: vec![],
            row_labels: body.iter().map(|r| r[0].clone()).collect(),
            cells: body.iter().map(|r| vec![r[1].clone()]).collect(),
        }
    } else {
        Grid {
            col_labels: vec![],
            row_labels: vec![],
            cells: body.to_vec(),
        }
    }
}

/// Whether `shown` (printed with `format`) is `want` to the printed precision.
fn shows(shown: &str, want: f64, format: &str) -> bool {
    if format.ends_with('x') || format.ends_with('X') {
        return u64::from_str_radix(shown, 16).ok() == Some(want as u64);
    }
    let Ok(got) = shown.parse::<f64>() else {
        return false;
    };
    let decimals = shown.split_once('.').map_or(0, |(_, d)| d.len());
    let half_unit = 0.5 * 10f64.powi(-(decimals as i32));
    (got - want).abs() <= half_unit * (1.0 + 1e-9) + 1e-9 * want.abs()
}

fn check_cells(g: &Grid, values: &Value, format: &str, ctx: &str) {
    let want = values.as_array().unwrap();
    assert_eq!(g.cells.len(), want.len(), "{ctx}: rows");
    for (r, row) in want.iter().enumerate() {
        let row = row.as_array().unwrap();
        assert_eq!(g.cells[r].len(), row.len(), "{ctx}: columns of row {r}");
        for (c, v) in row.iter().enumerate() {
            let v = v.as_f64().unwrap();
            assert!(
                shows(&g.cells[r][c], v, format),
                "{ctx} [{r},{c}]: shows {} for {v}",
                g.cells[r][c]
            );
        }
    }
}

fn check_axis(labels: &[String], axis: &Value, ctx: &str) {
    if axis.is_null() {
        return;
    }
    if axis["static"].as_bool().unwrap() {
        let want: Vec<&str> = axis["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(labels, want, "{ctx}: static axis labels");
    } else {
        let want = axis["values"].as_array().unwrap();
        assert_eq!(labels.len(), want.len(), "{ctx}: axis length");
        for (i, (l, v)) in labels.iter().zip(want).enumerate() {
            let v = v.as_f64().unwrap();
            assert!(shows(l, v, ""), "{ctx}: axis[{i}] shows {l} for {v}");
        }
    }
}

// ---------------------------------------------------------------- samples

#[tokio::test]
async fn serves_exactly_the_ecu_tools_with_annotations() {
    let ecu = Ecu::sample(None).await;
    let tools = ecu.server.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOLS);
    let patch = tools.iter().find(|t| t.name == "patch_table").unwrap();
    assert_eq!(
        patch.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
    let read = tools.iter().find(|t| t.name == "read_table").unwrap();
    assert_eq!(
        read.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    // The table view (MCP Apps) on the tools that show a table.
    for t in &tools {
        let ui = t
            .meta
            .as_ref()
            .map(|m| serde_json::to_value(m).unwrap()["ui"]["resourceUri"].clone());
        let want = ["read_table", "patch_table", "overlay_log", "propose_patch"]
            .contains(&t.name.as_ref())
            .then(|| json!("ui://benchtop/ecu-table"));
        assert_eq!(ui, want, "{}", t.name);
    }
    let schema = Value::Object((*patch.input_schema).clone());
    assert_eq!(
        schema["properties"]["op"]["enum"],
        json!(["set", "add", "multiply", "clamp", "smooth"])
    );
    ecu.server.stop().await;
}

// ------------------------------------------------------------- overlay_log

/// Samples placed by hand on Ignition Timing Base Map (Load 20..200 % in
/// steps of 20 across, RPM ..4000, 4500, 5000, 6000, 7000 down): on
/// breakpoints (4000/100 twice), RPM midway 4000..4500 (→ 4500), Load
/// midway 80..100 (→ 100), RPM exactly half a step past 7000 (outside),
/// Load exactly half a step past 200 (outside), on 2000/20.
const DRIVE: &str = "Time,RPM,Load,Knock\n\
0.0,4000,100,2\n0.1,4000,100,4\n0.2,4250,100,1\n0.3,4000,90,3\n\
0.4,7500,100,9\n0.5,4000,210,0\n0.6,2000,20,0\n";

/// A RomRaider log (semicolons, decimal commas, units in the names): two
/// samples on 4000/100.
const ROMRAIDER: &str = "Time (msec);Engine Speed (rpm);Engine Load (%);Knock Count (count)\n\
0;4000;100,0;0\n20;4000;100,0;1\n";

/// The section of an overlay answer under `## heading`.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("## {heading}\n"))
        .unwrap_or_else(|| panic!("no `## {heading}` in\n{doc}"));
    let rest = &doc[start + heading.len() + 4..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// The cell at row label `y`, column label `x` of a grid.
fn at(g: &Grid, y: &str, x: &str) -> String {
    let c = g
        .col_labels
        .iter()
        .position(|l| l == x)
        .unwrap_or_else(|| panic!("{x}: {g:?}"));
    let r = g
        .row_labels
        .iter()
        .position(|l| l == y)
        .unwrap_or_else(|| panic!("{y}: {g:?}"));
    g.cells[r][c].clone()
}

#[tokio::test]
async fn overlay_log_counts_and_summarises_hand_placed_samples() {
    let logs = tempfile::tempdir().unwrap();
    std::fs::write(logs.path().join("drive.csv"), DRIVE).unwrap();
    std::fs::write(
        logs.path().join("romraiderlog_20260221_180000.csv"),
        ROMRAIDER,
    )
    .unwrap();
    std::fs::write(
        logs.path().join("nospeed.csv"),
        "Time,Speed,Load\n0,50,60\n",
    )
    .unwrap();
    let plugins = ecu_plugins();
    let defs = ecu_samples().join("definitions");
    let args = [
        "--plugins",
        &plugins.path().to_string_lossy(),
        "--definitions-path",
        &defs.to_string_lossy(),
        "--logs-dir",
        &logs.path().to_string_lossy(),
        "--allow",
        &format!("{}:ro", ecu_samples().display()),
    ]
    .map(|a| a.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ecu = Ecu {
        server: Server::start(&args).await,
        _plugins: plugins,
    };
    let tools = ecu.server.tools().await;
    let overlay = tools.iter().find(|t| t.name == "overlay_log").unwrap();
    assert_eq!(
        overlay.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    let rom = sample_rom();
    let table = "Ignition Timing Base Map";

    let out = ecu
        .ok(
            "overlay_log",
            json!({"rom": rom, "table": table, "file": "drive.csv", "channels": ["Knock"]}),
        )
        .await;
    for (k, v) in [
        ("samples", "7"),
        ("in_cells", "5"),
        ("outside", "2"),
        ("x_channel", "Load (same name as the axis)"),
        ("y_channel", "RPM (same name as the axis)"),
    ] {
        assert_eq!(val(&out, k), v, "{out}");
    }
    assert!(val(&out, "cells").contains("midway between neighbouring breakpoints"));
    assert_eq!(
        val(&out, "outside_by_axis"),
        r#"["Load (%) at or above 210: 1", "RPM (rpm) at or above 7500: 1"]"#
    );
    let n = grid(section(&out, "Samples per cell"));
    assert_eq!(at(&n, "4000", "100"), "3");
    assert_eq!(at(&n, "4500", "100"), "1");
    assert_eq!(at(&n, "2000", "20"), "1");
    assert_eq!(at(&n, "7000", "100"), "0");
    // Knock at 4000/100: 2, 4, 3.
    assert_eq!(
        at(&grid(section(&out, "Knock: mean")), "4000", "100"),
        "3.0"
    );
    assert_eq!(at(&grid(section(&out, "Knock: min")), "4000", "100"), "2");
    assert_eq!(at(&grid(section(&out, "Knock: max")), "4000", "100"), "4");
    assert_eq!(at(&grid(section(&out, "Knock: p90")), "4000", "100"), "3.8");
    assert_eq!(at(&grid(section(&out, "Knock: mean")), "2000", "100"), "-");

    // A filter in query_logs' language, and another percentile.
    let out = ecu
        .ok(
            "overlay_log",
            json!({"rom": rom, "table": table, "file": "drive.csv", "filter": "Knock >= 3",
                   "channels": ["Knock"], "stats": ["mean", "percentile"], "percentile": 50}),
        )
        .await;
    assert_eq!(
        (val(&out, "selected"), val(&out, "in_cells")),
        ("3".into(), "2".into())
    );
    assert_eq!(
        at(&grid(section(&out, "Knock: mean")), "4000", "100"),
        "3.5"
    );
    assert_eq!(at(&grid(section(&out, "Knock: p50")), "4000", "100"), "3.5");
    assert!(!out.contains("Knock: max"), "{out}");

    // Every log: the RomRaider names match by synonym; the log without a
    // speed channel is skipped, saying why.
    let out = ecu
        .ok("overlay_log", json!({"rom": rom, "table": table}))
        .await;
    assert_eq!(val(&out, "in_cells"), "7", "{out}");
    assert_eq!(
        at(&grid(section(&out, "Samples per cell")), "4000", "100"),
        "5"
    );
    assert!(
        out.contains("Engine Speed (rpm) (`Engine Speed (rpm)` is a name for engine speed)"),
        "{out}"
    );
    assert!(
        out.contains("logs skipped: 1") && out.contains("nospeed.csv"),
        "{out}"
    );

    // One log missing the axis channel: the error lists its channels; named
    // explicitly, the channel is used.
    let err = ecu
        .err(
            "overlay_log",
            json!({"rom": rom, "table": table, "file": "nospeed.csv"}),
        )
        .await;
    assert!(err.starts_with("UNKNOWN_CHANNEL"), "{err}");
    assert!(
        err.contains("RPM (rpm)") && err.contains("Time, Speed, Load") && err.contains("y_channel"),
        "{err}"
    );
    let out = ecu
        .ok(
            "overlay_log",
            json!({"rom": rom, "table": table, "file": "nospeed.csv", "y_channel": "Speed"}),
        )
        .await;
    assert_eq!(val(&out, "y_channel"), "Speed (given as y_channel)");
    let err = ecu
        .err(
            "overlay_log",
            json!({"rom": rom, "table": table, "filter": "Knock >"}),
        )
        .await;
    assert!(err.starts_with("BAD_FILTER"), "{err}");
    let err = ecu
        .err("overlay_log", json!({"rom": rom, "table": "Boost Target"}))
        .await;
    assert!(err.contains("text labels"), "{err}");
    // read_table by value on the same axis says what read_table can do.
    let err = ecu
        .err(
            "read_table",
            json!({"rom": rom, "table": "Boost Target", "cols_where": "1..2"}),
        )
        .await;
    assert!(
        err.contains("has labels, not values") && !err.contains("overlay_log"),
        "{err}"
    );
    ecu.server.stop().await;
}

#[tokio::test]
async fn rom_info_identifies_the_sample_rom() {
    let ecu = Ecu::sample(None).await;
    let info = ecu.ok("rom_info", json!({"rom": sample_rom()})).await;
    assert_eq!(val(&info, "file"), "BT000001.bin");
    assert_eq!(val(&info, "size_kb"), "1024");
    assert_eq!(
        val(&info, "definition"),
        "BT000001 2024 SAMPLE Sample ECU 5MT"
    );
    assert_eq!(val(&info, "vehicle"), "2024 Benchtop Sample ECU 5MT");
    assert_eq!(val(&info, "ecu_id"), "42540001");
    assert_eq!(val(&info, "checksum_valid"), "true");
    assert_eq!(val(&info, "checksum_algorithm"), "mitsucan");
    assert_eq!(val(&info, "include_chain"), "[benchtopbase, BT000001]");
    // The plugin agrees with an independent checksum computation.
    assert!(mitsucan_valid(&std::fs::read(sample_rom()).unwrap()));
    ecu.server.stop().await;
}

/// Files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Sets `path`'s mtime `secs` seconds into the past: a definition written
/// a while ago, as a kept index only keeps settled files.
fn age(path: &Path, secs: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// The sample definitions copied into a folder of their own (each aged
/// `age_secs` when given), a copy of the sample ROM and a cache directory:
/// what a server keeps there, the next one reads.
struct KeptTree {
    _work: TempDir,
    defs: PathBuf,
    cache: PathBuf,
    roms: PathBuf,
    rom: PathBuf,
    plugins: TempDir,
}

impl KeptTree {
    fn new(age_secs: Option<u64>) -> KeptTree {
        let work = tempfile::tempdir().unwrap();
        let root = work.path().canonicalize().unwrap();
        let (defs, cache, roms) = (root.join("defs"), root.join("cache"), root.join("roms"));
        std::fs::create_dir_all(defs.join("base")).unwrap();
        std::fs::create_dir_all(&roms).unwrap();
        let samples = ecu_samples().join("definitions");
        for from in files_under(&samples) {
            let to = defs.join(from.strip_prefix(&samples).unwrap());
            std::fs::copy(&from, &to).unwrap();
            if let Some(secs) = age_secs {
                age(&to, secs);
            }
        }
        let rom = roms.join("BT000001.bin");
        std::fs::copy(sample_rom(), &rom).unwrap();
        KeptTree {
            _work: work,
            defs,
            cache,
            roms,
            rom,
            plugins: ecu_plugins(),
        }
    }

    async fn start(&self) -> Server {
        let args = [
            "--plugins",
            self.plugins.path().to_str().unwrap(),
            "--cache-dir",
            self.cache.to_str().unwrap(),
            "--definitions-path",
            self.defs.to_str().unwrap(),
            "--allow",
            &format!("{}:ro", self.defs.display()),
            "--allow",
            &format!("{}:rw", self.roms.display()),
        ];
        Server::start(&args).await
    }

    /// rom_info of the ROM on a fresh server.
    async fn rom_info(&self) -> String {
        let server = self.start().await;
        let answer = text(&server.ok("rom_info", json!({"rom": &self.rom})).await);
        server.stop().await;
        answer
    }

    /// The sample's own definition file in the folder.
    fn definition(&self) -> PathBuf {
        files_under(&self.defs)
            .into_iter()
            .find(|p| p.to_string_lossy().contains("BT000001"))
            .unwrap()
    }
}

#[tokio::test]
async fn a_file_read_before_its_mtime_settled_is_not_kept() {
    // What a server read of a file less than two seconds after its mtime
    // is not kept, even when the folder is kept later: a rewrite within a
    // coarse file-system clock's tick keeps the stamp. The server is
    // started and ecu-tables loaded first (a call that fails before any
    // definition is read), then the mtime is set eight seconds ahead, so
    // even a loaded machine reads the file before its mtime has settled.
    let tree = KeptTree::new(None);
    let definition = tree.definition();
    let server = tree.start().await;
    server
        .err("rom_info", json!({"rom": tree.roms.join("missing.bin")}))
        .await;
    let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(8);
    let set_mtime = |path: &Path| {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(ahead)
            .unwrap()
    };
    set_mtime(&definition);
    let call = json!({"rom": &tree.rom});
    let first = text(&server.ok("rom_info", call.clone()).await);
    assert!(val(&first, "definition").starts_with("BT000001"), "{first}");
    // Once that mtime has settled, a new file makes the server keep the
    // folder again.
    while std::time::SystemTime::now() < ahead + std::time::Duration::from_millis(2500) {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    std::fs::write(tree.defs.join("notes.xml"), "<rom></rom>\n").unwrap();
    text(&server.ok("rom_info", call).await);
    server.stop().await;
    // Rewritten with size and mtime kept, as within one clock tick.
    let text_before = std::fs::read_to_string(&definition).unwrap();
    let other_id = text_before.replace("<internalidhex>42540001<", "<internalidhex>42540002<");
    assert_eq!(other_id.len(), text_before.len());
    std::fs::write(&definition, other_id).unwrap();
    set_mtime(&definition);
    let after = tree.rom_info().await;
    assert!(
        !val(&after, "definition").starts_with("BT000001"),
        "a fresh server used what was read of the file before its mtime settled: {after}"
    );
}

#[tokio::test]
async fn a_fresh_server_reads_the_kept_definitions_index_and_sees_edits() {
    let tree = KeptTree::new(Some(3600));
    let cache = &tree.cache;
    let start = || tree.start();
    let rom_info =
        async |server: &Server| text(&server.ok("rom_info", json!({"rom": &tree.rom})).await);

    let first = start().await;
    let answer = rom_info(&first).await;
    assert_eq!(val(&answer, "vehicle"), "2024 Benchtop Sample ECU 5MT");
    first.stop().await;
    let kept_dir = cache.join("plugin-data/ecu-tables");
    let kept = files_under(&kept_dir);
    let of_kind = |ext: &str| -> Vec<PathBuf> {
        kept.iter()
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .cloned()
            .collect()
    };
    let index = of_kind("idx");
    assert_eq!(index.len(), 1, "one index for one folder: {kept:?}");
    // And the definition the family resolved, kept by what it was given.
    assert_eq!(of_kind("bin").len(), 1, "one resolved definition: {kept:?}");
    let index = index[0].clone();

    // A fresh server answers the same from the index.
    let second = start().await;
    assert_eq!(rom_info(&second).await, answer);
    second.stop().await;

    // A definition edited in place, its size unchanged, is read again.
    let definition = tree.definition();
    let text_before = std::fs::read_to_string(&definition).unwrap();
    let edited = text_before.replace("<model>Sample ECU</model>", "<model>Edited ECU</model>");
    assert_eq!(edited.len(), text_before.len());
    std::fs::write(&definition, edited).unwrap();
    age(&definition, 1800);
    let third = start().await;
    let after_edit = rom_info(&third).await;
    assert_eq!(val(&after_edit, "vehicle"), "2024 Benchtop Edited ECU 5MT");
    third.stop().await;

    // A damaged index, or resolved definition, is not believed: the
    // answer is the folder's, and both are written again (the definition
    // as edited is the newest entry; the one from before the edit is no
    // longer asked for).
    let newest = |ext: &str| {
        files_under(&kept_dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
            .unwrap()
    };
    let current = [index.clone(), newest("bin")];
    let mut damaged = Vec::new();
    for file in files_under(&kept_dir) {
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        damaged.push((file, bytes[..bytes.len() / 2].to_vec()));
    }
    let fourth = start().await;
    assert_eq!(rom_info(&fourth).await, after_edit);
    fourth.stop().await;
    for (file, half) in damaged.iter().filter(|(f, _)| current.contains(f)) {
        let now = std::fs::read(file).unwrap();
        assert_ne!(&now, half, "{} was not written again", file.display());
    }
}

#[tokio::test]
async fn workspace_relative_rom_paths_resolve() {
    // The repository as the workspace: the README's `rom: samples/ecu/BT000001.bin`.
    let ecu = Ecu::start(
        &ecu_samples().join("definitions"),
        &[format!("{}:ro", ecu_samples().display())],
        Some(&repo()),
    )
    .await;
    let info = ecu
        .ok("rom_info", json!({"rom": "samples/ecu/BT000001.bin"}))
        .await;
    assert_eq!(
        val(&info, "definition"),
        "BT000001 2024 SAMPLE Sample ECU 5MT"
    );
    ecu.server.stop().await;
}

#[tokio::test]
async fn list_tables_lists_filters_and_pages() {
    let ecu = Ecu::sample(None).await;
    let list = ecu.ok("list_tables", json!({"rom": sample_rom()})).await;
    assert_eq!(val(&list, "table_count"), "8");
    let rows = markdown_rows(&list);
    assert_eq!(rows[0], ["Name", "Category", "Dimensions", "Unit"]);
    let table: Vec<[&str; 4]> = rows[1..]
        .iter()
        .map(|r| [r[0].as_str(), r[1].as_str(), r[2].as_str(), r[3].as_str()])
        .collect();
    assert_eq!(
        table,
        [
            ["Ignition Timing Base Map", "Timing", "10x12", "degrees"],
            ["Fuel Map", "Fuel", "10x12", "AFR"],
            ["Boost Target", "Boost", "5x8", "psi"],
            ["Idle Speed Target", "Idle", "1x8", "rpm"],
            ["Rev Limiter", "Limits", "1x2", "rpm"],
            ["Injector Scaling", "Fuel", "1x1", "cc/min"],
            ["Radiator Fan On Temperature", "Cooling", "1x1", "C"],
            ["Launch Control", "Misc", "1x1", ""],
        ]
    );
    // Category filter is case-insensitive.
    let fuel = ecu
        .ok(
            "list_tables",
            json!({"rom": sample_rom(), "category": "fUEL"}),
        )
        .await;
    assert_eq!(val(&fuel, "table_count"), "2");
    let names: Vec<String> = markdown_rows(&fuel)[1..]
        .iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(names, ["Fuel Map", "Injector Scaling"]);
    let search = ecu
        .ok("list_tables", json!({"rom": sample_rom(), "search": "map"}))
        .await;
    let names: Vec<String> = markdown_rows(&search)[1..]
        .iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(names, ["Ignition Timing Base Map", "Fuel Map"]);
    let paged = ecu
        .ok(
            "list_tables",
            json!({"rom": sample_rom(), "offset": 2, "limit": 3}),
        )
        .await;
    assert_eq!(val(&paged, "shown"), "2-5 of 8");
    assert!(paged.contains("offset=5"), "{paged}");
    let names: Vec<String> = markdown_rows(&paged)[1..]
        .iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(names, ["Boost Target", "Idle Speed Target", "Rev Limiter"]);
    ecu.server.stop().await;
}

#[tokio::test]
async fn read_table_shows_physical_values_with_axes() {
    let ecu = Ecu::sample(None).await;
    let rom = sample_rom();
    let timing = ecu
        .ok(
            "read_table",
            json!({"rom": rom, "table": "Ignition Timing Base Map"}),
        )
        .await;
    assert_eq!(val(&timing, "dimensions"), "10x12");
    assert_eq!(val(&timing, "x_axis"), "Load (%)");
    assert_eq!(val(&timing, "y_axis"), "RPM (rpm)");
    let g = grid(&timing);
    assert_eq!(
        g.col_labels,
        [
            "20", "40", "60", "80", "100", "120", "140", "160", "180", "200"
        ]
    );
    assert_eq!(g.row_labels.first().map(String::as_str), Some("801"));
    assert_eq!(g.row_labels.last().map(String::as_str), Some("7000"));
    assert_eq!((g.cells.len(), g.cells[0].len()), (12, 10));
    assert_eq!(g.cells[0][0], "10.5");
    assert_eq!(g.cells[11][0], "26.0");
    assert_eq!(g.cells[11][9], "11.0");
    // The child definition overrides the coolant axis: 8 breakpoints, not 7.
    let idle = grid(
        &ecu.ok(
            "read_table",
            json!({"rom": rom, "table": "Idle Speed Target"}),
        )
        .await,
    );
    assert_eq!(
        idle.row_labels,
        ["-20", "-10", "0", "10", "20", "40", "60", "80"]
    );
    assert_eq!(idle.cells[0], ["1398"]);
    // Static axis, little-endian int16 scalar, bloblist switch.
    let rev = grid(
        &ecu.ok("read_table", json!({"rom": rom, "table": "Rev Limiter"}))
            .await,
    );
    assert_eq!(rev.row_labels, ["Rev Limiter ON", "Rev Limiter OFF"]);
    assert_eq!(rev.cells, [["7003"], ["6800"]]);
    let fan = grid(
        &ecu.ok(
            "read_table",
            json!({"rom": rom, "table": "Radiator Fan On Temperature"}),
        )
        .await,
    );
    assert_eq!(fan.cells, [["95.5"]]);
    let launch = ecu
        .ok("read_table", json!({"rom": rom, "table": "Launch Control"}))
        .await;
    assert_eq!(val(&launch, "choices"), "[disabled, enabled]");
    assert_eq!(grid(&launch).cells, [["disabled"]]);
    // A window of a table.
    let window = ecu
        .ok("read_table", json!({"rom": rom, "table": "Fuel Map", "row_start": 10, "row_count": 5, "col_start": 8}))
        .await;
    assert_eq!(val(&window, "first_row"), "10");
    assert_eq!(val(&window, "first_col"), "8");
    let w = grid(&window);
    assert_eq!((w.cells.len(), w.cells[0].len()), (2, 2));
    assert!(
        window.contains("showing rows 10-11 of 12 and columns 8-9 of 10"),
        "{window}"
    );
    // Cells by axis values: RPM 3000..4500 are rows 5-8, Load 100 column 4.
    let by_value = ecu
        .ok(
            "read_table",
            json!({"rom": rom, "table": "Ignition Timing Base Map",
                   "rows_where": "3000..4500", "cols_where": "100"}),
        )
        .await;
    let g = grid(&by_value);
    assert_eq!(g.row_labels, ["3000", "3500", "4000", "4500"]);
    assert_eq!(g.col_labels, ["100"]);
    assert_eq!(
        val(&by_value, "rows_where"),
        "3000..4500 (RPM (rpm) → rows 5-8)"
    );
    let err = ecu
        .err(
            "read_table",
            json!({"rom": rom, "table": "Fuel Map", "rows_where": "4500..3000"}),
        )
        .await;
    assert!(err.contains("write the lower value first"), "{err}");
    ecu.server.stop().await;
}

#[tokio::test]
async fn patch_table_on_a_copy_keeps_the_checksum_valid_and_diff_sees_it() {
    let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "BT000001.bin");
    let ecu = Ecu::sample(Some(dir.path())).await;
    let rom_s = rom.to_string_lossy().into_owned();
    let out = ecu
        .ok("patch_table", json!({"rom": rom_s, "table": "Ignition Timing Base Map", "op": "add", "value": -1.5, "row": 11}))
        .await;
    assert_eq!(val(&out, "operation"), "add -1.5 on row 11");
    assert_eq!(val(&out, "cells_changed"), "10");
    assert_eq!(val(&out, "checksum_valid"), "true");
    let g = grid(&out);
    assert_eq!(g.cells[11][0], "24.5");
    assert_eq!(g.cells[11][9], "9.5");
    assert_eq!(g.cells[10][0], "23.5", "other rows untouched");
    // On disk: the checksum rule holds, and a fresh read sees the new values.
    let image = std::fs::read(&rom).unwrap();
    assert!(mitsucan_valid(&image), "checksum invalid after the patch");
    assert_ne!(image, std::fs::read(sample_rom()).unwrap());
    let again = grid(
        &ecu.ok(
            "read_table",
            json!({"rom": rom_s, "table": "Ignition Timing Base Map"}),
        )
        .await,
    );
    assert_eq!(again.cells[11][0], "24.5");
    let info = ecu.ok("rom_info", json!({"rom": rom_s})).await;
    assert_eq!(val(&info, "checksum_valid"), "true");

    // Clamp a column, set a little-endian scalar, choose a switch option.
    let out = ecu
        .ok("patch_table", json!({"rom": rom_s, "table": "Boost Target", "op": "clamp", "min": 1.0, "max": 15.0, "col": 0}))
        .await;
    let g = grid(&out);
    assert_eq!(g.cells[0][0], "1.00");
    assert_eq!(g.cells[7][0], "15.00");
    assert_eq!(g.cells[7][1], "18.00", "other columns untouched");
    let fan = ecu
        .ok("patch_table", json!({"rom": rom_s, "table": "Radiator Fan On Temperature", "op": "set", "value": -12.3}))
        .await;
    assert_eq!(grid(&fan).cells, [["-12.3"]]);
    let launch = ecu
        .ok(
            "patch_table",
            json!({"rom": rom_s, "table": "Launch Control", "op": "set", "choice": "enabled"}),
        )
        .await;
    assert_eq!(grid(&launch).cells, [["enabled"]]);
    assert!(mitsucan_valid(&std::fs::read(&rom).unwrap()));
    // Nothing but the ROM is left in the directory (atomic write, no temp file).
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["BT000001.bin"]);

    // diff_tables: the summary, then one table cell by cell.
    let diff = ecu
        .ok("diff_tables", json!({"rom": sample_rom(), "other": rom_s}))
        .await;
    assert_eq!(val(&diff, "tables_compared"), "8");
    assert_eq!(val(&diff, "tables_differing"), "4");
    for t in [
        "Ignition Timing Base Map",
        "Boost Target",
        "Radiator Fan On Temperature",
        "Launch Control",
    ] {
        assert!(diff.contains(t), "{t} missing from\n{diff}");
    }
    assert!(!diff.contains("Fuel Map"), "{diff}");
    let cells = ecu
        .ok(
            "diff_tables",
            json!({"rom": sample_rom(), "other": rom_s, "table": "Ignition Timing Base Map"}),
        )
        .await;
    assert_eq!(val(&cells, "cells_changed"), "10");
    let same = ecu
        .ok(
            "diff_tables",
            json!({"rom": sample_rom(), "other": sample_rom()}),
        )
        .await;
    assert_eq!(val(&same, "tables_differing"), "0");
    ecu.server.stop().await;
}

#[tokio::test]
async fn diff_tables_and_checksum_see_a_hand_edited_copy() {
    // Edit two cells of the timing map by hand: uint8, raw = (deg + 10) * 2,
    // swapxy (rows vary fastest): cell [row][col] at 0x51000 + col * 12 + row.
    let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "edited.bin");
    let mut image = std::fs::read(&rom).unwrap();
    assert_eq!(
        (image[0x51000 + 11], image[0x51000 + 9 * 12 + 11]),
        (72, 42),
        "26.0 and 11.0"
    );
    image[0x51000 + 11] = 69; // 24.5
    image[0x51000 + 9 * 12 + 11] = 39; // 9.5
    std::fs::write(&rom, &image).unwrap();
    let ecu = Ecu::sample(Some(dir.path())).await;
    // The checksum no longer holds, and rom_info says so.
    let info = ecu.ok("rom_info", json!({"rom": rom})).await;
    assert_eq!(val(&info, "checksum_valid"), "false");
    let g = grid(
        &ecu.ok(
            "read_table",
            json!({"rom": rom, "table": "Ignition Timing Base Map"}),
        )
        .await,
    );
    assert_eq!(
        (g.cells[11][0].as_str(), g.cells[11][9].as_str()),
        ("24.5", "9.5")
    );
    let diff = ecu
        .ok("diff_tables", json!({"rom": sample_rom(), "other": rom}))
        .await;
    assert_eq!(val(&diff, "tables_compared"), "8");
    assert_eq!(val(&diff, "tables_differing"), "1");
    let rows = markdown_rows(&diff);
    assert_eq!(
        rows[0],
        ["Table", "Category", "Cells changed", "Max |delta|"]
    );
    assert_eq!(rows[1][..3], ["Ignition Timing Base Map", "Timing", "2"]);
    assert_eq!(rows[1][3].trim_start_matches('-'), "1.5");
    let cells = ecu
        .ok(
            "diff_tables",
            json!({"rom": sample_rom(), "other": rom, "table": "Ignition Timing Base Map"}),
        )
        .await;
    assert_eq!(val(&cells, "cells_changed"), "2");
    let rows = markdown_rows(&cells);
    assert_eq!(rows[0], ["Row", "Col", "Y", "X", "ROM", "Other", "Delta"]);
    assert_eq!(rows[1], ["11", "0", "7000", "20", "26.0", "24.5", "-1.5"]);
    assert_eq!(rows[2], ["11", "9", "7000", "200", "11.0", "9.5", "-1.5"]);
    // Fix the correction word at 0xBFFF0 by hand: rom_info agrees again.
    image[0xBFFF0..0xBFFF4].fill(0);
    let rest = image.chunks_exact(4).fold(0u32, |s, w| {
        s.wrapping_add(u32::from_be_bytes(w.try_into().unwrap()))
    });
    image[0xBFFF0..0xBFFF4].copy_from_slice(&0x5AA5_5AA5u32.wrapping_sub(rest).to_be_bytes());
    std::fs::write(&rom, &image).unwrap();
    let info = ecu.ok("rom_info", json!({"rom": rom})).await;
    assert_eq!(val(&info, "checksum_valid"), "true");
    ecu.server.stop().await;
}

#[tokio::test]
async fn unknown_roms_and_tables_get_errors_with_suggestions() {
    let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "BT000001.bin");
    let ecu = Ecu::sample(Some(dir.path())).await;
    let rom_s = rom.to_string_lossy().into_owned();
    let before = std::fs::read(&rom).unwrap();
    let e = ecu
        .err("read_table", json!({"rom": rom_s, "table": "Fuel Mapp"}))
        .await;
    assert!(
        e.contains("no table named `Fuel Mapp`") && e.contains("Did you mean: Fuel Map"),
        "{e}"
    );
    let e = ecu
        .err(
            "patch_table",
            json!({"rom": rom_s, "table": "Timing Map", "op": "add", "value": 1.0}),
        )
        .await;
    assert!(e.contains("Did you mean: Ignition Timing Base Map"), "{e}");
    let missing = dir.path().canonicalize().unwrap().join("nope.bin");
    let e = ecu.err("rom_info", json!({"rom": missing})).await;
    assert!(
        e.contains(&format!(
            "cannot read ROM: `{}`: no such file",
            missing.display()
        )),
        "{e}"
    );
    // Argument problems are refused before anything is written.
    let cases = [
        (
            json!({"op": "set", "table": "Fuel Map"}),
            "op=set needs `value`",
        ),
        (
            json!({"op": "clamp", "table": "Fuel Map", "min": 1.0}),
            "needs both `min` and `max`",
        ),
        (
            json!({"op": "set", "table": "Fuel Map", "value": 0.0}),
            "cannot represent 0",
        ),
        (
            json!({"op": "smooth", "table": "Injector Scaling"}),
            "is a single value",
        ),
        (
            json!({"op": "set", "table": "Launch Control", "value": 1.0}),
            "choice set to one of: disabled, enabled",
        ),
        (
            json!({"op": "set", "table": "Launch Control", "choice": "maybe"}),
            "`maybe` is not a choice",
        ),
        (
            json!({"op": "add", "table": "Fuel Map", "value": 1.0, "row": 12}),
            "row 12 is out of range",
        ),
    ];
    for (mut args, want) in cases {
        args["rom"] = json!(rom_s);
        let e = ecu.err("patch_table", args.clone()).await;
        assert!(e.contains(want), "{args}: {e}\n  wanted: {want}");
    }
    let e = ecu
        .err(
            "read_table",
            json!({"rom": rom_s, "table": "Fuel Map", "row_start": 12}),
        )
        .await;
    assert!(e.contains("row_start 12 is past the last row"), "{e}");
    // Schema violations are caught by the host with the JSON path.
    let e = ecu
        .err(
            "patch_table",
            json!({"rom": rom_s, "table": "Fuel Map", "op": "divide"}),
        )
        .await;
    assert!(
        e.contains("`arguments.op` must be one of [set, add, multiply, clamp, smooth]"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(&rom).unwrap(),
        before,
        "a refused patch wrote bytes"
    );

    // A ROM whose id matches no definition: rom_info says so, table tools refuse.
    let mut unknown = before.clone();
    unknown[0x5002A..0x5002E].copy_from_slice(&[0x42, 0x54, 0x99, 0x99]);
    let unknown_path = dir.path().canonicalize().unwrap().join("unknown.bin");
    std::fs::write(&unknown_path, &unknown).unwrap();
    let info = ecu.ok("rom_info", json!({"rom": unknown_path})).await;
    assert_eq!(val(&info, "definition"), "null");
    assert!(
        info.contains("expects 42540001 at 0x5002A, ROM has 42549999"),
        "{info}"
    );
    let e = ecu.err("list_tables", json!({"rom": unknown_path})).await;
    assert!(e.contains("no definition matches"), "{e}");
    ecu.server.stop().await;
}

#[tokio::test]
async fn a_rom_in_a_read_only_directory_is_not_patched() {
    let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "BT000001.bin");
    // The directory is granted read-only.
    let ecu = Ecu::start(
        &ecu_samples().join("definitions"),
        &[format!("{}:ro", dir.path().display())],
        None,
    )
    .await;
    let before = std::fs::read(&rom).unwrap();
    let e = ecu
        .err(
            "patch_table",
            json!({"rom": rom, "table": "Fuel Map", "op": "add", "value": 0.1}),
        )
        .await;
    assert!(e.contains("read-only"), "{e}");
    assert!(e.contains("was not changed"), "{e}");
    assert_eq!(std::fs::read(&rom).unwrap(), before, "the ROM was touched");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["BT000001.bin"]);
    ecu.server.stop().await;
}

#[tokio::test]
async fn a_rom_outside_the_sandbox_is_refused_naming_the_allowed_roots() {
    let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "BT000001.bin");
    let ecu = Ecu::sample(None).await;
    let e = ecu.err("rom_info", json!({"rom": rom})).await;
    assert!(!e.contains("checksum_valid"), "{e}");
    assert!(
        e.contains("outside"),
        "should say the path is outside the allowed directories: {e}"
    );
    assert!(
        e.contains(&ecu_samples().display().to_string()),
        "should list the allowed roots: {e}"
    );
    drop(dir);
    ecu.server.stop().await;
}

#[tokio::test]
async fn without_definitions_rom_info_says_how_to_configure_them() {
    let plugins = only_plugin("ecu_tables.wasm");
    let empty = tempfile::tempdir().unwrap();
    let s = Server::start(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &format!("{}:ro", ecu_samples().display()),
        "--workspace",
        empty.path().to_str().unwrap(),
    ])
    .await;
    let r = s.call("rom_info", json!({"rom": sample_rom()})).await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("--definitions-path"), "{}", text(&r));
    s.stop().await;
}

// ---------------------------------------------------------------- fixtures

/// The fixture directory, canonical: the guest sees granted directories at
/// their canonical paths only.
fn ecuflash() -> Option<PathBuf> {
    fixtures("ecuflash").map(|d| d.canonicalize().unwrap())
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `roms/*<suffix>` files, sorted, with the ROM each describes.
fn expected(dir: &Path, suffix: &str) -> Vec<(PathBuf, Value)> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("roms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v.into_iter()
        .map(|json| {
            let name = json.file_name().unwrap().to_string_lossy().into_owned();
            let rom = json.with_file_name(format!("{}.bin", name.trim_end_matches(suffix)));
            (rom, load(&json))
        })
        .collect()
}

async fn fixture_server(dir: &Path, rw: Option<&Path>) -> Ecu {
    let mut allow = vec![format!("{}:ro", dir.display())];
    if let Some(rw) = rw {
        allow.push(format!("{}:rw", rw.display()));
    }
    Ecu::start(dir, &allow, None).await
}

fn yaml(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn shared_rom_info_matches_every_expected_file() {
    let Some(dir) = ecuflash() else { return };
    let ecu = fixture_server(&dir, None).await;
    let files = expected(&dir, ".expected.json");
    assert!(files.len() >= 4, "expected at least four ROM fixtures");
    for (rom, exp) in files {
        let info = ecu.ok("rom_info", json!({"rom": rom})).await;
        let ctx = rom.display();
        for key in [
            "file",
            "size_kb",
            "definition",
            "vehicle",
            "ecu_id",
            "memmodel",
            "checksum_valid",
            "checksum_algorithm",
        ] {
            assert_eq!(
                val(&info, key),
                yaml(&exp["rom_info"][key]),
                "{ctx}: {key}\n{info}"
            );
        }
        if let Some(chain) = exp["include_chain"].as_array() {
            let chain: Vec<&str> = chain.iter().map(|c| c.as_str().unwrap()).collect();
            let shown = val(&info, "include_chain");
            let got: Vec<String> = shown
                .trim_matches(['[', ']'])
                .split(", ")
                .map(|s| s.trim_matches('"').to_owned())
                .collect();
            assert_eq!(got, chain, "{ctx}");
        }
        if exp["rom_info"]["definition"].is_null() {
            assert!(info.contains("no definition matches"), "{info}");
            let e = ecu.err("list_tables", json!({"rom": rom})).await;
            assert!(
                e.contains("no definition matches")
                    && e.contains("56890009 (expects 56890009 at 0x5002A"),
                "{e}"
            );
        }
    }
    ecu.server.stop().await;
}

#[tokio::test]
async fn shared_table_lists_match() {
    let Some(dir) = ecuflash() else { return };
    let ecu = fixture_server(&dir, None).await;
    let mut checked = 0;
    for (rom, exp) in expected(&dir, ".expected.json") {
        let Some(tables) = exp["tables"].as_array() else {
            continue;
        };
        let list = ecu
            .ok("list_tables", json!({"rom": rom, "limit": 1000}))
            .await;
        assert_eq!(val(&list, "table_count"), exp["table_count"].to_string());
        let mut got: Vec<[String; 4]> = markdown_rows(&list)[1..]
            .iter()
            .map(|r| [r[0].clone(), r[1].clone(), r[2].clone(), r[3].clone()])
            .collect();
        let mut want: Vec<[String; 4]> = tables
            .iter()
            .map(|t| {
                let s = |k: &str| t[k].as_str().unwrap_or("").to_owned();
                [s("name"), s("category"), s("dimensions"), s("unit")]
            })
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{}", rom.display());
        // A category filter returns exactly that category's tables.
        let fuel = ecu
            .ok(
                "list_tables",
                json!({"rom": rom, "category": "Fuel", "limit": 1000}),
            )
            .await;
        let n = tables
            .iter()
            .filter(|t| {
                t["category"]
                    .as_str()
                    .is_some_and(|c| c.to_lowercase().contains("fuel"))
            })
            .count();
        assert_eq!(
            val(&fuel, "table_count"),
            n.to_string(),
            "{}",
            rom.display()
        );
        checked += 1;
    }
    assert!(checked >= 2);
    ecu.server.stop().await;
}

#[tokio::test]
async fn shared_featured_tables_read_through_mcp() {
    let Some(dir) = ecuflash() else { return };
    let ecu = fixture_server(&dir, None).await;
    let mut checked = 0;
    for (rom, exp) in expected(&dir, ".expected.json") {
        for t in exp["table_values"].as_array().into_iter().flatten() {
            let name = t["name"].as_str().unwrap();
            let ctx = format!("{}: {name}", rom.display());
            let doc = ecu
                .ok(
                    "read_table",
                    json!({"rom": rom, "table": name, "row_count": 256, "col_count": 128}),
                )
                .await;
            assert_eq!(
                val(&doc, "dimensions"),
                t["dimensions"].as_str().unwrap(),
                "{ctx}"
            );
            let g = grid(&doc);
            check_cells(&g, &t["values"], t["format"].as_str().unwrap(), &ctx);
            check_axis(&g.row_labels, &t["row_axis"], &format!("{ctx} row axis"));
            check_axis(&g.col_labels, &t["col_axis"], &format!("{ctx} col axis"));
            checked += 1;
        }
        for b in exp["bloblist_values"].as_array().into_iter().flatten() {
            let name = b["name"].as_str().unwrap();
            let doc = ecu
                .ok("read_table", json!({"rom": rom, "table": name}))
                .await;
            assert_eq!(grid(&doc).cells, [[b["value"].as_str().unwrap()]], "{name}");
            let choices: Vec<&str> = b["choices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                val(&doc, "choices"),
                format!("[{}]", choices.join(", ")),
                "{name}"
            );
        }
    }
    assert!(checked >= 16, "only {checked} featured tables checked");
    ecu.server.stop().await;
}

#[tokio::test]
async fn shared_patch_scenarios_through_mcp() {
    let Some(dir) = ecuflash() else { return };
    let work = tempfile::tempdir().unwrap();
    let work_path = work.path().canonicalize().unwrap();
    let ecu = fixture_server(&dir, Some(&work_path)).await;
    let mut scenarios = 0;
    for (source, exp) in expected(&dir, ".patches.json") {
        for s in exp["scenarios"].as_array().unwrap() {
            let id = s["id"].as_str().unwrap();
            let ctx = format!("{}: {id}", source.display());
            let rom = work_path.join(format!(
                "{}-{id}.bin",
                exp["definition"]
                    .as_str()
                    .unwrap_or("rom")
                    .replace(' ', "_")
            ));
            std::fs::copy(&source, &rom).unwrap();
            let mut perms = std::fs::metadata(&rom).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&rom, perms).unwrap();
            let mut args = json!({"rom": rom, "table": s["table"], "op": s["op"]});
            for k in ["value", "min", "max", "row", "col"] {
                if !s[k].is_null() {
                    args[k] = s[k].clone();
                }
            }
            let out = ecu.ok("patch_table", args).await;
            let e = &s["expected"];
            assert_eq!(val(&out, "checksum_valid"), "true", "{ctx}");
            assert_eq!(
                val(&out, "cells_changed"),
                e["changed_cells"].as_array().unwrap().len().to_string(),
                "{ctx}\n{out}"
            );
            assert!(
                field(&out, "limited_cells").is_none_or(|v| v == "0"),
                "{ctx}: {out}"
            );
            // The format of the table, from read_table of the patched ROM.
            let name = s["table"].as_str().unwrap();
            let read = ecu
                .ok(
                    "read_table",
                    json!({"rom": rom, "table": name, "row_count": 256, "col_count": 128}),
                )
                .await;
            check_cells(
                &grid(&read),
                &e["values"],
                "",
                &format!("{ctx} (read back)"),
            );
            // The document the patch returned shows the same table (its
            // default window: the first rows and columns).
            let (shown, full) = (grid(&out).cells, grid(&read).cells);
            assert!(!shown.is_empty(), "{ctx}: the patch shows the table");
            for (row, cells) in shown.iter().enumerate() {
                assert_eq!(cells[..], full[row][..cells.len()], "{ctx}: row {row}");
            }
            // On disk: the correction word, the whole image, the checksum rule.
            let image = std::fs::read(&rom).unwrap();
            let word = u32::from_be_bytes(image[0xBFFF0..0xBFFF4].try_into().unwrap());
            assert_eq!(
                format!("0x{word:08X}"),
                e["checksum_word"].as_str().unwrap(),
                "{ctx}"
            );
            let sha: String = Sha256::digest(&image)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(sha, e["rom_sha256"].as_str().unwrap(), "{ctx}");
            assert!(mitsucan_valid(&image), "{ctx}");
            let info = ecu.ok("rom_info", json!({"rom": rom})).await;
            assert_eq!(val(&info, "checksum_valid"), "true", "{ctx}");
            scenarios += 1;
        }
    }
    assert!(scenarios >= 12, "only {scenarios} scenarios");
    let leftovers: Vec<_> = std::fs::read_dir(&work_path)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".bin"))
        .map(|e| e.file_name())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    ecu.server.stop().await;
}

#[tokio::test]
async fn shared_bad_checksum_rom_is_reported_and_repaired_by_a_patch() {
    let Some(dir) = ecuflash() else { return };
    let (work, rom) = copy_rom(&dir.join("roms/56890009_bad_checksum.bin"), "bad.bin");
    let ecu = fixture_server(&dir, Some(&work.path().canonicalize().unwrap())).await;
    let info = ecu.ok("rom_info", json!({"rom": rom})).await;
    assert_eq!(val(&info, "checksum_valid"), "false");
    assert!(!mitsucan_valid(&std::fs::read(&rom).unwrap()));
    let out = ecu
        .ok("patch_table", json!({"rom": rom, "table": "High Octane Timing Map", "op": "add", "value": 1.0, "row": 0, "col": 0}))
        .await;
    assert_eq!(val(&out, "checksum_valid"), "true");
    assert!(out.contains("already invalid before this patch"), "{out}");
    assert!(mitsucan_valid(&std::fs::read(&rom).unwrap()));
    // Values beyond the storage range are refused unless forced (issue 17 #7)...
    let before = std::fs::read(&rom).unwrap();
    let e = ecu
        .err("patch_table", json!({"rom": rom, "table": "High Octane Timing Map", "op": "set", "value": 500.0, "row": 0, "col": 0}))
        .await;
    assert!(
        e.contains("[0,0] wanted 500") && e.contains("storage limit") && e.contains("force: true"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(&rom).unwrap(),
        before,
        "a refused patch writes nothing"
    );
    // ...and with force: true they are limited and reported.
    let out = ecu
        .ok("patch_table", json!({"rom": rom, "table": "High Octane Timing Map", "op": "set", "value": 500.0, "row": 0, "col": 0, "force": true}))
        .await;
    assert_eq!(val(&out, "limited_cells"), "1");
    assert!(out.contains("wanted 500 stored 127"), "{out}");
    let e = ecu
        .err("patch_table", json!({"rom": rom, "table": "High Octane Timing Map", "op": "add", "value": 1.0, "row": 23}))
        .await;
    assert!(
        e.contains("row 23 is out of range") && e.contains("0..=22"),
        "{e}"
    );
    ecu.server.stop().await;
}

/// Issue 17 through MCP: the whole SubaruDefs tree as the definitions path
/// and a synthetic stock 2007 Legacy GT image (A2UG000N at 0x2000, a valid
/// subarudbw table at 0xFFB80 with the real ranges): checksum valid, no
/// unreadable table, the boost map (axes given as X/Y by the child) reads,
/// patches with the checksum fixed, and reads back.
#[tokio::test]
async fn shared_subarudefs_tree_reads_patches_and_checks_a_subaru_image() {
    let Some(tree) = fixtures("realworld/ecuflash/subarudefs_standard") else {
        return;
    };
    let tree = tree.canonicalize().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let mut image = vec![0u8; 0x10_0000];
    image[0x2000..0x2008].copy_from_slice(b"A2UG000N");
    // The checksum table, summed as the ECU does (end = last byte, i < end).
    let sum = |img: &[u8], s: usize, e: usize| {
        (s..e).step_by(4).fold(0u32, |acc, i| {
            acc.wrapping_add(u32::from_be_bytes(img[i..i + 4].try_into().unwrap()))
        })
    };
    let table = 0xF_FB80;
    let ranges = [(0usize, 0x1FFFusize), (0x2000, 0xF_FAF7)];
    for i in 0..17 {
        let (s, e) = ranges.get(i).copied().unwrap_or((0, 0));
        image[table + i * 12..table + i * 12 + 4].copy_from_slice(&(s as u32).to_be_bytes());
        image[table + i * 12 + 4..table + i * 12 + 8].copy_from_slice(&(e as u32).to_be_bytes());
        let c = 0x5AA5_A55Au32.wrapping_sub(sum(&image, s, e));
        image[table + i * 12 + 8..table + i * 12 + 12].copy_from_slice(&c.to_be_bytes());
    }
    let rom = dir.join("A2UG000N.bin");
    std::fs::write(&rom, &image).unwrap();
    let ecu = Ecu::start(
        &tree,
        &[
            format!("{}:ro", tree.display()),
            format!("{}:rw", dir.display()),
        ],
        None,
    )
    .await;
    let info = ecu.ok("rom_info", json!({"rom": rom})).await;
    assert_eq!(val(&info, "checksum_valid"), "true", "{info}");
    assert!(val(&info, "definition").starts_with("A2UG000N"), "{info}");
    let list = ecu
        .ok("list_tables", json!({"rom": rom, "limit": 1000}))
        .await;
    assert!(field(&list, "unreadable_tables").is_none(), "{list}");
    assert_eq!(val(&list, "table_count"), "330", "{list}");
    let read = ecu
        .ok("read_table", json!({"rom": rom, "table": "Target Boost_"}))
        .await;
    assert!(read.contains("x_axis: Requested Torque"), "{read}");
    let out = ecu
        .ok("patch_table", json!({"rom": rom, "table": "Target Boost_", "op": "set", "value": 5.0, "row": 0, "col": 0}))
        .await;
    assert_eq!(val(&out, "checksum_valid"), "true", "{out}");
    assert_eq!(val(&out, "cells_changed"), "1", "{out}");
    let after = std::fs::read(&rom).unwrap();
    for i in 0..2 {
        let (s, e) = ranges[i];
        let c = u32::from_be_bytes(
            after[table + i * 12 + 8..table + i * 12 + 12]
                .try_into()
                .unwrap(),
        );
        assert_eq!(c.wrapping_add(sum(&after, s, e)), 0x5AA5_A55A, "entry {i}");
    }
    let back = ecu
        .ok("read_table", json!({"rom": rom, "table": "Target Boost_"}))
        .await;
    assert_ne!(read, back);
    ecu.server.stop().await;
}

// ------------------------------------------- resources, prompts, completion

mod offers {
    use super::*;
    use rmcp::model::{
        ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
        Reference, ResourceContents,
    };

    /// Percent-encodes what a URI segment cannot hold (keeping `/` when
    /// `path`), as a client building a `rom://` URI must.
    fn enc(s: &str, path: bool) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                b'/' if path => "/".into(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }

    fn rom_uri(rom: &str, rest: &str) -> String {
        format!("rom://{}/{rest}", enc(rom, true))
    }

    async fn read(e: &Ecu, uri: &str) -> Result<String, String> {
        match e
            .server
            .client
            .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
            .await
        {
            Ok(r) => match &r.contents[0] {
                ResourceContents::TextResourceContents {
                    text, mime_type, ..
                } => {
                    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
                    Ok(text.clone())
                }
                other => panic!("text expected, got {other:?}"),
            },
            Err(err) => Err(err.to_string()),
        }
    }

    async fn prompt(e: &Ecu, name: &str, args: Value) -> Result<String, String> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = args.as_object().cloned();
        match e.server.client.get_prompt(params).await {
            Ok(p) => {
                let message = serde_json::to_value(&p.messages[0]).unwrap();
                assert_eq!(message["role"], "user");
                Ok(message["content"]["text"].as_str().unwrap().to_owned())
            }
            Err(err) => Err(err.to_string()),
        }
    }

    async fn complete(e: &Ecu, reference: Reference, arg: &str, value: &str) -> Vec<String> {
        e.server
            .client
            .complete(CompleteRequestParams::new(
                reference,
                ArgumentInfo::new(arg, value),
            ))
            .await
            .unwrap()
            .completion
            .values
    }

    /// Every backquoted snake_case name of `text` that reads as a tool
    /// (`verb_noun`) must be one benchtop serves (here or in log-query).
    fn names_only_real_tools(text: &str) {
        let served: Vec<&str> = TOOLS
            .iter()
            .copied()
            .chain(["list_logs", "query_logs", "plot_log"])
            .collect();
        let mut named = 0;
        for (i, part) in text.split('`').enumerate() {
            let toolish = i % 2 == 1
                && part.contains('_')
                && part.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                && [
                    "rom_", "list_", "read_", "patch_", "diff_", "query_", "plot_", "overlay_",
                ]
                .iter()
                .any(|p| part.starts_with(p));
            if toolish {
                assert!(served.contains(&part), "`{part}` is no tool:\n{text}");
                named += 1;
            }
        }
        assert!(named >= 4, "the prompt names the tools:\n{text}");
    }

    #[tokio::test]
    async fn tables_are_resources_read_like_the_tools() {
        let e = Ecu::sample(None).await;
        // Fixed resources are the plugin's skills alone; tables are
        // templates.
        let fixed: Vec<String> = e
            .server
            .client
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri.clone())
            .collect();
        assert_eq!(
            fixed,
            [
                "skill://ecu-tuning/SKILL.md",
                "skill://knock-diagnosis/SKILL.md"
            ]
        );
        let mut templates: Vec<String> = e
            .server
            .client
            .list_all_resource_templates()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.uri_template.clone())
            .collect();
        templates.sort();
        assert_eq!(
            templates,
            [
                "rom://{+rom}/categories/{category}",
                "rom://{+rom}/tables",
                "rom://{+rom}/tables/{table}"
            ]
        );
        let rom = sample_rom();
        // The table list is list_tables' whole document.
        let listed = read(&e, &rom_uri(&rom, "tables")).await.unwrap();
        let tool = e
            .ok("list_tables", json!({"rom": rom, "limit": 1000}))
            .await;
        assert_eq!(listed, tool);
        assert!(listed.contains("| Fuel Map "), "{listed}");
        let fuel = read(&e, &rom_uri(&rom, "categories/Fuel")).await.unwrap();
        let tool = e
            .ok(
                "list_tables",
                json!({"rom": rom, "category": "Fuel", "limit": 1000}),
            )
            .await;
        assert_eq!(fuel, tool);
        assert!(!fuel.contains("Boost Target"), "{fuel}");
        // A table, its name percent-encoded, is read_table's document.
        let name = "Ignition Timing Base Map";
        let table = read(&e, &rom_uri(&rom, &format!("tables/{}", enc(name, false))))
            .await
            .unwrap();
        let tool = e.ok("read_table", json!({"rom": rom, "table": name})).await;
        assert_eq!(table, tool);
        // `%2F` is part of the name, not a path separator.
        let err = read(&e, &rom_uri(&rom, "tables/Fuel%2FMap"))
            .await
            .unwrap_err();
        assert!(
            err.contains("no table named `Fuel/Map`") && err.contains("list_tables"),
            "{err}"
        );
        // A table named `tables` is told from the list by an encoded letter.
        let err = read(&e, &rom_uri(&rom, "tables/%74ables"))
            .await
            .unwrap_err();
        assert!(err.contains("no table named `tables`"), "{err}");
        // A ROM that is not there, and a URI of no template.
        let err = read(&e, "rom:///no/such/rom.bin/tables").await.unwrap_err();
        assert!(err.contains("cannot read ROM"), "{err}");
        let err = read(&e, "rom://whatever").await.unwrap_err();
        assert!(err.contains("Resource not found"), "{err}");
        e.server.stop().await;
    }

    // The legacy resources/subscribe: what most clients send today.
    #[allow(deprecated)]
    #[tokio::test]
    async fn a_patch_tells_subscribers_of_the_table() {
        use rmcp::model::SubscribeRequestParams;
        let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "my car.bin");
        let e = Ecu::sample(Some(dir.path())).await;
        let rom = rom.to_string_lossy().into_owned();
        let fuel = rom_uri(&rom, "tables/Fuel%20Map");
        let boost = rom_uri(&rom, "tables/Boost%20Target");
        for uri in [&fuel, &boost] {
            e.server
                .client
                .subscribe(SubscribeRequestParams::new(uri.clone()))
                .await
                .unwrap();
        }
        let before = read(&e, &fuel).await.unwrap();
        e.ok(
            "patch_table",
            json!({"rom": rom, "table": "Fuel Map", "op": "add", "value": 0.5, "row": 0, "col": 0}),
        )
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        let updates = e.server.events.lock().unwrap().resource_updates.clone();
        assert_eq!(updates, [fuel.as_str()], "only the patched table");
        assert_ne!(read(&e, &fuel).await.unwrap(), before, "and it reads anew");
        e.server.stop().await;
    }

    /// Real ECUFlash table names (`#`, `/`, parentheses, `->`) read through
    /// percent-encoded URIs exactly as read_table shows them.
    #[tokio::test]
    async fn shared_fixture_tables_read_through_encoded_uris() {
        let Some(dir) = ecuflash() else {
            eprintln!("skipped: no ../shared/fixtures/ecuflash");
            return;
        };
        let e = fixture_server(&dir, None).await;
        let mut roms: Vec<PathBuf> = std::fs::read_dir(dir.join("roms"))
            .unwrap()
            .map(|d| d.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        roms.sort();
        let mut checked = 0;
        for rom in &roms {
            let rom = rom.to_string_lossy().into_owned();
            let tool = e
                .server
                .call("list_tables", json!({"rom": rom, "limit": 1000}))
                .await;
            let resource = read(&e, &rom_uri(&rom, "tables")).await;
            if is_error(&tool) {
                // A ROM no definition matches fails through the resource too.
                let err = resource.unwrap_err();
                assert!(err.contains("no definition matches"), "{err}");
                continue;
            }
            let listed = resource.unwrap();
            assert_eq!(listed, text(&tool), "{rom}");
            let awkward: Vec<String> = markdown_rows(&listed)[1..]
                .iter()
                .map(|r| r[0].clone())
                .filter(|n| n.contains(['#', '/', '(', '>', '%', '?']))
                .take(25)
                .collect();
            assert!(!awkward.is_empty(), "{rom} has names to encode");
            for name in &awkward {
                let uri = rom_uri(&rom, &format!("tables/{}", enc(name, false)));
                let want = e
                    .server
                    .call("read_table", json!({"rom": rom, "table": name}))
                    .await;
                let got = read(&e, &uri).await;
                if is_error(&want) {
                    assert!(got.is_err(), "{uri} reads though read_table fails");
                } else {
                    assert_eq!(got.unwrap(), text(&want), "{uri}");
                }
                checked += 1;
            }
        }
        assert!(checked > 0);
        let hash = complete(
            &e,
            Reference::for_prompt("review_patch"),
            "table",
            "boost target #1",
        )
        .await;
        assert!(
            !hash.is_empty()
                && hash
                    .iter()
                    .all(|n| n.to_lowercase().starts_with("boost target #1")),
            "{hash:?}"
        );
        e.server.stop().await;
    }

    #[tokio::test]
    async fn prompts_walk_through_the_real_tools() {
        let e = Ecu::sample(None).await;
        let mut prompts: Vec<(String, Vec<(String, bool)>)> = e
            .server
            .client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| {
                let args = p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| (a.name, a.required == Some(true)))
                    .collect();
                (p.name, args)
            })
            .collect();
        prompts.sort();
        let owned = |v: &[(&str, bool)]| -> Vec<(String, bool)> {
            v.iter().map(|(n, r)| (n.to_string(), *r)).collect()
        };
        assert_eq!(
            prompts,
            [
                (
                    "diagnose_knock".to_owned(),
                    owned(&[("rom", true), ("log_file", false)])
                ),
                ("ecu_tuning_assistant".to_owned(), owned(&[])),
                (
                    "review_patch".to_owned(),
                    owned(&[("rom", true), ("table", true), ("stock_rom", false)])
                ),
            ]
        );

        let system = prompt(&e, "ecu_tuning_assistant", json!({})).await.unwrap();
        assert!(
            system.starts_with("You are an ECU tuning assistant"),
            "{system}"
        );
        names_only_real_tools(&system);
        // Word for word the specification's, when the brief is at hand.
        let spec = repo().join("../shared/specs/ecu-explorer-mcp.md");
        if let Ok(spec) = std::fs::read_to_string(spec) {
            let block = spec
                .split("recommended for LLMs using this MCP server")
                .nth(1)
                .and_then(|s| s.split("```").nth(1))
                .expect("the spec's prompt block");
            assert_eq!(system.trim(), block.trim());
        }

        let rom = sample_rom();
        let knock = prompt(
            &e,
            "diagnose_knock",
            json!({"rom": rom, "log_file": "pull.csv"}),
        )
        .await
        .unwrap();
        names_only_real_tools(&knock);
        for want in [
            format!("rom=\"{rom}\""),
            "file=\"pull.csv\"".into(),
            "`Ignition Timing Base Map`".into(),
            "`Fuel Map`".into(),
        ] {
            assert!(knock.contains(&want), "{want} in\n{knock}");
        }
        let review = prompt(
            &e,
            "review_patch",
            json!({"rom": rom, "table": "Fuel Map", "stock_rom": "stock.bin"}),
        )
        .await
        .unwrap();
        names_only_real_tools(&review);
        assert!(
            review.contains("`diff_tables` with rom=\"stock.bin\"")
                && review.contains("table=\"Fuel Map\"")
                && review.contains("checksum_valid"),
            "{review}"
        );
        // A misspelt table is said in the prompt, with the suggestion.
        let review = prompt(
            &e,
            "review_patch",
            json!({"rom": rom, "table": "Fuel Mapp"}),
        )
        .await
        .unwrap();
        assert!(review.contains("Did you mean: Fuel Map"), "{review}");
        let err = prompt(&e, "review_patch", json!({"rom": rom}))
            .await
            .unwrap_err();
        assert!(err.contains("table"), "{err}");
        e.server.stop().await;
    }

    #[tokio::test]
    async fn rom_paths_table_names_and_categories_complete() {
        let e = Ecu::sample(None).await;
        let rom = sample_rom();
        let tables = Reference::for_resource("rom://{+rom}/tables/{table}");
        // Nothing opened yet: the ROM the search finds supplies the names.
        assert_eq!(
            complete(&e, tables.clone(), "table", "fuel").await,
            ["Fuel Map"]
        );
        let found = complete(
            &e,
            Reference::for_resource("rom://{+rom}/tables"),
            "rom",
            "BT",
        )
        .await;
        assert_eq!(found, [rom.as_str()]);
        assert_eq!(
            complete(
                &e,
                Reference::for_prompt("review_patch"),
                "stock_rom",
                &rom[..5]
            )
            .await,
            [rom.as_str()]
        );
        // Typed as an absolute path, it completes as one.
        assert_eq!(
            complete(&e, Reference::for_prompt("diagnose_knock"), "rom", "/").await,
            [rom.as_str()]
        );
        assert!(
            complete(&e, Reference::for_prompt("diagnose_knock"), "rom", "zzz")
                .await
                .is_empty()
        );
        // Every table list_tables shows, for an empty value.
        let listed = e.ok("list_tables", json!({"rom": rom})).await;
        let rows = markdown_rows(&listed);
        let mut names: Vec<String> = rows[1..].iter().map(|r| r[0].clone()).collect();
        names.sort();
        assert_eq!(complete(&e, tables, "table", "").await, names);
        let ign = complete(&e, Reference::for_prompt("review_patch"), "table", "timing").await;
        assert_eq!(
            ign,
            ["Ignition Timing Base Map"],
            "contained, not only prefixed"
        );
        let mut cats: Vec<String> = rows[1..].iter().map(|r| r[1].clone()).collect();
        cats.sort();
        cats.dedup();
        let got = complete(
            &e,
            Reference::for_resource("rom://{+rom}/categories/{category}"),
            "category",
            "",
        )
        .await;
        assert_eq!(got, cats);
        e.server.stop().await;
    }
}

/// A scratch copy of the sample ROM that ecu-tables may patch: the `serve`
/// arguments for it, the ROM, the timing-map patch both confirmation tests
/// make, and the directories to keep alive.
struct PatchScene {
    args: Vec<String>,
    rom: PathBuf,
    patch: rmcp::model::CallToolRequestParams,
    _dirs: (TempDir, TempDir),
}

impl PatchScene {
    fn new() -> Self {
        let (dir, rom) = copy_rom(&ecu_samples().join("BT000001.bin"), "BT000001.bin");
        let plugins = ecu_plugins();
        let args = vec![
            "serve".to_owned(),
            "--plugins".to_owned(),
            plugins.path().display().to_string(),
            "--definitions-path".to_owned(),
            ecu_samples().join("definitions").display().to_string(),
            "--allow".to_owned(),
            format!("{}:rw", dir.path().display()),
        ];
        let patch = rmcp::model::CallToolRequestParams::new("patch_table").with_arguments(
            json!({"rom": rom, "table": "Ignition Timing Base Map", "op": "add", "value": -1.5, "row": 11})
                .as_object()
                .unwrap()
                .clone(),
        );
        Self {
            args,
            rom,
            patch,
            _dirs: (dir, plugins),
        }
    }

    /// The `serve` arguments, plus `extra`.
    fn args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        self.args
            .iter()
            .map(String::as_str)
            .chain(extra.iter().copied())
            .collect()
    }
}

#[tokio::test]
async fn a_patch_is_confirmed_by_the_user_when_the_client_can_ask() {
    use e2e::Asker;
    use rmcp::model::ElicitationAction;
    let scene = PatchScene::new();
    let (base, rom) = (scene.args(&[]), &scene.rom);
    let call = async |client: &rmcp::service::RunningService<rmcp::RoleClient, Asker>| {
        client.call_tool(scene.patch.clone()).await.unwrap()
    };
    let before = std::fs::read(rom).unwrap();

    // Declined: nothing is written, and the answer says so with its code.
    let (client, asked) = Asker::connect(&base, ElicitationAction::Decline, None).await;
    let r = call(&client).await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(
        text(&r).starts_with("PATCH_NOT_CONFIRMED: the user declined"),
        "{}",
        text(&r)
    );
    assert_eq!(std::fs::read(rom).unwrap(), before, "the ROM is untouched");
    let question = asked.lock().unwrap()[0].clone();
    assert!(
        question.contains("Ignition Timing Base Map")
            && question.contains(
                "add -1.5 on row 11 (RPM (rpm) 7000) × every column: 10 cells, 10 of them change?"
            ),
        "{question}"
    );
    client.cancel().await.unwrap();

    // Accepted: written as without a question.
    let (client, _) = Asker::connect(&base, ElicitationAction::Accept, Some(json!({}))).await;
    let r = call(&client).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_ne!(std::fs::read(rom).unwrap(), before);
    client.cancel().await.unwrap();

    // Turned off by the setting: no question, the patch is written.
    let off = scene.args(&["--confirm-patches", "off"]);
    let (client, asked) = Asker::connect(&off, ElicitationAction::Decline, None).await;
    let r = call(&client).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(asked.lock().unwrap().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_2026_client_confirms_a_patch_through_input_required_rounds() {
    use e2e::Asker;
    use rmcp::model::{CallToolResponse, ElicitationAction};
    let scene = PatchScene::new();
    let (args, rom, params) = (scene.args(&[]), &scene.rom, &scene.patch);
    let before = std::fs::read(rom).unwrap();

    // The first round answers with the question, not a result, and writes nothing.
    let (client, asked) = Asker::connect_2026(&args, ElicitationAction::Decline, None).await;
    let first = client.call_tool_once(params.clone()).await.unwrap();
    let CallToolResponse::InputRequired(questions) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let requests = questions.input_requests.expect("a question");
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["confirm_patch"],
        "{requests:?}"
    );
    assert!(questions.request_state.is_some());
    assert_eq!(
        std::fs::read(rom).unwrap(),
        before,
        "nothing written before an answer"
    );

    // rmcp's client asks its user and retries: declined writes nothing.
    let r = client.call_tool(params.clone()).await.unwrap();
    assert!(is_error(&r), "{}", text(&r));
    assert!(text(&r).starts_with("PATCH_NOT_CONFIRMED"), "{}", text(&r));
    assert_eq!(std::fs::read(rom).unwrap(), before);
    assert!(
        asked.lock().unwrap()[0].contains("Ignition Timing Base Map"),
        "{:?}",
        asked.lock().unwrap()
    );
    client.cancel().await.unwrap();

    // Accepted: the retried call writes the patch.
    let (client, _) = Asker::connect_2026(&args, ElicitationAction::Accept, Some(json!({}))).await;
    let r = client.call_tool(params.clone()).await.unwrap();
    assert!(!is_error(&r), "{}", text(&r));
    assert_ne!(std::fs::read(rom).unwrap(), before);
    client.cancel().await.unwrap();
}

/// Issue 34: for a client that takes MCP tasks, patch_table runs as a
/// task, and its confirmation is the task's input request: the task waits
/// in `input_required` writing nothing, `tasks/update` answers it, and the
/// task completes with the patch written and the checksum kept.
#[tokio::test]
async fn a_patch_task_is_confirmed_through_tasks_update() {
    use std::time::Duration;
    let scene = PatchScene::new();
    let rom = &scene.rom;
    let before = std::fs::read(rom).unwrap();
    // The scene's arguments start with the subcommand RawServer adds.
    let args = scene.args(&[]);
    let args: Vec<&str> = args.into_iter().skip_while(|a| *a == "serve").collect();
    let mut raw = e2e::RawServer::start_declaring(
        &args,
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    let wait = Duration::from_secs(30);
    let params = serde_json::to_value(&scene.patch).unwrap();
    let created = raw.request("tools/call", params, wait).await.unwrap();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = async |raw: &mut e2e::RawServer| {
        raw.request("tasks/get", json!({"taskId": id}), wait)
            .await
            .unwrap()["result"]
            .clone()
    };
    let mut task = Value::Null;
    for _ in 0..200 {
        task = get(&mut raw).await;
        if task["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(task["status"], "input_required", "{task}");
    let question = &task["inputRequests"]["confirm_patch"];
    assert_eq!(question["method"], "elicitation/create", "{task}");
    assert!(
        question.to_string().contains("Ignition Timing Base Map"),
        "{question}"
    );
    assert_eq!(std::fs::read(rom).unwrap(), before, "nothing written yet");

    let ack = raw
        .request(
            "tasks/update",
            json!({"taskId": task["taskId"], "inputResponses": {
                "confirm_patch": {"action": "accept", "content": {}}}}),
            wait,
        )
        .await
        .unwrap();
    assert!(ack["error"].is_null(), "{ack}");
    for _ in 0..200 {
        task = get(&mut raw).await;
        if task["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["result"]["isError"], false, "{task}");
    assert!(
        task["result"].to_string().contains("checksum_valid: true"),
        "{task}"
    );
    let after = std::fs::read(rom).unwrap();
    assert_ne!(after, before, "the patch is written");
    assert!(mitsucan_valid(&after));
}

/// A CallTool request for `tool` with `args`.
fn call_params(tool: &'static str, args: Value) -> rmcp::model::CallToolRequestParams {
    rmcp::model::CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone())
}

/// patch_table by axis value through MCP: the user is asked (naming the
/// ranges), declining writes nothing, accepting writes exactly the cells
/// read_table shows for the same ranges. Rows RPM 3500 and 4000 (6-7) of
/// Load 100 (column 4): 10.5 and 11.5 before, 9.5 and 10.5 after.
#[tokio::test]
async fn patch_table_by_axis_value_is_confirmed_and_writes_those_cells() {
    use e2e::Asker;
    use rmcp::model::ElicitationAction;
    let scene = PatchScene::new();
    let (base, rom) = (scene.args(&[]), &scene.rom);
    let table = "Ignition Timing Base Map";
    let patch = call_params(
        "patch_table",
        json!({"rom": rom, "table": table, "op": "add", "value": -1,
               "rows_where": "3500..4000", "cols_where": "100"}),
    );
    let before = std::fs::read(rom).unwrap();
    let (client, asked) = Asker::connect(&base, ElicitationAction::Decline, None).await;
    let r = client.call_tool(patch.clone()).await.unwrap();
    assert!(text(&r).starts_with("PATCH_NOT_CONFIRMED"), "{}", text(&r));
    assert_eq!(std::fs::read(rom).unwrap(), before, "declined: untouched");
    let question = asked.lock().unwrap()[0].clone();
    assert!(
        question.contains(
            "add -1 on rows_where 3500..4000 → rows 6-7 (RPM (rpm) 3500, 4000) × cols_where 100 → column 4 (Load (%) 100): 2 cells, 2 of them change?"
        ),
        "{question}"
    );
    client.cancel().await.unwrap();

    let (client, asked) = Asker::connect(&base, ElicitationAction::Accept, Some(json!({}))).await;
    let r = client.call_tool(patch.clone()).await.unwrap();
    let out = text(&r);
    assert!(!is_error(&r), "{out}");
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert_eq!(val(&out, "operation"), "add -1 on 2 cells [6,4], [7,4]");
    assert_eq!(val(&out, "cells_changed"), "2");
    assert_eq!(val(&out, "rows_where"), "3500..4000 (RPM (rpm) → rows 6-7)");
    assert_eq!(val(&out, "checksum_valid"), "true");
    let read = client
        .call_tool(call_params(
            "read_table",
            json!({"rom": rom, "table": table, "rows_where": "3500..4000", "cols_where": "80..100"}),
        ))
        .await
        .unwrap();
    let g = grid(&text(&read));
    assert_eq!(g.row_labels, ["3500", "4000"]);
    assert_eq!(g.col_labels, ["80", "100"]);
    assert_eq!(g.cells, [["12.0", "9.5"], ["13.5", "10.5"]]);
    let after = std::fs::read(rom).unwrap();
    assert!(mitsucan_valid(&after));
    // The map is 120 one-byte cells at 0x51000: two of them change, and
    // outside it only the checksum word.
    let map = 0x51000..0x51000 + 120;
    let changed: Vec<usize> = (0..before.len())
        .filter(|&i| before[i] != after[i])
        .collect();
    assert_eq!(
        changed.iter().filter(|&&i| map.contains(&i)).count(),
        2,
        "{changed:x?}"
    );
    assert!(
        changed.iter().filter(|&&i| !map.contains(&i)).count() <= 4,
        "{changed:x?}"
    );

    // A range meeting no cell: the error names the breakpoints; nothing asked.
    let r = client
        .call_tool(call_params(
            "patch_table",
            json!({"rom": rom, "table": table, "op": "add", "value": -1, "cols_where": "300.."}),
        ))
        .await
        .unwrap();
    assert!(is_error(&r));
    assert!(
        text(&r).contains("meets no cell of axis `Load (%)`")
            && text(&r).contains("20, 40, 60, 80, 100, 120, 140, 160, 180, 200"),
        "{}",
        text(&r)
    );
    let r = client
        .call_tool(call_params(
            "patch_table",
            json!({"rom": rom, "table": table, "op": "add", "value": -1, "col": 2, "cols_where": "100"}),
        ))
        .await
        .unwrap();
    assert!(
        text(&r).contains("give cols_where or col, not both"),
        "{}",
        text(&r)
    );
    // A listed cell past the table's end, and values out of the safe
    // range: refused before the user is asked anything.
    for (args, why) in [
        (
            json!({"rom": rom, "table": table, "op": "add", "value": -1, "cells": [[6, 4], [12, 0]]}),
            "row 12 is out of range",
        ),
        (
            json!({"rom": rom, "table": table, "op": "set", "value": 500, "rows_where": "4000"}),
            "refused: 10 cell(s)",
        ),
    ] {
        let r = client
            .call_tool(call_params("patch_table", args))
            .await
            .unwrap();
        assert!(is_error(&r) && text(&r).contains(why), "{}", text(&r));
    }
    assert_eq!(asked.lock().unwrap().len(), 1, "refusals ask nothing");
    assert_eq!(std::fs::read(rom).unwrap(), after);
    client.cancel().await.unwrap();
}

/// lookup_table through MCP, hand-checked on Ignition Timing Base Map:
/// (13.5 + 11.5 + 14.5 + 13.0) / 4 at 4250 rpm, 90 % load; the corner cell
/// past both axes, said to be clamped; a wrong call says what to give.
#[tokio::test]
async fn lookup_table_gives_the_interpolated_value_and_its_cells() {
    let ecu = Ecu::sample(None).await;
    let tools = ecu.server.tools().await;
    let lookup = tools.iter().find(|t| t.name == "lookup_table").unwrap();
    assert_eq!(
        lookup.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    let (rom, table) = (sample_rom(), "Ignition Timing Base Map");
    let out = ecu
        .ok(
            "lookup_table",
            json!({"rom": rom, "table": table, "x": 90, "y": 4250}),
        )
        .await;
    assert_eq!(val(&out, "value"), "13.125", "{out}");
    assert!(!out.contains("clamped"), "{out}");
    let rows = markdown_rows(&out);
    assert_eq!(
        rows[0],
        [
            "Row",
            "Col",
            "RPM (rpm)",
            "Load (%)",
            "Value (degrees)",
            "Weight"
        ]
    );
    let cells: Vec<(String, String, String)> = rows[1..]
        .iter()
        .map(|r| (format!("{},{}", r[0], r[1]), r[4].clone(), r[5].clone()))
        .collect();
    let want = [
        ("7,3", "13.5"),
        ("7,4", "11.5"),
        ("8,3", "14.5"),
        ("8,4", "13.0"),
    ];
    assert_eq!(cells.len(), 4, "{out}");
    for ((at, v, w), (want_at, want_v)) in cells.iter().zip(want) {
        assert_eq!(
            (at.as_str(), v.as_str(), w.as_str()),
            (want_at, want_v, "0.25")
        );
    }
    let out = ecu
        .ok(
            "lookup_table",
            json!({"rom": rom, "table": table, "x": 250, "y": 8000}),
        )
        .await;
    assert_eq!(val(&out, "value"), "11", "{out}");
    assert!(
        out.contains("x 250 is above the last breakpoint of Load (%), held at 200"),
        "{out}"
    );
    let err = ecu
        .err("lookup_table", json!({"rom": rom, "table": table, "x": 90}))
        .await;
    assert!(
        err.contains("give x (x_axis Load (%)) and y (y_axis RPM (rpm))"),
        "{err}"
    );
    ecu.server.stop().await;
}

/// The tuner's loop through MCP on the bundled samples: propose_patch turns
/// the knock of log-2026-02-22T14-30-00-000Z.csv into a diff without
/// writing; its patch_table arguments, confirmed by the user, write exactly
/// that; read_table by value reads it back. Hand-checked (an independent
/// count of the log): the 135 knock samples have Load 255..268 %, past the
/// last cell (200), and fall in RPM 4000: 2, 4500: 5, 5000: 32, 6000: 55,
/// 7000: 41; column 200 holds 3.5, 4.5, 6.0, 8.5, 11.0 there.
#[tokio::test]
async fn propose_patch_then_patch_table_with_confirmation_then_read_back() {
    use e2e::Asker;
    use rmcp::model::ElicitationAction;
    let scene = PatchScene::new();
    let logs = repo().join("samples/logs").display().to_string();
    let args = scene.args(&["--logs-dir", &logs]);
    let rom = scene.rom.display().to_string();
    let table = "Ignition Timing Base Map";
    let before = std::fs::read(&scene.rom).unwrap();
    let (client, asked) = Asker::connect(&args, ElicitationAction::Accept, Some(json!({}))).await;
    let call = async |tool: &'static str, args: Value| {
        let r = client.call_tool(call_params(tool, args)).await.unwrap();
        (is_error(&r), text(&r))
    };
    let (failed, out) = call(
        "propose_patch",
        json!({"rom": rom, "table": table, "file": "log-2026-02-22T14-30-00-000Z.csv",
               "filter": "Knock > 0", "op": "add", "value": -1, "min_samples": 3,
               "clamp_to_edges": true}),
    )
    .await;
    assert!(!failed, "{out}");
    let out_nearest = out.clone();
    assert!(asked.lock().unwrap().is_empty(), "a proposal asks nothing");
    assert_eq!(
        std::fs::read(&scene.rom).unwrap(),
        before,
        "and writes nothing"
    );
    for (k, v) in [
        ("selected", "135"),
        ("held_at_edges", "135"),
        ("cells_proposed", "4"),
        ("cells_changing", "4"),
    ] {
        assert_eq!(val(&out, k), v, "{k}: {out}");
    }
    assert!(
        val(&out, "cells_below_min_samples").starts_with("1 "),
        "{out}"
    );
    let diff = markdown_rows(&out);
    assert_eq!(
        diff[0],
        [
            "Row",
            "Col",
            "RPM (rpm)",
            "Load (%)",
            "Samples",
            "Old (degrees)",
            "New",
            "Change"
        ]
    );
    let got: Vec<Vec<&str>> = diff[1..]
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        got,
        [
            ["8", "9", "4500", "200", "5", "4.5", "3.5", "-1.0"],
            ["9", "9", "5000", "200", "32", "6.0", "5.0", "-1.0"],
            ["10", "9", "6000", "200", "55", "8.5", "7.5", "-1.0"],
            ["11", "9", "7000", "200", "41", "11.0", "10.0", "-1.0"],
        ]
    );
    let json_args = out
        .split("```json\n")
        .nth(1)
        .and_then(|s| s.split("\n```").next())
        .expect("the patch_table arguments");
    let patch: Value = serde_json::from_str(json_args).unwrap();
    assert_eq!(patch["cells"], json!([[8, 9], [9, 9], [10, 9], [11, 9]]));

    // Applied through patch_table: the user is asked, then it is written.
    let (failed, out) = call("patch_table", patch).await;
    assert!(!failed, "{out}");
    let question = asked.lock().unwrap()[0].clone();
    assert!(
        question.contains(
            "add -1 on rows 8-11 (RPM (rpm) 4500, 5000, 6000, 7000) × column 9 (Load (%) 200): 4 cells, 4 of them change?"
        ),
        "{question}"
    );
    assert_eq!(val(&out, "cells_changed"), "4");
    assert_eq!(val(&out, "checksum_valid"), "true");
    assert!(mitsucan_valid(&std::fs::read(&scene.rom).unwrap()));
    let (_, read) = call(
        "read_table",
        json!({"rom": rom, "table": table, "rows_where": "4000..", "cols_where": "180.."}),
    )
    .await;
    let g = grid(&read);
    assert_eq!(g.row_labels, ["4000", "4500", "5000", "6000", "7000"]);
    assert_eq!(g.col_labels, ["180", "200"]);
    assert_eq!(
        g.cells,
        [
            ["5.0", "3.5"],
            ["6.5", "3.5"],
            ["7.5", "5.0"],
            ["10.0", "7.5"],
            ["12.5", "10.0"]
        ],
        "column 200 from 4500 rpm down one degree, the rest untouched"
    );

    // Every cell the ECU reads at the knock samples (cells: bracketing):
    // Load is held at 200, so column 9 only, and the rows around each
    // sample's RPM; the whole degree then reaches every sample. The
    // nearest-cell proposal above reaches them only in part.
    let near_effect = val(&out_nearest, "effective_change");
    assert!(near_effect.starts_with("min "), "{out_nearest}");
    assert!(!near_effect.starts_with("min -1, max -1,"), "{out_nearest}");
    assert!(
        val(&out_nearest, "effective_note").contains("cells: bracketing includes them"),
        "{out_nearest}"
    );
    let (failed, all) = call(
        "propose_patch",
        json!({"rom": rom, "table": table, "file": "log-2026-02-22T14-30-00-000Z.csv",
               "filter": "Knock > 0", "op": "add", "value": -1, "clamp_to_edges": true,
               "cells": "bracketing"}),
    )
    .await;
    assert!(!failed, "{all}");
    assert!(val(&all, "cells_from").starts_with("bracketing"), "{all}");
    assert!(
        val(&all, "effective_change").starts_with("min -1, max -1, mean -1 at the 135 "),
        "{all}"
    );
    let rows: Vec<String> = markdown_rows(&all)[1..]
        .iter()
        .map(|r| format!("{},{}", r[0], r[1]))
        .collect();
    assert!(
        rows.iter().all(|rc| rc.ends_with(",9")) && rows.len() >= 5,
        "{all}"
    );

    // A filter naming no channel of the log: the error says which.
    let (failed, err) = call(
        "propose_patch",
        json!({"rom": rom, "table": table, "file": "log-2026-02-22T14-30-00-000Z.csv",
               "filter": "Knok > 0", "op": "add", "value": -1}),
    )
    .await;
    assert!(failed && err.contains("Knok"), "{err}");
    client.cancel().await.unwrap();
}

/// Hardening item 7: a 2026-07-28 confirmation is bound to its question.
/// Round one's `requestState` with "accept" once wrote a different ROM,
/// table and whole-table `set`, and an answer sent with no state and no
/// question asked also wrote. The first is refused, the second asks the
/// question, and the ROM is untouched by both.
#[tokio::test]
async fn a_2026_confirmation_writes_only_the_call_it_was_asked_for() {
    use e2e::Asker;
    use rmcp::model::{CallToolResponse, ElicitationAction, InputResponses};
    let scene = PatchScene::new();
    let (args, rom, params) = (scene.args(&[]), &scene.rom, &scene.patch);
    let before = std::fs::read(rom).unwrap();
    let (client, _) = Asker::connect_2026(&args, ElicitationAction::Decline, None).await;
    let first = client.call_tool_once(params.clone()).await.unwrap();
    let CallToolResponse::InputRequired(questions) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let state = questions.request_state.expect("a state");
    let accept: InputResponses = [("confirm_patch".to_owned(), json!({"action": "accept"}))].into();

    // The state of the timing patch, offered for a whole-table `set`.
    let other = call_params(
        "patch_table",
        json!({"rom": rom, "table": "Ignition Timing Base Map", "op": "set", "value": 0}),
    )
    .with_request_state(state.clone())
    .with_input_responses(accept.clone());
    let e = client.call_tool_once(other).await.expect_err("refused");
    assert!(e.to_string().contains("another call"), "{e}");

    // An answer with no state: no question was asked, so it confirms
    // nothing; the question is asked instead.
    let bare = params.clone().with_input_responses(accept.clone());
    let r = client.call_tool_once(bare).await.unwrap();
    assert!(matches!(r, CallToolResponse::InputRequired(_)), "{r:?}");
    assert_eq!(std::fs::read(rom).unwrap(), before, "nothing was written");

    // The state with its own call is the confirmation, and writes.
    let own = params
        .clone()
        .with_request_state(state)
        .with_input_responses(accept);
    let r = client.call_tool_once(own).await.unwrap();
    assert!(
        matches!(&r, CallToolResponse::Complete(c) if !is_error(c)),
        "{r:?}"
    );
    assert_ne!(std::fs::read(rom).unwrap(), before);
    client.cancel().await.unwrap();
}

/// Issue 31: the RomRaider family is a component of its own. With
/// romraider.wasm beside ecu-tables, a real RomRaider file (RR_EA1M511A,
/// from a tuning community) gives its ROM a definition and tables; with
/// ecu-tables alone, rom_info names the file's format and says to add the
/// family, instead of ignoring it.
#[tokio::test]
async fn shared_the_romraider_family_is_a_component_of_its_own() {
    let Some(root) = fixtures("realworld/ecuflash") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let defs = work.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::copy(root.join("RR_EA1M511A.xml"), defs.join("RR_EA1M511A.xml")).unwrap();
    let mut image = vec![0u8; 0x10_0000];
    image[0x8000..0x8008].copy_from_slice(b"EA1M511A");
    let rom = work.join("EA1M511A.bin");
    std::fs::write(&rom, &image).unwrap();
    let rom_s = rom.to_string_lossy().into_owned();
    let grants = [format!("{}:rw", work.display())];

    let ecu = Ecu::start(&defs, &grants, Some(&work)).await;
    let info = ecu.ok("rom_info", json!({"rom": rom_s})).await;
    assert!(val(&info, "definition").starts_with("EA1M511A"), "{info}");
    assert_eq!(val(&info, "definition_format"), "RomRaider", "{info}");
    let listed = ecu.ok("list_tables", json!({"rom": rom_s})).await;
    assert!(listed.contains("tables:"), "{listed}");
    ecu.server.stop().await;

    // ECUFlash's family loaded, RomRaider's not.
    let alone = only_plugin("ecu_tables.wasm");
    std::fs::copy(
        e2e::plugins().join("ecuflash.wasm"),
        alone.path().join("ecuflash.wasm"),
    )
    .unwrap();
    let mut args = vec![
        "--plugins".to_string(),
        alone.path().to_string_lossy().into(),
        "--definitions-path".into(),
        defs.to_string_lossy().into(),
        "--workspace".into(),
        work.to_string_lossy().into(),
    ];
    for g in &grants {
        args.extend(["--allow".into(), g.clone()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&args).await;
    let info = text(&server.ok("rom_info", json!({"rom": rom_s})).await);
    assert!(
        info.contains("RR_EA1M511A.xml (RomRaider)") && info.contains("family component"),
        "{info}"
    );
    server.stop().await;
}

/// Issue 31: a Subaru owner whose definitions are RomRaider's. The server
/// reads the RomRaider file beside a ROM, names the format, reads a table
/// and patches it with the checksum fixed, through MCP.
#[tokio::test]
async fn shared_romraider_definitions_read_and_patch_through_mcp() {
    let Some(defs) = fixtures("realworld/ecu-families/romraider") else {
        return;
    };
    // A synthetic AE5L500V image: its id, a boost speed limit of 40 raw
    // (a big-endian float), and one checksum entry over the calibration.
    let mut image = vec![0u8; 0x10_0000];
    image[0x2004..0x200C].copy_from_slice(b"AE5L500V");
    image[0xC0A60..0xC0A64].copy_from_slice(&40f32.to_be_bytes());
    let (start, end) = (0xC0000u32, 0xC1000u32);
    let sum = image[start as usize..end as usize]
        .chunks_exact(4)
        .fold(0u32, |s, w| {
            s.wrapping_add(u32::from_be_bytes(w.try_into().unwrap()))
        });
    // The other 16 of the 17 entries are unused: (0, 0, 0x5AA5A55A).
    let mut entries = vec![[0, 0, 0x5AA5_A55Au32]; 17];
    entries[0] = [start, end, 0x5AA5_A55Au32.wrapping_sub(sum)];
    for (i, word) in entries.iter().flatten().enumerate() {
        image[0xFFB80 + 4 * i..0xFFB84 + 4 * i].copy_from_slice(&word.to_be_bytes());
    }
    let dir = tempfile::tempdir().unwrap();
    let rw = dir.path().canonicalize().unwrap();
    let rom = rw.join("AE5L500V.bin");
    std::fs::write(&rom, &image).unwrap();
    let rom_s = rom.to_string_lossy().into_owned();
    let ecu = Ecu::start(
        &defs,
        &[
            format!("{}:ro", defs.display()),
            format!("{}:rw", rw.display()),
        ],
        Some(&rw),
    )
    .await;
    let info = ecu.ok("rom_info", json!({"rom": rom_s})).await;
    assert!(val(&info, "definition").starts_with("AE5L500V"), "{info}");
    assert_eq!(val(&info, "definition_format"), "RomRaider", "{info}");
    assert_eq!(val(&info, "checksum_valid"), "true", "{info}");
    let table = "Target Boost Compensation (1st Gear) Speed Disable";
    let read = ecu
        .ok("read_table", json!({"rom": rom_s, "table": table}))
        .await;
    // 40 raw × 0.621 = 24.84 mph, shown with RomRaider's format `#`.
    assert_eq!(grid(&read).cells, [["25"]], "{read}");
    let out = ecu
        .ok(
            "patch_table",
            json!({"rom": rom_s, "table": table, "op": "set", "value": 31}),
        )
        .await;
    assert_eq!(val(&out, "checksum_valid"), "true", "{out}");
    let read = ecu
        .ok("read_table", json!({"rom": rom_s, "table": table}))
        .await;
    assert_eq!(grid(&read).cells, [["31"]], "{read}");
    let written = std::fs::read(&rom).unwrap();
    let raw = f32::from_be_bytes(written[0xC0A60..0xC0A64].try_into().unwrap());
    assert!((raw * 0.621 - 31.0).abs() < 1e-3, "{raw}");
    ecu.server.stop().await;
}
