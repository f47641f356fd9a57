//! Hardening of the files a plugin writes (issue 22, items 1, 2 and the
//! ecu-tables part of 10): two servers patching one ROM lose nothing, a
//! patch keeps the ROM's mode and patches a symlink's target, and hostile
//! scaling expressions give errors that name the file and the table. Item
//! 11 of the security review: 100 KB arguments are not echoed whole.
//!
//! Figures print with `cargo test -p e2e --test hardening_files --
//! --nocapture`.

use e2e::hardening::{ecu_server, sample_defs, serial};
use e2e::{Server, field, is_error, only_plugin, repo, sigkill, text};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn sample_rom() -> PathBuf {
    repo().join("samples/ecu/BT000001.bin")
}

/// The ecu-tables plugin under test, alone in a plugins directory:
/// `HARDENING_ECU_WASM` names another build of it (an older commit's, to see
/// these tests fail there).
fn ecu_plugin() -> tempfile::TempDir {
    match std::env::var_os("HARDENING_ECU_WASM") {
        Some(path) => {
            let dir = tempfile::tempdir().unwrap();
            std::fs::copy(&path, dir.path().join("ecu_tables.wasm")).unwrap();
            e2e::add_ecu_families(dir.path());
            dir
        }
        None => e2e::ecu_plugins(),
    }
}

const TABLE: &str = "Ignition Timing Base Map";

/// `add 0.5` (one raw step) to one cell of the 12x10 timing map.
fn add_args(rom: &Path, cell: usize) -> Value {
    json!({"rom": rom.to_str().unwrap(), "table": TABLE, "op": "add", "value": 0.5,
           "row": cell / 10, "col": cell % 10})
}

/// Files beside the ROM other than the ROM itself (temp or lock files left).
fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect();
    v.sort();
    v
}

/// Adds to each cell in turn; the failures, and the slowest call.
async fn patch_cells(
    s: &Server,
    rom: &Path,
    cells: std::ops::Range<usize>,
) -> (Vec<String>, Duration) {
    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    for cell in cells {
        let t = Instant::now();
        let r = s.call("patch_table", add_args(rom, cell)).await;
        slowest = slowest.max(t.elapsed());
        if is_error(&r) {
            failures.push(format!("cell {cell}: {}", text(&r)));
        }
    }
    (failures, slowest)
}

/// The x86 snapshot format x86-inspect writes (its `SNAPSHOT_VERSION`).
const X86_SNAPSHOT_VERSION: u16 = 3;

/// Two `benchtop serve` processes each apply 20 `add` patches to their own
/// cells of one ROM at the same time, five times over. Adds to different
/// cells commute, so the ROM must end byte for byte as the same 40 patches
/// applied one after another, and every call must succeed.
#[tokio::test]
async fn two_servers_patching_one_rom_lose_nothing() {
    let _serial = serial().await;
    const ROUNDS: usize = 5;
    const PER_SERVER: usize = 20;
    let plugins = ecu_plugin();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let original = std::fs::read(sample_rom()).unwrap();
    let a = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    let b = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    let c = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    let mut reads_done = 0;

    // The reference: all 40 patches, one after another, by one server.
    let reference_rom = dir.join("reference.bin");
    std::fs::write(&reference_rom, &original).unwrap();
    for cell in 0..2 * PER_SERVER {
        a.ok("patch_table", add_args(&reference_rom, cell)).await;
    }
    let reference = std::fs::read(&reference_rom).unwrap();
    std::fs::remove_file(&reference_rom).unwrap();
    assert_ne!(reference, original);

    let rom = dir.join("BT000001.bin");
    let mut longest = Duration::ZERO;
    let started = Instant::now();
    for round in 0..ROUNDS {
        std::fs::write(&rom, &original).unwrap();
        let done = AtomicBool::new(false);
        let patches = async {
            let r = tokio::join!(
                patch_cells(&a, &rom, 0..PER_SERVER),
                patch_cells(&b, &rom, PER_SERVER..2 * PER_SERVER)
            );
            done.store(true, Ordering::SeqCst);
            r
        };
        // A third server reads the ROM all along: it must always find a
        // whole image (a valid checksum), never one half-rewritten.
        let reads = async {
            let mut bad = Vec::new();
            let mut n = 0;
            while !done.load(Ordering::SeqCst) {
                let r = c
                    .call("rom_info", json!({"rom": rom.to_str().unwrap()}))
                    .await;
                n += 1;
                if is_error(&r) || field(&text(&r), "checksum_valid").as_deref() != Some("true") {
                    bad.push(text(&r));
                }
            }
            (n, bad)
        };
        let (((fa, sa), (fb, sb)), (n, bad)) = tokio::join!(patches, reads);
        reads_done += n;
        assert!(bad.is_empty(), "round {round}: a reader saw {bad:#?}");
        longest = longest.max(sa).max(sb);
        let failures: Vec<String> = fa.into_iter().chain(fb).collect();
        assert!(
            failures.is_empty(),
            "round {round}: {} of {} patches failed: {failures:#?}",
            failures.len(),
            2 * PER_SERVER
        );
        let now = std::fs::read(&rom).unwrap();
        let lost = now.iter().zip(&reference).filter(|(x, y)| x != y).count();
        assert!(
            now == reference,
            "round {round}: every patch reported success but the ROM differs from the 40 patches applied in turn ({lost} bytes differ)"
        );
        assert_eq!(
            others(&dir, &["BT000001.bin"]),
            Vec::<String>::new(),
            "round {round}: temp or lock files left"
        );
    }
    a.stop().await;
    b.stop().await;
    c.stop().await;
    println!(
        "two servers x {PER_SERVER} add patches on one ROM, {ROUNDS} rounds: {} patches, all on disk; {reads_done} reads beside them, all whole images; slowest call {:.0} ms; {:.1} s in all",
        ROUNDS * 2 * PER_SERVER,
        longest.as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64()
    );
}

/// A server killed while it holds a ROM's write lock leaves the lock file.
/// The next patch, from another server, waits until the lock has stayed
/// unchanged for the lease (5 s), breaks it, patches, and removes what the
/// killed write left; a live holder's lock is never broken (unit-tested in
/// plugin_kit::safe_write, and above: no patch of two busy servers fails).
#[tokio::test]
async fn a_killed_writers_lock_is_broken_after_the_lease() {
    let _serial = serial().await;
    let plugins = ecu_plugin();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let original = std::fs::read(sample_rom()).unwrap();
    let rom = dir.join("BT000001.bin");
    let lock = dir.join(".BT000001.bin.lock.tmp");
    let mut kills = 0;
    while !lock.exists() {
        kills += 1;
        assert!(kills <= 40, "no kill landed while the lock was held");
        std::fs::write(&rom, &original).unwrap();
        let s = Arc::new(ecu_server(plugins.path(), &sample_defs(), &dir).await);
        let pid = s.pid.expect("a child process");
        let writer = {
            let (s, rom) = (s.clone(), rom.clone());
            tokio::spawn(async move {
                for cell in (0..120).cycle() {
                    if s.try_call("patch_table", add_args(&rom, cell))
                        .await
                        .is_err()
                    {
                        return; // the server is gone
                    }
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(20 + (kills * 37) % 150)).await;
        sigkill(pid);
        tokio::time::timeout(Duration::from_secs(10), writer)
            .await
            .expect("the client notices the kill")
            .unwrap();
    }
    let left = others(&dir, &["BT000001.bin"]);
    let t = Instant::now();
    let s = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    let r = s.ok("patch_table", add_args(&rom, 0)).await;
    let waited = t.elapsed();
    let info = text(
        &s.ok("rom_info", json!({"rom": rom.to_str().unwrap()}))
            .await,
    );
    s.stop().await;
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(20),
        "the dead lock was broken after {waited:?}, not after the 5 s lease: {}",
        text(&r)
    );
    assert_eq!(
        field(&info, "checksum_valid").as_deref(),
        Some("true"),
        "{info}"
    );
    assert_eq!(
        others(&dir, &["BT000001.bin"]),
        Vec::<String>::new(),
        "what the killed write left is removed"
    );
    println!(
        "a killed writer's lock: left after {kills} kills (with {left:?}); the next patch waited {:.1} s, then broke it and cleaned up",
        waited.as_secs_f64()
    );
}

/// A ROM readable only by its owner stays that way after a patch, keeps
/// its owner, and a hard link to it sees the patch (the inode is kept).
#[cfg(unix)]
#[tokio::test]
async fn a_patch_keeps_the_roms_mode_and_inode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _serial = serial().await;
    let plugins = ecu_plugin();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let rom = dir.join("BT000001.bin");
    let original = std::fs::read(sample_rom()).unwrap();
    std::fs::write(&rom, &original).unwrap();
    std::fs::set_permissions(&rom, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&rom).unwrap();
    let s = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    for cell in [0, 11, 0] {
        s.ok("patch_table", add_args(&rom, cell)).await;
        let after = std::fs::metadata(&rom).unwrap();
        assert_eq!(
            after.permissions().mode() & 0o7777,
            0o600,
            "the patch changed the ROM's mode"
        );
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        assert_eq!(
            after.ino(),
            before.ino(),
            "the ROM was replaced by a new file"
        );
    }
    s.stop().await;
    assert_ne!(std::fs::read(&rom).unwrap(), original);
    assert_eq!(others(&dir, &["BT000001.bin"]), Vec::<String>::new());
}

/// A ROM reached through a symlink inside the grant is patched in its
/// target and the link stays a link; a link leading out of the grants is
/// refused with an error that says so, and nothing changes.
#[cfg(unix)]
#[tokio::test]
async fn a_symlinked_rom_is_patched_in_its_target_or_refused() {
    let _serial = serial().await;
    let plugins = ecu_plugin();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let original = std::fs::read(sample_rom()).unwrap();
    std::fs::create_dir(dir.join("roms")).unwrap();
    let real = dir.join("roms/real.bin");
    std::fs::write(&real, &original).unwrap();
    // Relative, a chain of two, and one through a directory.
    std::os::unix::fs::symlink("roms/real.bin", dir.join("relative.bin")).unwrap();
    std::os::unix::fs::symlink("relative.bin", dir.join("chain.bin")).unwrap();
    std::os::unix::fs::symlink("../relative.bin", dir.join("roms/up.bin")).unwrap();
    // The sandbox follows no absolute link, nor one that climbs out of the
    // grant: both are refused, and neither the link nor its target changes.
    std::os::unix::fs::symlink(&real, dir.join("absolute.bin")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = outside.path().canonicalize().unwrap();
    let secret = outside_dir.join("outside.bin");
    std::fs::write(&secret, &original).unwrap();
    let climb = Path::new("..")
        .join(outside_dir.file_name().unwrap())
        .join("outside.bin");
    assert_eq!(dir.parent(), outside_dir.parent(), "both in the temp dir");
    std::os::unix::fs::symlink(&climb, dir.join("escape.bin")).unwrap();

    let s = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    let mut expected = original.clone();
    for (i, link) in ["relative.bin", "chain.bin", "roms/up.bin"]
        .into_iter()
        .enumerate()
    {
        let r = s.ok("patch_table", add_args(&dir.join(link), i)).await;
        let meta = std::fs::symlink_metadata(dir.join(link)).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "{link} was replaced by a regular file: {}",
            text(&r)
        );
        let now = std::fs::read(&real).unwrap();
        assert_ne!(
            now, expected,
            "patching through {link} did not reach the target"
        );
        expected = now;
    }
    for link in ["absolute.bin", "escape.bin"] {
        let e = text(&s.err("patch_table", add_args(&dir.join(link), 0)).await);
        assert!(
            e.contains(&format!("{link} is a symlink")) && e.contains("not changed"),
            "{e}"
        );
        let meta = std::fs::symlink_metadata(dir.join(link)).unwrap();
        assert!(meta.file_type().is_symlink());
    }
    assert_eq!(std::fs::read(&real).unwrap(), expected);
    assert_eq!(std::fs::read(&secret).unwrap(), original);
    s.stop().await;
    assert_eq!(
        others(&dir.join("roms"), &["real.bin", "up.bin"]),
        Vec::<String>::new()
    );
}

/// Sample definitions copied to `to`, with the base file's `Timing` and
/// `AFR` scalings' `toexpr` replaced.
fn hostile_definitions(to: &Path, timing: &str, afr: &str) {
    let base = "base/benchtop-sample-base.xml";
    std::fs::create_dir_all(to.join("base")).unwrap();
    for entry in std::fs::read_dir(sample_defs()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    let text = std::fs::read_to_string(sample_defs().join(base)).unwrap();
    let text = text
        .replace(r#"toexpr="x/2-10""#, &format!(r#"toexpr="{timing}""#))
        .replace(r#"toexpr="14.7*128/x""#, &format!(r#"toexpr="{afr}""#));
    assert!(text.contains(timing) && text.contains(afr));
    std::fs::write(to.join(base), text).unwrap();
}

/// A scaling expression nested 2,000 deep and a 1,000-term `x^x^…`: each
/// table that uses one is refused with an error naming the definition file,
/// the table and the expression (clipped), the plugin stays up, and the
/// other tables still read. An empty path says it is empty.
#[tokio::test]
async fn hostile_scaling_expressions_are_named_not_crashed_or_hidden() {
    let _serial = serial().await;
    let plugins = ecu_plugin();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let defs = dir.join("defs");
    let deep = format!("{}x{}", "(".repeat(2000), ")".repeat(2000));
    let tower = vec!["x"; 1000].join("^");
    hostile_definitions(&defs, &deep, &tower);
    let rom = dir.join("BT000001.bin");
    std::fs::copy(sample_rom(), &rom).unwrap();
    let s = ecu_server(plugins.path(), &defs, &dir).await;
    let rom_s = rom.to_str().unwrap();

    let read = |table: &str| json!({"rom": rom_s, "table": table});
    let e = text(&s.err("read_table", read(TABLE)).await);
    assert!(
        e.contains("BT000001 2024 Benchtop Sample ECU.xml")
            && e.contains(TABLE)
            && e.contains("toexpr")
            && e.contains("nests too deeply")
            && e.contains("((((")
            && e.len() < 1000,
        "{e}"
    );
    let e = text(&s.err("read_table", read("Fuel Map")).await);
    assert!(
        e.contains("BT000001 2024 Benchtop Sample ECU.xml")
            && e.contains("Fuel Map")
            && e.contains("cannot be read")
            && e.contains("x^x^")
            && e.len() < 1000,
        "{e}"
    );
    // Listed as unreadable, not silently dropped.
    let list = text(&s.ok("list_tables", json!({"rom": rom_s})).await);
    assert!(list.contains("unreadable_tables: 2"), "{list}");
    // Patching them is refused the same way, and nothing is written.
    let before = std::fs::read(&rom).unwrap();
    let e = text(&s.err("patch_table", add_args(&rom, 0)).await);
    assert!(e.contains("nests too deeply"), "{e}");
    assert_eq!(std::fs::read(&rom).unwrap(), before);
    // The plugin is still up and the other tables read.
    s.ok("read_table", read("Boost Target")).await;

    for args in [json!({"rom": ""}), json!({"rom": "  "})] {
        let e = text(&s.err("rom_info", args).await);
        assert!(e.contains("is empty") && !e.contains("directory"), "{e}");
    }
    let e = text(
        &s.err("diff_tables", json!({"rom": rom_s, "other": ""}))
            .await,
    );
    assert!(
        e.contains("`other` is empty") && !e.contains("directory"),
        "{e}"
    );
    s.stop().await;
}

/// Security review item 11, through the real server: list_tables with a
/// 100 KB `search` (and `category`) answers under 4 KiB, and patch_table
/// with a 100 KB `choice` fails under 4 KiB, quoting each clipped; the ROM
/// is not written.
#[tokio::test]
async fn hardening_11_100kb_search_and_choice_are_not_echoed_whole() {
    let _serial = serial().await;
    let plugins = ecu_plugin();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().canonicalize().unwrap();
    let rom = dir.join("BT000001.bin");
    std::fs::copy(sample_rom(), &rom).unwrap();
    let s = ecu_server(plugins.path(), &sample_defs(), &dir).await;
    let rom_s = rom.to_str().unwrap();
    let long = "q".repeat(100_000);
    for key in ["search", "category"] {
        let out = text(&s.ok("list_tables", json!({"rom": rom_s, key: long})).await);
        assert!(
            out.len() < 4096 && out.contains("(100000 characters)"),
            "list_tables {key}: {} bytes: {}",
            out.len(),
            &out[..out.len().min(600)]
        );
    }
    let before = std::fs::read(&rom).unwrap();
    let e = text(
        &s.err(
            "patch_table",
            json!({"rom": rom_s, "table": "Launch Control", "op": "set", "choice": long}),
        )
        .await,
    );
    assert!(
        e.len() < 4096 && e.contains("is not a choice") && e.contains("(100000 characters)"),
        "patch_table: {} bytes: {}",
        e.len(),
        &e[..e.len().min(600)]
    );
    assert_eq!(std::fs::read(&rom).unwrap(), before);
    s.stop().await;
}

/// Hardening item 1: a crafted x86 snapshot deleted a user's ROM. Restore
/// took drive C: from the snapshot's program path after checking only that
/// it named a readable file, so a snapshot re-sealed to name a ROM (which
/// `x86_load_program` refuses) made the ROM's folder drive C:, and the
/// restored program deleted the ROM. Both folders are granted read-write,
/// as in the attack.
#[tokio::test]
async fn a_crafted_x86_snapshot_cannot_reach_a_rom() {
    let _serial = serial().await;
    let base = tempfile::tempdir().unwrap();
    // Folders and files of equal name lengths, so the payload's strings
    // can be swapped in place.
    let (dos, roms) = (base.path().join("dosx"), base.path().join("romx"));
    std::fs::create_dir_all(&dos).unwrap();
    std::fs::create_dir_all(&roms).unwrap();
    // mov ah,41h ; mov dx,name ; int 21h (delete) ; int 20h ; nop ; name
    let mut code = vec![0xB4, 0x41, 0xBA, 0x0A, 0x01, 0xCD, 0x21, 0xCD, 0x20, 0x90];
    code.extend_from_slice(b"ROMA.BIN\0");
    let program = dos.join("DELA.COM");
    std::fs::write(&program, &code).unwrap();
    let rom = roms.join("ROMA.BIN");
    let image: Vec<u8> = (0..128 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&rom, &image).unwrap();

    let plugins = only_plugin("x86_inspect.wasm");
    let allow_dos = format!("{}:rw", dos.display());
    let allow_roms = format!("{}:rw", roms.display());
    let s = Server::start(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &allow_dos,
        "--allow",
        &allow_roms,
    ])
    .await;
    s.ok(
        "x86_load_program",
        json!({"path": program.to_str().unwrap()}),
    )
    .await;
    let snap = e2e::json(&s.ok("x86_snapshot", json!({})).await);
    let taken = snap["snapshot"].as_str().unwrap();
    let (_, payload) =
        plugin_kit::blob::open(*b"X86S", X86_SNAPSHOT_VERSION, usize::MAX, taken).unwrap();
    let swap = |bytes: &[u8], from: &[u8], to: &[u8]| -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let mut out = bytes.to_vec();
        let mut i = 0;
        while i + from.len() <= out.len() {
            if &out[i..i + from.len()] == from {
                out[i..i + from.len()].copy_from_slice(to);
                i += from.len();
            } else {
                i += 1;
            }
        }
        out
    };
    let crafted = swap(
        &payload,
        dos.to_str().unwrap().as_bytes(),
        roms.to_str().unwrap().as_bytes(),
    );
    let crafted = swap(&crafted, b"DELA.COM", b"ROMA.BIN");
    assert_ne!(crafted, payload, "the paths were found and swapped");
    let crafted = plugin_kit::blob::seal(*b"X86S", X86_SNAPSHOT_VERSION, &crafted);

    let r = s
        .call("x86_restore_machine", json!({"snapshot": crafted}))
        .await;
    println!("restoring a snapshot that names a ROM: {}", text(&r));
    assert!(is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("would load"), "{}", text(&r));
    // Had it restored, a run would delete the ROM: run the default
    // machine anyway, which is the honest one and deletes nothing there.
    s.ok("x86_run", json!({})).await;
    assert_eq!(std::fs::read(&rom).unwrap(), image, "the ROM is intact");
    s.stop().await;
}

/// Hardening item 2: a crafted x86 snapshot whose stdout total was near
/// 2^64 restored; the next write wrapped it and reading the console
/// panicked, resetting the plugin and every client's machines with it.
#[tokio::test]
async fn a_crafted_x86_snapshot_cannot_wrap_a_console_counter() {
    let _serial = serial().await;
    let dos = tempfile::tempdir().unwrap();
    let program = dos.path().join("GREET.COM");
    std::fs::copy(repo().join("samples/dos/greet.com"), &program).unwrap();
    let plugins = only_plugin("x86_inspect.wasm");
    let allow = format!("{}:ro", dos.path().display());
    let s = Server::start(&[
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--allow",
        &allow,
    ])
    .await;
    let loaded = e2e::json(
        &s.ok(
            "x86_load_program",
            json!({"path": program.to_str().unwrap()}),
        )
        .await,
    );
    let snap = e2e::json(&s.ok("x86_snapshot", json!({})).await);
    let (_, mut payload) = plugin_kit::blob::open(
        *b"X86S",
        X86_SNAPSHOT_VERSION,
        usize::MAX,
        snap["snapshot"].as_str().unwrap(),
    )
    .unwrap();
    // Drive C:'s path (a u16 length, the bytes), three u64 limits, then
    // stdout's capacity (u32) and its total (u64).
    let root = dos.path().to_str().unwrap().as_bytes();
    let mut with_len = (root.len() as u16).to_le_bytes().to_vec();
    with_len.extend_from_slice(root);
    let at = payload
        .windows(with_len.len())
        .position(|w| w == with_len)
        .expect("drive C: in the payload")
        + with_len.len()
        + 24
        + 4;
    payload[at..at + 8].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
    let crafted = plugin_kit::blob::seal(*b"X86S", X86_SNAPSHOT_VERSION, &payload);
    let r = s
        .call("x86_restore_machine", json!({"snapshot": crafted}))
        .await;
    println!("restoring a stdout total of 2^64 - 2: {}", text(&r));
    assert!(is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("at or over"), "{}", text(&r));
    // The machine loaded before is still there: nothing was reset.
    s.ok("x86_run", json!({"machine": loaded["machine"]})).await;
    let console = e2e::json(
        &s.ok("x86_read_console", json!({"machine": loaded["machine"]}))
            .await,
    );
    assert!(
        console["stdout"].as_str().is_some_and(|o| !o.is_empty()),
        "{console}"
    );
    s.stop().await;
}
