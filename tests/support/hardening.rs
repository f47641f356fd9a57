//! Helpers shared by the hardening suites (`tests/hardening_*.rs`): the
//! scratch workspace with hostile files, the judge of error answers, the
//! plugin copy and the test lock.

use crate::{RawServer, Server, plugins, raw_text, repo, simulator_bin, spawn_simulator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One test at a time (they measure time and memory).
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// The five plugins' component files in target/plugins.
pub const PLUGIN_FILES: [&str; 5] = [
    "ecu_tables.wasm",
    "log_query.wasm",
    "cp1600.wasm",
    "x86_inspect.wasm",
    "ble_buffer.wasm",
];

/// A copy of the five plugins, so a rebuild of target/plugins during the
/// test does not swap anything underneath it.
pub fn plugin_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in PLUGIN_FILES {
        let src = plugins().join(file);
        assert!(src.exists(), "{} missing: run `make build`", src.display());
        std::fs::copy(&src, dir.path().join(file)).unwrap();
    }
    // The families ecu-tables reads definitions through: they serve no
    // tools of their own.
    crate::add_ecu_families(dir.path());
    dir
}

/// Copies a directory tree, leaving every copied file writable.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
            let mut perms = std::fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&dest, perms).unwrap();
        }
    }
}

/// Makes a named pipe (opening one blocks until a writer comes).
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("running mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Deterministic pseudo-random numbers (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A scratch copy of samples/ with hostile files added: the workspace of
/// the bad-argument tests.
pub struct Workspace {
    _tmp: tempfile::TempDir,
    /// The scratch copy of samples/ with `attack/` added.
    pub root: PathBuf,
}

impl Workspace {
    /// Copies samples/ and adds the hostile files.
    // Not `Default`: it writes a directory tree, which a default should not.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Workspace {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("ws");
        copy_dir(&repo().join("samples"), &root);
        let attack = root.join("attack");
        std::fs::create_dir(&attack).unwrap();
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let write = |rel: &str, bytes: &[u8]| std::fs::write(root.join(rel), bytes).unwrap();
        let invalid_utf8: &[u8] = b"\xff\xfe\xc3\x28 \xa0\xa1 \xf0\x28\x8c\xbc\n";

        // Generic: empty, tiny, garbage, not UTF-8, a directory with a
        // file's name, links out of the sandbox and in a loop, a named pipe
        // (opening one blocks until a writer comes).
        write("attack/empty.bin", b"");
        write("attack/one.bin", b"\x01");
        write("attack/odd.bin", b"\x01\x02\x03");
        write("attack/garbage.bin", &rng.bytes(65_536));
        write("attack/invalid_utf8.txt", invalid_utf8);
        std::fs::create_dir(attack.join("dir.bin")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", attack.join("link_out.bin")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", attack.join("link_zero.bin")).unwrap();
        std::os::unix::fs::symlink("loop_b.bin", attack.join("loop_a.bin")).unwrap();
        std::os::unix::fs::symlink("loop_a.bin", attack.join("loop_b.bin")).unwrap();
        mkfifo(&attack.join("fifo.bin"));
        mkfifo(&root.join("logs/zz_fifo.csv"));

        // ECU: a 0-byte and a short ROM, ROMs that match broken definitions.
        let rom = std::fs::read(root.join("ecu/BT000001.bin")).unwrap();
        write("attack/short_rom.bin", &rom[..0x50100]);
        let with_id = |id: [u8; 4]| {
            let mut r = rom.clone();
            r[0x5002a..0x5002e].copy_from_slice(&id);
            r
        };
        write(
            "attack/truncated_def.bin",
            &with_id([0x42, 0x54, 0x00, 0x99]),
        );
        write("attack/cyclic_def.bin", &with_id([0x42, 0x54, 0x00, 0x98]));
        write("attack/huge_def.bin", &with_id([0x42, 0x54, 0x00, 0x97]));
        let defs = root.join("ecu/definitions");
        let romid = |xmlid: &str, hex: &str| {
            format!(
                "<rom>\n<romid><xmlid>{xmlid}</xmlid><internalidaddress>5002a</internalidaddress>\
                 <internalidhex>{hex}</internalidhex><make>X</make><checksummodule>mitsucan</checksummodule></romid>\n"
            )
        };
        std::fs::write(
            defs.join("zz truncated.xml"),
            format!(
                "{}<include>benchtopbase</include>\n<table name=\"Fuel Map\" address=\"51100\">\n<table name=\"Lo",
                romid("BT000099", "42540099")
            ),
        )
        .unwrap();
        std::fs::write(
            defs.join("zz cyclic.xml"),
            format!(
                "{}<include>BT000098</include>\n<table name=\"Boost Target\" address=\"51200\"/>\n</rom>\n",
                romid("BT000098", "42540098")
            ),
        )
        .unwrap();
        // A table that claims a huge size at the end of the ROM, scaled by
        // a division by zero with an absurd format.
        std::fs::write(
            defs.join("zz huge.xml"),
            format!(
                "{}<table name=\"Huge\" category=\"X\" address=\"fffff\" type=\"3D\" scaling=\"x\">\
                 <table name=\"X\" address=\"0\" type=\"X Axis\" elements=\"4294967295\" scaling=\"x\"/>\
                 <table name=\"Y\" address=\"0\" type=\"Y Axis\" elements=\"4294967295\" scaling=\"x\"/></table>\n\
                 <scaling name=\"x\" storagetype=\"uint32\" endian=\"big\" toexpr=\"x/0\" frexpr=\"x*0\" format=\"%99999.99999f\"/>\n</rom>\n",
                romid("BT000097", "42540097")
            ),
        )
        .unwrap();
        std::fs::write(defs.join("zz empty.xml"), b"").unwrap();
        std::fs::write(defs.join("zz invalid utf8.xml"), invalid_utf8).unwrap();

        // Logs: broken CSVs beside the good ones.
        write("logs/zz_empty.csv", b"");
        write("logs/zz_header_only.csv", b"Time,RPM,Load\n");
        write(
            "logs/zz_ragged.csv",
            b"Time,RPM,Load\n0.0,1\n0.1,2,3,4,5\n\n,,\n0.2\n\"unterminated,3\n",
        );
        write("logs/zz_garbage.csv", &rng.bytes(8192));
        let mut bad = b"Time,RPM\n0.0,".to_vec();
        bad.extend_from_slice(invalid_utf8);
        bad.extend_from_slice(b"0.1,900\n");
        write("logs/zz_invalid_utf8.csv", &bad);
        let mut long = b"Time,RPM\n0.0,".to_vec();
        long.extend(std::iter::repeat_n(b'9', 1 << 20));
        long.extend_from_slice(b"\n");
        write("logs/zz_long_line.csv", &long);
        let mut wide = (0..5000)
            .map(|i| format!("c{i}"))
            .collect::<Vec<_>>()
            .join(",");
        wide.push('\n');
        write("logs/zz_wide.csv", wide.as_bytes());

        // CP-1600: odd sizes, too big, a bad Intellicart .rom, a bad .cfg.
        write("attack/huge.bin", &vec![0xAA; 1 << 20]);
        write(
            "attack/bad.rom",
            &[&[0xA8u8, 0x01, 0xFE][..], &rng.bytes(300)].concat(),
        );
        write("attack/withcfg.bin", &[0u8; 64]);
        write("attack/withcfg.cfg", invalid_utf8);
        write(
            "attack/bad.cfg",
            b"[mapping]\n$0000 - $FFFF = $0000\n$FFFF - $0000 = $5000\nnonsense\n[memattr]\n$0000 - $FFFF = RAM 99\n",
        );

        // x86: 0-byte and 1 MB .COM, truncated and absurd MZ headers.
        write("attack/zero.com", b"");
        write("attack/big.com", &vec![0x90; 1 << 20]);
        write("attack/trunc.exe", b"MZ\x10\x00\x01");
        let mut mz = vec![0u8; 64];
        mz[..2].copy_from_slice(b"MZ");
        for at in [2usize, 4, 6, 8, 0x18] {
            mz[at..at + 2].copy_from_slice(&0xFFFFu16.to_le_bytes());
        }
        write("attack/absurd.exe", &mz);

        // btsnoop: bad magic, a record claiming 4 GB, a truncated record.
        write("attack/bad_header.log", b"btsnooX\0\0\0\0\x01\0\0\x03\xea");
        let header = b"btsnoop\0\0\0\0\x01\0\0\x03\xea";
        let mut huge = header.to_vec();
        huge.extend_from_slice(&[0xFF; 8]);
        huge.extend_from_slice(&[0; 16]);
        write("attack/huge_record.log", &huge);
        let sample = std::fs::read(root.join("ble-buffer/btsnoop_hci.log")).unwrap();
        write("attack/truncated.log", &sample[..sample.len() - 7]);
        write("attack/header_only.log", header);

        Workspace { _tmp: tmp, root }
    }

    /// An absolute path inside the workspace.
    pub fn path(&self, rel: &str) -> String {
        self.root.join(rel).to_string_lossy().into_owned()
    }

    /// The files of `attack/` and the broken logs, workspace-relative.
    pub fn hostile_files(&self) -> Vec<String> {
        let mut files: Vec<String> = std::fs::read_dir(self.root.join("attack"))
            .unwrap()
            .map(|e| format!("attack/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        files.extend(
            std::fs::read_dir(self.root.join("logs"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("zz_"))
                .map(|n| format!("logs/{n}")),
        );
        files.sort();
        files
    }
}

/// How calls ended.
#[derive(Default, Clone, Copy)]
pub struct Tally {
    /// Successful results.
    pub ok: usize,
    /// `isError` results.
    pub is_error: usize,
    /// JSON-RPC errors.
    pub rpc_error: usize,
}

impl Tally {
    /// Every call counted.
    pub fn total(&self) -> usize {
        self.ok + self.is_error + self.rpc_error
    }
}

/// Text that must never reach a user: panics, unwraps, Rust Debug dumps.
pub const LEAKS: [&str; 10] = [
    "panicked at",
    "called `Result::unwrap()`",
    "called `Option::unwrap()`",
    "Os { code:",
    "Custom { kind:",
    "Error { kind:",
    "RUST_BACKTRACE",
    "wasm backtrace",
    "ParseIntError {",
    "Utf8Error {",
];

/// Longest acceptable error message: a person reads it.
pub const MAX_MESSAGE: usize = 4096;

/// Checks one response and tallies it; returns a problem, if any.
pub fn judge(response: &Value, tally: &mut Tally, trapped: &mut Vec<String>) -> Option<String> {
    if let Some(error) = response.get("error") {
        tally.rpc_error += 1;
        let msg = error["message"].as_str().unwrap_or("");
        if msg.trim().is_empty() {
            return Some(format!("JSON-RPC error without a message: {error}"));
        }
        if msg.len() > MAX_MESSAGE {
            return Some(format!("JSON-RPC error message of {} bytes", msg.len()));
        }
        if let Some(leak) = LEAKS.iter().find(|l| msg.contains(*l)) {
            return Some(format!("JSON-RPC error leaks `{leak}`: {msg}"));
        }
        return None;
    }
    let result = &response["result"];
    if result.is_null() {
        return Some(format!("neither result nor error: {response}"));
    }
    if result["isError"] != true {
        tally.ok += 1;
        return None;
    }
    tally.is_error += 1;
    let msg = raw_text(response);
    if msg.trim().is_empty() {
        return Some(format!("isError without a message: {result}"));
    }
    if msg.len() > MAX_MESSAGE {
        let head: String = msg.chars().take(200).collect();
        return Some(format!(
            "error message of {} bytes (echoes its input?): {head}…",
            msg.len()
        ));
    }
    if let Some(leak) = LEAKS.iter().find(|l| msg.contains(*l)) {
        return Some(format!("error message leaks `{leak}`: {msg}"));
    }
    if msg.contains("Its instance was reset") {
        trapped.push(msg.clone());
        return Some(format!("the plugin trapped (state lost): {msg}"));
    }
    None
}

/// How long a hardening test waits for one call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(35);

/// A server with all five plugins on a scratch workspace, spoken to raw.
pub async fn fuzz_server(ws: &Workspace, plugins: &Path) -> RawServer {
    let root = ws.root.to_string_lossy().into_owned();
    // A 15 s deadline (cp1600 stops its own runs at 10 s): a call that
    // blocks is cut off sooner than the default 30 s.
    let config = ws.root.join("../benchtop.toml");
    std::fs::write(&config, "[defaults]\ndeadline_ms = 15000\n").unwrap();
    RawServer::start(&[
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
        "--allow",
        &format!("{root}:rw"),
        "--workspace",
        &root,
        "--definitions-path",
        &ws.path("ecu/definitions"),
        "--logs-dir",
        &ws.path("logs"),
        "--no-watch",
    ])
    .await
}

/// The bridge simulator on `port`, streaming `rate` packets a second.
pub fn simulator(port: u16, rate: u32) -> tokio::process::Child {
    spawn_simulator(&simulator_bin(), port, &["--rate", &rate.to_string()]).unwrap()
}

/// The sample ECU definitions (`samples/ecu/definitions`).
pub fn sample_defs() -> PathBuf {
    repo().join("samples/ecu/definitions")
}

/// A server of the plugins in `plugins` with `defs` as the definitions path
/// and `dir` granted read-write: the ROM-writing hardening tests' setup.
pub async fn ecu_server(plugins: &Path, defs: &Path, dir: &Path) -> Server {
    Server::start(&[
        "--plugins",
        plugins.to_str().unwrap(),
        "--definitions-path",
        defs.to_str().unwrap(),
        "--allow",
        &format!("{}:rw", dir.display()),
        "--no-watch",
    ])
    .await
}

/// A minimal HTTP/1.1 exchange (the test needs raw control of headers and
/// of half-sent requests): status, headers (lowercased names) and body.
pub async fn http(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let authority = url
        .strip_prefix("http://")
        .and_then(|u| u.split('/').next())
        .unwrap();
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("the server answers within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// The value of header `name` (lowercase) among `headers`.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}
