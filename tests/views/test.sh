#!/usr/bin/env bash
# The MCP Apps views in a test client (every *.test.mjs here): benchtop serve over
# stdio on a temp copy of samples/, the ext-apps SDK's AppBridge in headless
# Chromium. Installs what it needs: the npm packages (npm ci), the bundled
# host page (esbuild) and, when /usr/bin/chromium is missing, Debian's
# chromium. Builds benchtop and any missing plugin. Last line:
# `views: N passed, N failed`. Screenshots go to dist/screenshots (ignored by
# git); `VIEWS_SCREENSHOTS=1 tests/views/test.sh` writes docs/screenshots/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM:-}" ]; then
    echo "views: installing chromium (apt-get)"
    sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
    $sudo_ apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q chromium >/dev/null
fi
${CARGO:-cargo} build -q -p benchtop
for p in ecu_tables log_query cp1600 x86_inspect views; do
    if [ ! -f "target/plugins/$p.wasm" ]; then
        ${CARGO:-cargo} run -q -p xtask -- plugins ecu-tables log-query cp1600 x86-inspect views
        break
    fi
done
cd "$here"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
npm run -s bundle
# Every *.test.mjs here, one after another; each ends with "N passed, N failed".
passed=0; failed=0
for t in *.test.mjs; do
    echo "== $t"
    set +e
    out="$(node "$t" 2>&1)"; code=$?
    set -e
    printf '%s\n' "$out"
    line="$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -1)"
    p="$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line")"; f="$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")"
    if [ -z "$line" ]; then p=0; f=1; echo "FAIL $t ended without its summary (exit $code)"; fi
    if [ "$code" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $t exited with $code"; fi
    passed=$((passed + p)); failed=$((failed + f))
done
echo "views: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
