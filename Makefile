# benchtop — `make run` serves the bundled samples; `make test` runs every test.
CARGO ?= cargo
BENCHTOP := target/debug/benchtop
RUN_WS := target/run-workspace

.PHONY: all build host plugins wasm-target run test test-unit test-shared test-scale bench fmt lint clean-run help web fuzz fuzz-short soak dist container package

all: build

help:
	@echo "make run          build everything and serve the bundled samples over stdio"
	@echo "make test         run every test (unit + end-to-end)"
	@echo "make test-shared  run the tests that use ../shared/fixtures"
	@echo "make test-scale   Redis, 3 replicas and HAProxy on loopback; 30 clients, a replica killed mid-run"
	@echo "make bench        print the benchmark table"
	@echo "make soak         20,000 HTTP sessions opened, subscribed and closed; RSS must stay flat"
	@echo "make fuzz         run every fuzz target to FUZZ_RUNS (default 10 million) executions, one at a time"
	@echo "make plugins      build the plugin components into target/plugins"
	@echo "make dist         release archive, MCP Bundle, server.json and checksums in target/dist"
	@echo "make package      the crates.io packages of benchtop and its crates, in target/package"
	@echo "make web          transpile cp1600 + x86_inspect with jco into the web bench (web/dist)"

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

plugins: wasm-target
	$(CARGO) run -q -p xtask -- plugins

host:
	$(CARGO) build -p benchtop -p ble-bridge-sim

# Plugins first: the host embeds them (host/build.rs).
build: plugins host

# Serves benchtop.toml: all plugins on a scratch copy of samples/ (so patching
# a ROM never dirties the repository), with the BLE bridge simulator feeding
# ble-buffer. Extra options: make run RUN_ARGS="--http 127.0.0.1:8081".
# stdout is the JSON-RPC stream, so the build reports on stderr.
run:
	@$(MAKE) --no-print-directory build >&2
	@rm -rf $(RUN_WS) && mkdir -p $(RUN_WS) && cp -R samples/. $(RUN_WS)/
	@target/debug/ble-bridge-sim --port 8080 --rate 5 >/dev/null 2>&1 & sim=$$!; \
	trap 'kill $$sim 2>/dev/null' EXIT INT TERM; \
	$(BENCHTOP) serve --config benchtop.toml $(RUN_ARGS)

test: build
	$(CARGO) test --workspace --exclude bench -- --skip shared_

# Fixture tests (each skips cleanly when ../shared/fixtures is absent), then
# real clients (the MCP Inspector CLI, the Python SDK, the official
# conformance suite), the web bench and the MCP Apps views (tests/views) in
# headless Chromium, and a short pass of every fuzz target.
test-shared: build
	@[ -d ../shared/fixtures ] || echo "make test-shared: ../shared/fixtures not found; the fixture tests will skip"
	$(CARGO) test --workspace --exclude bench -- shared_
	tests/node/clients.sh
	tests/node/dist.sh
	web/test.sh
	tests/views/test.sh
	@$(MAKE) --no-print-directory fuzz-short

# Past one machine (issue 33): Redis, three replicas and HAProxy (with
# deploy/haproxy.cfg) on loopback; 30 clients each drive a cp1600 session
# and an x86 machine while a replica is killed and restarted, and every
# final state must equal one process's. Also checks the deploy/ files'
# syntax (what this machine cannot run: containers, Kubernetes).
# SCALE_CLIENTS and SCALE_STEPS size the run.
DEPLOY_ENV := BENCHTOP_LB_BIND=127.0.0.1:8080 BENCHTOP_R1=127.0.0.1:8101 BENCHTOP_R2=127.0.0.1:8102 BENCHTOP_R3=127.0.0.1:8103
test-scale: build
	@command -v redis-server >/dev/null && command -v haproxy >/dev/null || { echo "make test-scale needs redis-server and haproxy: apt-get install -y redis-server haproxy"; exit 1; }
	$(DEPLOY_ENV) haproxy -c -q -f deploy/haproxy.cfg
	python3 -c 'import sys, yaml; [list(yaml.safe_load_all(open(f))) for f in sys.argv[1:]]' deploy/compose.yaml deploy/kubernetes/*.yaml
	$(CARGO) test -p state-store
	$(CARGO) test -p e2e --test scale -- --ignored --nocapture --test-threads=1

# What a user installs without a clone (xtask/src/dist.rs): a release
# binary carrying the plugins, as an archive and an MCP Bundle (packed and
# validated by the official mcpb CLI from tests/node), with server.json.
dist: plugins
	$(CARGO) build --release -p benchtop
	@cd tests/node && { [ -x node_modules/.bin/mcpb ] || npm ci --no-audit --no-fund --loglevel=error; }
	$(CARGO) run -q -p xtask -- dist target/release/benchtop

# The crates.io packages: `benchtop` and the workspace crates it needs,
# with the plugins and the WIT files it embeds copied into host/bundle
# (removed again after, so it never shadows target/plugins in a build).
# `cargo install benchtop` then builds a binary carrying the plugins with
# no wasm toolchain. PACKAGE_ARGS=--no-verify skips building the packages.
PACKAGE_CRATES := -p wit-docs -p benchtop-wit -p jsonrpc-framing -p plugin-kit -p plugin-registry -p state-store -p benchtop
package: plugins
	rm -rf host/bundle && mkdir -p host/bundle/wit/host host/bundle/wit/ecu-family
	cp target/plugins/*.wasm host/bundle/
	cp wit/host/host.wit host/bundle/wit/host/ && cp wit/ecu-family/ecu-family.wit host/bundle/wit/ecu-family/
	$(CARGO) package --allow-dirty $(PACKAGE_ARGS) $(PACKAGE_CRATES); status=$$?; rm -rf host/bundle; exit $$status

# The Containerfile's image, where a container builder runs; skipped
# (successfully, with a note) where none does.
container:
	@if command -v podman >/dev/null 2>&1 && podman info >/dev/null 2>&1; then \
		podman build -f Containerfile -t benchtop .; \
	elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then \
		docker build -f Containerfile -t benchtop .; \
	else \
		echo "make container: no running podman or docker here; skipped (the Containerfile is unchanged)"; \
	fi

# Fuzz targets for every parser of outside data (fuzz/, cargo-fuzz on stable
# with RUSTC_BOOTSTRAP=1; fuzz/run.sh installs cargo-fuzz when missing and
# builds into fuzz/target). Each target starts from its seed corpus in
# fuzz/corpus-seed; a crash fails the run and leaves its input in fuzz/artifacts.
# `make fuzz` runs each target, one after another, to FUZZ_RUNS executions
# (capped at FUZZ_SECONDS per target; 0 = no cap). `make fuzz FUZZ_RUNS=
# FUZZ_SECONDS=300` runs each for a fixed time instead.
FUZZ_RUNS ?= 10000000
FUZZ_SECONDS ?= 0
fuzz:
	FUZZ_RUNS=$(FUZZ_RUNS) fuzz/run.sh $(FUZZ_SECONDS)

# The quick pass that ends make test-shared: 12 s per target.
fuzz-short:
	fuzz/run.sh 12

# The long run of the closed-session test (`make test` runs 1,500 cycles):
# SOAK_CYCLES sessions opened, subscribed and closed over HTTP, the
# server's RSS flat within 10 % after the first fifth.
SOAK_CYCLES ?= 20000
soak: build
	SOAK_CYCLES=$(SOAK_CYCLES) $(CARGO) test -p e2e --test hardening_host closed_http_sessions -- --nocapture

# The web bench: the cp1600 and x86_inspect components, as built above,
# transpiled by jco into browser modules in web/dist (served by
# `benchtop serve --http ADDR --web web/dist`). Needs Node and npm.
web:
	@[ -f target/plugins/cp1600.wasm ] && [ -f target/plugins/x86_inspect.wasm ] || $(MAKE) plugins
	@cd web && if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
		npm ci --no-audit --no-fund --loglevel=error; fi
	cd web && node build.mjs

# The DuckDB comparison needs its Python package; without it those rows say n/a.
bench: wasm-target
	@python3 -c "import duckdb" 2>/dev/null || python3 -m pip install -q duckdb || echo "bench: DuckDB unavailable; its rows will say n/a"
	$(CARGO) run -q -p xtask -- plugins
	$(CARGO) build --profile bench -p benchtop -p ble-bridge-sim
	$(CARGO) run -q --profile bench -p bench

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) run -q -p xtask -- layers
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
