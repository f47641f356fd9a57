//! End-to-end tests of ECU definition families served by other plugins
//! (docs/design.md, "Plugins serving plugins"): a family component dropped
//! into the plugins directory of a running server is asked by the eight
//! ECU tools, without a restart, and removing it removes it.

use e2e::{
    Server, bin, build_component, fixtures, markdown_rows, only_plugin, plugins, repo,
    required_field, test_plugins, text,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A server with only ecu-tables in a plugins directory it watches, the
/// definitions in `defs`, and `work` read-write.
async fn ecu_server(plugins: &Path, defs: &Path, work: &Path) -> Server {
    Server::start(&[
        "--plugins",
        plugins.to_str().unwrap(),
        "--definitions-path",
        defs.to_str().unwrap(),
        "--allow",
        &format!("{}:ro", defs.display()),
        "--allow",
        &format!("{}:rw", work.display()),
        "--workspace",
        work.to_str().unwrap(),
    ])
    .await
}

/// Calls rom_info until `done` holds of its answer or its error (hot swap
/// takes a moment), or fails after 30 s with the last answer.
async fn rom_info_until(s: &Server, rom: &str, done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let info = text(&s.call("rom_info", json!({"rom": rom})).await);
        if done(&info) {
            return info;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "rom_info never changed as expected:\n{info}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn val(doc: &str, key: &str) -> String {
    required_field(doc, key).trim_matches('"').to_owned()
}

/// The cells of a read_table answer, row by row, without the axis column.
fn cells(doc: &str) -> Vec<Vec<String>> {
    let rows = markdown_rows(doc);
    let skip = usize::from(rows[0].len() > 1);
    rows[1..].iter().map(|r| r[skip..].to_vec()).collect()
}

#[tokio::test]
async fn a_family_made_with_benchtop_new_is_asked_by_the_ecu_tools_while_it_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin())
        .args(["new", "acme-ecu", "--family", "--namespace", "acme"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let krate = dir.path().join("acme-ecu");
    let built = build_component(&krate);
    let report = std::process::Command::new(bin())
        .args(["check", built.to_str().unwrap()])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&report.stdout).into_owned();
    assert!(
        report.contains("serves benchtop:ecu-family/family@0.1.0")
            && report.contains("resolve(key, files)")
            && report.contains("no problems found"),
        "{report}"
    );

    let defs = dir.path().join("defs");
    std::fs::create_dir(&defs).unwrap();
    std::fs::copy(krate.join("example.ecudef"), defs.join("example.ecudef")).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut image = vec![0u8; 32768];
    image[256..258].copy_from_slice(&3200u16.to_be_bytes()); // 800 rpm
    let rom = work.join("car.bin");
    std::fs::write(&rom, &image).unwrap();
    let rom = rom.to_string_lossy().into_owned();
    let plugins = only_plugin("ecu_tables.wasm");
    let s = ecu_server(plugins.path(), &defs, &work).await;
    let before = text(&s.ok("rom_info", json!({"rom": rom})).await);
    assert_eq!(val(&before, "definition"), "null", "{before}");

    std::fs::copy(&built, plugins.path().join("acme_ecu.wasm")).unwrap();
    let info = rom_info_until(&s, &rom, |i| i.contains("definition_format: acme-ecu")).await;
    assert_eq!(val(&info, "definition"), "Example ECU", "{info}");
    assert!(
        info.contains("by the image's size (32768 bytes) alone"),
        "{info}"
    );
    assert!(info.contains("declares no checksum"), "{info}");
    // The eight tools stay eight: the family adds none.
    assert_eq!(s.tool_names().await.len(), 8);
    let read = text(
        &s.ok(
            "read_table",
            json!({"rom": rom, "table": "Idle speed target"}),
        )
        .await,
    );
    assert_eq!(cells(&read), [["800"]], "{read}");
    let patched = text(
        &s.ok(
            "patch_table",
            json!({"rom": rom, "table": "Idle speed target", "op": "set", "value": 850}),
        )
        .await,
    );
    assert!(patched.contains("checksum was NOT updated"), "{patched}");
    let written = std::fs::read(&rom).unwrap();
    assert_eq!(u16::from_be_bytes([written[256], written[257]]), 3400);

    std::fs::remove_file(plugins.path().join("acme_ecu.wasm")).unwrap();
    let after = rom_info_until(&s, &rom, |i| val(i, "definition") == "null").await;
    assert!(after.contains("no definition matches"), "{after}");
    s.stop().await;
}

/// Issue 31: ECUFlash is a family component like any other. With
/// ecu-tables alone the sample ROM has no definition, and rom_info names
/// the sample's definition files as ECUFlash's and says to add the family;
/// dropping ecuflash.wasm into the running server's plugins directory gives
/// the ROM its definition, tables and checksum; removing it takes them away.
#[tokio::test]
async fn the_ecuflash_family_is_a_component_dropped_in_and_taken_out() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let rom = work.join("BT000001.bin");
    std::fs::copy(repo().join("samples/ecu/BT000001.bin"), &rom).unwrap();
    let rom = rom.to_string_lossy().into_owned();
    let defs = repo().join("samples/ecu/definitions");
    let plugins = only_plugin("ecu_tables.wasm");
    let s = ecu_server(plugins.path(), &defs, &work).await;
    let before = text(&s.ok("rom_info", json!({"rom": rom})).await);
    assert_eq!(val(&before, "definition"), "null", "{before}");
    assert!(
        before.contains("Benchtop Sample ECU.xml (ECUFlash)")
            && before.contains("family component"),
        "{before}"
    );

    let family = e2e::plugins().join("ecuflash.wasm");
    std::fs::copy(family, plugins.path().join("ecuflash.wasm")).unwrap();
    let info = rom_info_until(&s, &rom, |i| i.contains("definition_format: ECUFlash")).await;
    assert!(
        info.contains("include_chain: [benchtopbase, BT000001]"),
        "{info}"
    );
    assert_eq!(val(&info, "checksum_algorithm"), "mitsucan", "{info}");
    assert_eq!(val(&info, "checksum_valid"), "true", "{info}");
    assert_eq!(s.tool_names().await.len(), 8);
    let patched = text(
        &s.ok(
            "patch_table",
            json!({"rom": rom, "table": "Injector Scaling", "op": "set", "value": 1000}),
        )
        .await,
    );
    assert_eq!(val(&patched, "checksum_valid"), "true", "{patched}");

    std::fs::remove_file(plugins.path().join("ecuflash.wasm")).unwrap();
    let after = rom_info_until(&s, &rom, |i| val(i, "definition") == "null").await;
    assert!(after.contains("(ECUFlash)"), "{after}");
    s.stop().await;
}

/// The cells a 0x8000-byte MSS54 image holds in this test: every byte its
/// offset's low byte, so each table reads distinct, checkable values.
fn mss54_image() -> Vec<u8> {
    (0..0x8000u32).map(|i| (i % 251) as u8).collect()
}

#[tokio::test]
async fn shared_the_xdf_family_dropped_into_a_running_server_reads_and_patches_mss54_tables() {
    let Some(xdf) = fixtures("realworld/ecu-families/tunerpro_xdf") else {
        return;
    };
    let family: PathBuf = plugins().join("tunerpro_xdf.wasm");
    assert!(family.exists(), "run `make plugins`");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let rom = work.join("mss54.bin");
    let image = mss54_image();
    std::fs::write(&rom, &image).unwrap();
    let rom = rom.to_string_lossy().into_owned();
    let plugins = only_plugin("ecu_tables.wasm");
    let s = ecu_server(plugins.path(), &xdf, &work).await;

    // Without the family the XDF is named as unread, with what to do.
    let before = text(&s.ok("rom_info", json!({"rom": rom})).await);
    assert_eq!(val(&before, "definition"), "null", "{before}");
    assert!(
        before.contains("hw2801_V4_Basic.xdf (TunerPro XDF)")
            && before.contains("plugins directory"),
        "{before}"
    );

    std::fs::copy(&family, plugins.path().join("tunerpro_xdf.wasm")).unwrap();
    let info = rom_info_until(&s, &rom, |i| i.contains("definition_format: TunerPro XDF")).await;
    assert_eq!(val(&info, "definition"), "M3 MSS54 DME", "{info}");

    // KL_HFM_ML_U: 33 signed 16-bit big-endian cells at 0x608C, x/4 kg/h.
    let listed = text(
        &s.ok("list_tables", json!({"rom": rom, "search": "KL_HFM_ML_U"}))
            .await,
    );
    let name = markdown_rows(&listed)
        .into_iter()
        .skip(1)
        .map(|r| r[0].clone())
        .next()
        .unwrap_or_else(|| panic!("KL_HFM_ML_U not listed:\n{listed}"));
    let read = text(&s.ok("read_table", json!({"rom": rom, "table": name})).await);
    let got = cells(&read);
    assert_eq!(got.len(), 33, "{read}");
    for (i, row) in got.iter().enumerate() {
        let at = 0x608C + 2 * i;
        let raw = i16::from_be_bytes([image[at], image[at + 1]]) as f64;
        let shown: f64 = row[0].parse().unwrap_or_else(|_| panic!("{read}"));
        // Shown with the XDF's one decimal place.
        assert!(
            (shown - raw / 4.0).abs() <= 0.051,
            "cell {i}: {shown} vs {}",
            raw / 4.0
        );
    }

    // Every table the family lists reads.
    let listing = text(
        &s.ok("list_tables", json!({"rom": rom, "limit": 1000}))
            .await,
    );
    let names: Vec<String> = markdown_rows(&listing)
        .into_iter()
        .skip(1)
        .map(|r| r[0].clone())
        .collect();
    assert!(names.len() > 400, "{listing}");
    for name in &names {
        let r = s
            .call("read_table", json!({"rom": rom, "table": name}))
            .await;
        assert!(r.is_error != Some(true), "{name}: {}", text(&r));
    }

    // A patch through the family reads back; the XDF names no checksum.
    let constant = "Gearbox Type Configuration";
    let patched = text(
        &s.ok(
            "patch_table",
            json!({"rom": rom, "table": constant, "op": "set", "value": -5}),
        )
        .await,
    );
    assert!(patched.contains("checksum was NOT updated"), "{patched}");
    let read = text(
        &s.ok("read_table", json!({"rom": rom, "table": constant}))
            .await,
    );
    assert_eq!(cells(&read)[0][0].parse::<f64>().unwrap(), -5.0, "{read}");
    assert_eq!(std::fs::read(&rom).unwrap()[0x8], (-5i8) as u8);

    // Removed, the family's images are unrecognized again, and said why.
    std::fs::remove_file(plugins.path().join("tunerpro_xdf.wasm")).unwrap();
    let after = rom_info_until(&s, &rom, |i| val(i, "definition") == "null").await;
    assert!(
        after.contains("hw2801_V4_Basic.xdf (TunerPro XDF)"),
        "{after}"
    );
    s.stop().await;
}

/// ecu-tables beside the test family `family` (its config lines
/// `settings`), with a 16-byte ROM in a workspace that is also the
/// definitions folder.
struct TestFamily {
    server: Server,
    /// The ROM's path.
    rom: String,
    /// The workspace.
    work: PathBuf,
    /// The config file (outside the read-write grant: a plugin that could
    /// write it is refused).
    config: PathBuf,
    _dirs: [tempfile::TempDir; 2],
}

async fn with_test_family(family: &str, settings: &str) -> TestFamily {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let rom = work.join("tiny.bin");
    std::fs::write(&rom, [0u8; 16]).unwrap();
    let etc = tempfile::tempdir().unwrap();
    let config = etc.path().join("benchtop.toml");
    std::fs::write(
        &config,
        format!(
            "[[plugin]]\npath = {:?}\n\n[[plugin]]\npath = {:?}\n{settings}",
            plugins().join("ecu_tables.wasm"),
            test_plugins().join(family),
        ),
    )
    .unwrap();
    let server = Server::start(&[
        "--config",
        config.to_str().unwrap(),
        "--definitions-path",
        work.to_str().unwrap(),
        "--allow",
        &format!("{}:rw", work.display()),
        "--workspace",
        work.to_str().unwrap(),
    ])
    .await;
    TestFamily {
        server,
        rom: rom.to_string_lossy().into_owned(),
        work,
        config,
        _dirs: [dir, etc],
    }
}

/// A family built against another shape of the family interface (an
/// out-of-date third-party build) is reported as unusable, saying what
/// differs, before anything runs: its answers would otherwise make
/// ecu-tables trap and lose every user's cached ROMs.
#[tokio::test]
async fn a_family_in_another_shape_is_refused_and_said_why() {
    let TestFamily {
        server: s,
        rom,
        config,
        _dirs,
        ..
    } = with_test_family("shifted_family.wasm", "").await;
    for _ in 0..2 {
        let info = text(&s.call("rom_info", json!({"rom": rom})).await);
        assert!(
            info.contains("the definition family served by plugin `shifted-family` cannot be used")
                && info.contains("serves benchtop:ecu-family/family@0.1.0 in another shape")
                && info.contains(
                    "`extensions` returns result<list<u32>, string> where result<list<string>, string> is expected"
                )
                && info.contains("it has no `claims`")
                && info.contains("nothing ran"),
            "{info}"
        );
        // ecu-tables itself never trapped.
        assert!(!info.contains("was reset"), "{info}");
    }
    s.stop().await;
    // The listing says so too, before any call.
    let out = std::process::Command::new(bin())
        .args(["tools", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("  uses benchtop:ecu-family/family@0.1.0 from no loaded plugin\n")
            && listing.contains(
                "    not from shifted-family, which serves it in another shape: `extensions` returns"
            ),
        "{listing}"
    );
}

/// A family that traps, never returns or answers what the tools cannot
/// use is reported by the ECU tools, which keep serving: a peer call that
/// fails reaches ecu-tables as an error, never as a trap of its own.
#[tokio::test]
async fn a_faulty_family_is_reported_and_the_ecu_tools_keep_serving() {
    let TestFamily {
        server: s,
        rom,
        work,
        _dirs,
        ..
    } = with_test_family("faulty_family.wasm", "deadline_ms = 1500\n").await;
    let defs = work.join("a.faulty");
    for (fault, expected) in [
        ("trap", "panicked"),
        ("loop", "deadline"),
        ("nonsense", "definition: Faulty"),
    ] {
        std::fs::write(&defs, format!("{fault}\n")).unwrap();
        // A new stamp, so the file is asked about again.
        let info = rom_info_until(&s, &rom, |i| {
            i.contains(expected) || (fault == "nonsense" && i.contains("definition: Faulty"))
        })
        .await;
        assert!(info.contains(expected), "{fault}: {info}");
        std::fs::remove_file(&defs).unwrap();
    }
    // The unusable table is listed as unreadable, with why.
    std::fs::write(&defs, "nonsense\n").unwrap();
    let listed = text(&s.ok("list_tables", json!({"rom": rom})).await);
    assert!(
        listed.contains("Nonsense: address 0xFFFFFFFFFFFFFFFF is past 4 GiB"),
        "{listed}"
    );
    // A checksum the family keeps is verified by it, and fixed by it
    // around a patch: the last byte is the sum of the others.
    std::fs::write(&defs, "checksum\n").unwrap();
    let info = rom_info_until(&s, &rom, |i| i.contains("checksum_algorithm: sum8")).await;
    assert_eq!(val(&info, "checksum_valid"), "true", "{info}"); // all zeros
    let patched = text(
        &s.ok(
            "patch_table",
            json!({"rom": rom, "table": "First byte", "op": "set", "value": 7}),
        )
        .await,
    );
    assert_eq!(val(&patched, "checksum_valid"), "true", "{patched}");
    let written = std::fs::read(&rom).unwrap();
    assert_eq!((written[0], written[15]), (7, 7));
    let mut broken = written.clone();
    broken[3] = 1;
    std::fs::write(&rom, &broken).unwrap();
    let info = rom_info_until(&s, &rom, |i| i.contains("checksum_valid: false")).await;
    // Named by its plan; definition_format names the family.
    assert!(info.contains("checksum_algorithm: sum8\n"), "{info}");
    // A family whose fix leaves the checksum wrong is not believed: the
    // patch is refused and the file is left as it was.
    std::fs::write(&defs, "stuck-checksum\n").unwrap();
    rom_info_until(&s, &rom, |i| i.contains("checksum_algorithm: sum8-stuck")).await;
    let refused = text(
        &s.err(
            "patch_table",
            json!({"rom": rom, "table": "First byte", "op": "set", "value": 9}),
        )
        .await,
    );
    assert!(
        refused.contains("sum8-stuck checksum did not validate after fixing"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&rom).unwrap(), broken);

    // A definition that includes another (as ECUFlash files include their
    // base) is resolved from both files, and says so when its base goes.
    std::fs::remove_file(&defs).unwrap();
    std::fs::write(work.join("child.faulty"), "child\n").unwrap();
    std::fs::write(work.join("base.faulty"), "base\n").unwrap();
    let info = rom_info_until(&s, &rom, |i| i.contains("definition: Child")).await;
    assert!(!info.contains("includes `Base`"), "{info}");
    let listed = text(&s.ok("list_tables", json!({"rom": rom})).await);
    assert!(
        listed.contains("Child byte") && listed.contains("Base byte"),
        "{listed}"
    );
    let read = text(
        &s.ok("read_table", json!({"rom": rom, "table": "Base byte"}))
            .await,
    );
    assert_eq!(cells(&read), [["1"]], "{read}");
    // Without its base the match fails, saying what to add (ECUFlash's
    // rule, the same for every family).
    std::fs::remove_file(work.join("base.faulty")).unwrap();
    let missing = rom_info_until(&s, &rom, |i| {
        i.contains("<include>Base</include> not found")
    })
    .await;
    assert!(
        missing.starts_with("BAD_DEFINITION") && missing.contains("add the base definition"),
        "{missing}"
    );
    s.stop().await;
}
