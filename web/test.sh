#!/usr/bin/env bash
# The web bench's browser test: builds web/dist (`make web`: jco-transpiled
# plugin components), serves it with `benchtop serve --http`, drives it in
# headless Chromium and checks the registers it shows against the MCP tools.
# Installs what it needs: the npm packages (npm ci) and, when /usr/bin/chromium
# is missing, Debian's chromium. Last line: `web: N passed, N failed`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"

if [ ! -x /usr/bin/chromium ]; then
    echo "web: installing chromium (apt-get)"
    sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
    $sudo_ apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q chromium >/dev/null
fi
${CARGO:-cargo} build -q -p benchtop
make -s web
exec node "$here/test/web.test.mjs"
