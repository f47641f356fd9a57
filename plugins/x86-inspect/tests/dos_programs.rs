//! Runs every program in ../shared/fixtures/dos through the library API and
//! compares stdout, exit code, files, instruction count, INT 21h function
//! counts and per-function call counts with the expected results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use x86_inspect::cpu::Model;
use x86_inspect::machine::{Machine, StopReason};
use x86_inspect::tracking::SegOff;

fn fixtures() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dos");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("fixtures not found at {}; skipping", p.display());
        None
    }
}

fn latin1(s: &str) -> Vec<u8> {
    s.chars().map(|c| c as u32 as u8).collect()
}

/// Runs one program in a fresh directory; returns a list of mismatches.
fn check(dir: &Path, expected_path: &Path) -> Vec<String> {
    let exp: Value =
        serde_json::from_str(&std::fs::read_to_string(expected_path).unwrap()).unwrap();
    let program = exp["program"].as_str().unwrap();
    let stem = expected_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(".expected.json", "");
    let src = dir.join(format!("{stem}.{}", exp["format"].as_str().unwrap()));
    let work = std::env::temp_dir().join(format!("x86-inspect-dos-{}-{stem}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let image = std::fs::read(&src).unwrap();
    let prog_path = work.join(program);
    std::fs::write(&prog_path, &image).unwrap();

    let mut errs = Vec::new();
    // Tracking is what the call counts need; the 90M-instruction benchmark
    // has none and would be slow tracked in an unoptimised test build.
    let track = !exp["calls"].as_array().unwrap().is_empty()
        || exp["instructions"].as_u64().unwrap_or(0) < 1_000_000;
    let mut m = Machine::load(1, &prog_path, &image, "", Model::I80186, track).unwrap();
    let (n, reason) = m.run(200_000_000, &mut |_, _| true).unwrap();
    if reason != StopReason::Exited(exp["exit_code"].as_u64().unwrap() as u8) {
        errs.push(format!("stop: {reason:?}, want exit {}", exp["exit_code"]));
    }
    if m.dos.stdout.contents() != latin1(exp["stdout"].as_str().unwrap()) {
        errs.push(format!(
            "stdout: {:?}",
            String::from_utf8_lossy(&m.dos.stdout.contents())
        ));
    }
    if m.dos.stderr.contents() != latin1(exp["stderr"].as_str().unwrap()) {
        errs.push(format!(
            "stderr: {:?}",
            String::from_utf8_lossy(&m.dos.stderr.contents())
        ));
    }
    if let Some(tty) = exp.get("bios_teletype").and_then(|v| v.as_str())
        && m.dos.screen.contents() != latin1(tty)
    {
        errs.push(format!(
            "screen: {:?}",
            String::from_utf8_lossy(&m.dos.screen.contents())
        ));
    }
    if let Some(want) = exp["instructions"].as_u64()
        && n != want
    {
        errs.push(format!("instructions: {n}, want {want}"));
    }
    let calls: BTreeMap<String, u64> = m
        .dos
        .int21_calls
        .iter()
        .map(|(k, v)| (format!("21h/{k:02X}h"), *v))
        .collect();
    let want_calls: BTreeMap<String, u64> = exp["int21_calls"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    if calls != want_calls {
        errs.push(format!("int21 calls: {calls:?}"));
    }
    for c in exp["calls"].as_array().unwrap() {
        let tracker = m.tracker.as_ref().unwrap();
        let addr = c["address"].as_str().unwrap();
        let seg = u16::from_str_radix(&addr[..4], 16).unwrap() + m.program.load_segment;
        let off = u16::from_str_radix(&addr[5..], 16).unwrap();
        let got = tracker
            .functions
            .get(&SegOff(seg, off))
            .map(|f| f.called_count)
            .unwrap_or(0);
        if got != c["count"].as_u64().unwrap() {
            errs.push(format!(
                "calls to {} ({addr}): {got}, want {}",
                c["name"], c["count"]
            ));
        }
    }
    // Files left behind, apart from the program.
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(&work).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        if name != program {
            files.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
    let want_files: BTreeMap<String, Vec<u8>> = exp["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), latin1(v.as_str().unwrap())))
        .collect();
    if files != want_files {
        errs.push(format!("files: {:?}", files.keys().collect::<Vec<_>>()));
    }
    let _ = std::fs::remove_dir_all(&work);
    errs
}

#[test]
fn shared_dos_programs() {
    let Some(dir) = fixtures() else { return };
    let mut expected: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".expected.json"))
        .collect();
    expected.sort();
    let mut failed = 0;
    for e in &expected {
        let errs = check(&dir, e);
        let name = e
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".expected.json", "");
        if errs.is_empty() {
            println!("{name}: ok");
        } else {
            failed += 1;
            println!("{name}: FAILED\n  {}", errs.join("\n  "));
        }
    }
    assert_eq!(failed, 0, "{failed} of {} programs failed", expected.len());
}
