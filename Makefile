# benchtop — `make run` serves the bundled samples; `make test` runs every test.
CARGO ?= cargo
BENCHTOP := target/debug/benchtop
RUN_WS := target/run-workspace

.PHONY: all build host plugins wasm-target run test test-unit test-shared bench fmt lint clean-run help

all: build

help:
	@echo "make run          build everything and serve the bundled samples over stdio"
	@echo "make test         run every test (unit + end-to-end)"
	@echo "make test-shared  run the tests that use ../shared/fixtures"
	@echo "make bench        print the benchmark table"
	@echo "make plugins      build the plugin components into target/plugins"

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

plugins: wasm-target
	$(CARGO) run -q -p xtask -- plugins

host:
	$(CARGO) build -p benchtop

build: host plugins

# A scratch copy of samples/ so that patching a ROM never dirties the repository.
run: build
	@rm -rf $(RUN_WS) && mkdir -p $(RUN_WS) && cp -R samples/. $(RUN_WS)/
	$(BENCHTOP) serve --plugins target/plugins --workspace $(RUN_WS) --allow $(RUN_WS):rw \
		--definitions-path $(RUN_WS)/ecu/definitions --logs-dir $(RUN_WS)/logs \
		$(RUN_ARGS)

test: build
	$(CARGO) test --workspace -- --skip shared_

test-shared: build
	@if [ -d ../shared/fixtures ]; then \
		$(CARGO) test --workspace -- shared_ ; \
	else \
		echo "make test-shared: ../shared/fixtures not found; nothing to run (the fixture tests skip cleanly)"; \
	fi

bench: wasm-target
	$(CARGO) run -q -p xtask -- plugins
	$(CARGO) build --profile bench -p benchtop
	$(CARGO) run -q --profile bench -p bench

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
