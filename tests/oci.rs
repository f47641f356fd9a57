//! Plugins from a real OCI registry (Debian's `docker-registry`, the CNCF
//! distribution registry, started here on loopback): pushed, signed with
//! cosign keys, pulled into a running server's plugins directory and
//! verified; unsigned, wrongly signed and tampered components refused
//! while the server keeps serving; an `oci://` config entry loaded at
//! start.

use e2e::*;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};

/// `benchtop plugin ARGS…`, with the key password set.
fn plugin(args: &[&str]) -> Output {
    Command::new(bin())
        .arg("plugin")
        .args(args)
        .env("BENCHTOP_KEY_PASSWORD", "test password")
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

fn refused(out: Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "expected a refusal: {text}");
    text
}

/// Rewrites one byte of the blob with `digest` in the registry's storage.
fn tamper(storage: &Path, digest: &str) {
    let hex = digest.strip_prefix("sha256:").unwrap();
    let data = storage.join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xFF;
    std::fs::write(&data, bytes).unwrap();
}

#[tokio::test]
async fn shared_signed_plugins_travel_through_a_registry_and_others_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let registry = start_registry(d)
        .expect("docker-registry is missing: apt-get install docker-registry (.ci/run does)");
    let repo = |name: &str| format!("oci://{}/acme/{name}:1.0", registry.addr);
    let greeter = test_plugins().join("greeter.wasm");
    let greeter = greeter.to_str().unwrap();
    let trusted = d.join("trusted");
    let other = d.join("other");
    ok(plugin(&["keygen", trusted.to_str().unwrap()]));
    ok(plugin(&["keygen", other.to_str().unwrap()]));
    let trusted_key = trusted.with_extension("key");
    let other_key = other.with_extension("key");

    let plugins = d.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let config = d.join("benchtop.toml");
    std::fs::write(
        &config,
        format!(
            "plugins_dir = {:?}\n\n[[trust]]\nrepository = \"{}/acme/*\"\nkeys = [\"trusted.pub\"]\n",
            plugins,
            registry.addr
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let s = Server::start(&["--config", cfg]).await;
    assert!(s.tool_names().await.is_empty());

    // Signed by the trusted key: pulled into the running server and served.
    let pushed = ok(plugin(&[
        "push",
        greeter,
        &repo("greeter"),
        "--sign",
        trusted_key.to_str().unwrap(),
    ]));
    assert!(pushed.contains("signed"), "{pushed}");
    let pulled = ok(plugin(&["pull", &repo("greeter"), "--config", cfg]));
    assert!(pulled.contains("trusted.pub"), "{pulled}");
    // Hot swap: the watcher loads the file the pull renamed into place.
    let mut tries = 0;
    while !s.tool_names().await.contains(&"hello".to_string()) {
        tries += 1;
        assert!(tries < 100, "the pulled plugin was never loaded");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let hello = text(&s.ok("hello", json!({})).await);
    assert!(hello.to_lowercase().contains("hello"), "{hello}");
    let tools = ok(Command::new(bin())
        .args(["tools", "--config", cfg])
        .output()
        .unwrap());
    assert!(
        tools.contains(&format!("from {}", repo("greeter"))) && tools.contains("signer: key"),
        "{tools}"
    );

    // Unsigned, signed by an untrusted key, altered in the registry: each
    // refused, nothing written, the server still serving.
    ok(plugin(&["push", greeter, &repo("unsigned")]));
    let e = refused(plugin(&["pull", &repo("unsigned"), "--config", cfg]));
    assert!(
        e.contains("it is not signed") && e.contains("benchtop plugin sign"),
        "{e}"
    );
    ok(plugin(&[
        "push",
        greeter,
        &repo("stranger"),
        "--sign",
        other_key.to_str().unwrap(),
    ]));
    let e = refused(plugin(&["pull", &repo("stranger"), "--config", cfg]));
    assert!(e.contains("none by a trusted key"), "{e}");
    // Another component: blobs are stored by digest, shared by artifacts.
    let other_component = test_plugins().join("faulty_family.wasm");
    ok(plugin(&[
        "push",
        other_component.to_str().unwrap(),
        &repo("tampered"),
        "--sign",
        trusted_key.to_str().unwrap(),
    ]));
    let layer = plugin_registry_layer_digest(&std::fs::read(&other_component).unwrap());
    tamper(&registry.storage, &layer);
    let e = refused(plugin(&["pull", &repo("tampered"), "--config", cfg]));
    assert!(e.contains("altered"), "{e}");
    let e = refused(plugin(&[
        "pull",
        &format!("oci://{}/elsewhere/x:1", registry.addr),
        "--config",
        cfg,
    ]));
    assert!(e.contains("no [[trust]] rule"), "{e}");
    let listed: Vec<_> = std::fs::read_dir(&plugins)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wasm"))
        .collect();
    assert_eq!(listed, ["greeter.wasm"]);
    assert_eq!(text(&s.ok("hello", json!({})).await), hello);
    s.stop().await;

    // An `oci://` entry in the config is pulled, verified and loaded at start.
    let at_start = d.join("at-start.toml");
    std::fs::write(
        &at_start,
        format!(
            "cache_dir = {:?}\n\n[[plugin]]\npath = \"{}\"\n\n[[trust]]\nrepository = \"{}/acme/greeter\"\nkeys = [\"trusted.pub\"]\n",
            d.join("cache"),
            repo("greeter"),
            registry.addr
        ),
    )
    .unwrap();
    let s = Server::start(&["--config", at_start.to_str().unwrap()]).await;
    let stderr = s.stderr.lock().unwrap().clone();
    assert!(
        s.tool_names().await.contains(&"hello".to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("signer: key"), "{stderr}");
    s.stop().await;
}

/// The layer digest the registry stores a component under.
fn plugin_registry_layer_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}
