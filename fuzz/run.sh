#!/usr/bin/env bash
# fuzz/run.sh SECONDS [TARGET...] — build every fuzz target once, then run
# each (all of them by default, one after another) for SECONDS seconds from
# its seed corpus, and print a table. With FUZZ_RUNS=N each target runs until
# it has executed N inputs instead, with SECONDS as a cap per target (0: no
# cap); `make fuzz` runs every target to 10 million this way. Exits non-zero when any target crashed (a panic, an
# overflow, a timeout over 10 s, or more than 2 GiB), naming the input that
# did it under fuzz/artifacts/TARGET/.
#
# Stable Rust is enough: cargo-fuzz's nightly-only flags are unlocked with
# RUSTC_BOOTSTRAP=1. cargo-fuzz is installed when missing.
#
# Environment:
#   FUZZ_SANITIZER  none (default) or address. The targets are safe Rust, so
#                   AddressSanitizer finds nothing the panics and overflow
#                   checks would not, and it doubles the build; see fuzz/README.md.
#   FUZZ_JOBS       cargo build jobs (default: cargo's own).
#   FUZZ_RUNS       executions per target (libFuzzer's -runs); unset: run
#                   for SECONDS only.
set -euo pipefail

usage() {
    echo "usage: fuzz/run.sh SECONDS [TARGET...]" >&2
    exit 2
}
[[ $# -ge 1 && $1 =~ ^[0-9]+$ ]] || usage
seconds=$1
shift
runs=${FUZZ_RUNS:-}
[[ -z $runs || $runs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz/run.sh: FUZZ_RUNS must be a positive number, not $runs" >&2; exit 2; }
[[ $seconds -gt 0 || -n $runs ]] || { echo "fuzz/run.sh: SECONDS 0 (no cap) needs FUZZ_RUNS" >&2; exit 2; }

# Per-target libFuzzer flags (one per line), each for a reason.
target_flags() {
    case $1 in
        # Every framing path shows in 1 KiB: the line limit is 200 bytes in
        # the fuzzed mode and JSON nests past 128 levels within 260 bytes;
        # longer inputs only made each execution slower (they are judged
        # whole, line by line, and read in chunks as small as one byte).
        jsonrpc_framing) echo -max_len=1024 ;;
        *) ;;
    esac
}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzz=$root/fuzz
sanitizer=${FUZZ_SANITIZER:-none}

export RUSTC_BOOTSTRAP=1
# Instrumented builds must never share the main workspace's target directory.
export CARGO_TARGET_DIR=$fuzz/target

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

all=$(cargo fuzz list --fuzz-dir "$fuzz")
if [[ $# -gt 0 ]]; then
    targets=("$@")
    for t in "${targets[@]}"; do
        grep -qx "$t" <<<"$all" || { echo "fuzz/run.sh: no target $t; targets: $(echo $all)" >&2; exit 2; }
    done
else
    mapfile -t targets <<<"$all"
fi

jobs=()
[[ -n ${FUZZ_JOBS:-} ]] && jobs=(--jobs "$FUZZ_JOBS")
build_start=$(date +%s)
cargo fuzz build --fuzz-dir "$fuzz" -s "$sanitizer" "${jobs[@]}" >&2
echo "fuzz/run.sh: built ${#targets[@]} targets in $(( $(date +%s) - build_start )) s (sanitizer: $sanitizer)" >&2

triple=$(rustc -vV | sed -n 's/^host: //p')
bin=$CARGO_TARGET_DIR/$triple/release
logs=$CARGO_TARGET_DIR/fuzz-logs
mkdir -p "$logs"

failed=()
short=()
rows=()
for t in "${targets[@]}"; do
    corpus=$fuzz/corpus/$t
    artifacts=$fuzz/artifacts/$t
    mkdir -p "$corpus" "$artifacts"
    # The working corpus starts as (and keeps) a copy of the seeds; what a
    # run adds stays in fuzz/corpus, which is not committed.
    cp -n "$fuzz/corpus-seed/$t/"* "$corpus/" 2>/dev/null || true
    dict=()
    [[ -f $fuzz/dict/$t.dict ]] && dict=("-dict=$fuzz/dict/$t.dict")
    log=$logs/$t.log
    limit=(-max_total_time="$seconds")
    what="for $seconds s"
    if [[ -n $runs ]]; then
        limit+=(-runs="$runs")
        what="to $runs executions"
        # (An `&&` inside $(…) would end the script under `set -e` when
        # there is no cap, the `make fuzz` default.)
        if [[ $seconds -gt 0 ]]; then what+=" (at most $seconds s)"; fi
    fi
    mapfile -t flags < <(target_flags "$t")
    echo "fuzz/run.sh: $t $what ${flags[*]}" >&2
    start=$(date +%s)
    status=0
    "$bin/$t" "$corpus" "${dict[@]}" "${limit[@]}" "${flags[@]}" \
        -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    units=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    crashes=0
    if [[ $status -ne 0 ]]; then
        crashes=1
        failed+=("$t")
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        echo "=== $t crashed (exit $status); input: ${artifact:-see $log}" >&2
        grep -v '^#[0-9]' "$log" | tail -40 >&2
    fi
    rate=$(( ${execs:-0} / (took > 0 ? took : 1) ))
    rows+=("$(printf '%-16s %12s %8s %10s %8s %8s' "$t" "${execs:-?}" "$took" "$rate" "${units:-?}" "$crashes")")
    if [[ -n $runs && $status -eq 0 && ${execs:-0} -lt $runs ]]; then
        short+=("$t")
    fi
done

printf '%-16s %12s %8s %10s %8s %8s\n' target executions seconds execs/s corpus crashes
printf '%s\n' "${rows[@]}"
if [[ ${#short[@]} -gt 0 ]]; then
    echo "fuzz/run.sh: stopped at the $seconds s cap before $runs executions: ${short[*]}" >&2
fi
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz/run.sh: crashes in: ${failed[*]} (inputs under fuzz/artifacts/; logs under $logs)" >&2
    exit 1
fi
