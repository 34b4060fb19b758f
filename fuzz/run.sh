#!/usr/bin/env bash
# Runs each fuzz target in turn, for a bounded number of executions and a
# bounded time, and prints per target: executions, executions a second, RSS
# once the corpus is loaded and at its peak, the slowest input, and whether
# it crashed, hung or ran out of memory.
#
#   fuzz/run.sh [-n RUNS] [-t SECONDS] [--merge] [TARGET...]
#
# RUNS defaults to 10,000,000 and SECONDS (each target's limit) to 3600;
# TARGETS to all seven. One target at a time: the machines this runs on are
# small. Builds with cargo-fuzz (nightly, AddressSanitizer, debug assertions
# and overflow checks); installs cargo-fuzz when missing.
#
# Each target starts from fuzz/corpus/<target>/ (committed: the seeds from
# the tests and what earlier runs kept) and writes what it finds new to
# fuzz/work/<target>/; --merge then adds to fuzz/corpus/<target>/ only the
# inputs of work/ that cover something the corpus does not. A crash, hang
# (-timeout) or allocation past the limit (-rss_limit_mb, -malloc_limit_mb)
# stops the target and leaves its input in fuzz/artifacts/<target>/; replay
# it with `cargo +nightly fuzz run --fuzz-dir fuzz TARGET FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10000000
seconds=3600
merge=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) runs="$2"; shift 2 ;;
        -t) seconds="$2"; shift 2 ;;
        --merge) merge=1; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(head chunked fcgi_record fcgi_response config proxy_protocol hpack)

# Inputs up to 4 KB (libFuzzer's default), 10 s at most per input, and
# 2 GB of memory: far above what any target needs, so that reaching either
# limit is a finding, not noise.
max_len=4096
timeout=10
rss_mb=2048

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz
target_dir="${CARGO_TARGET_DIR:-$PWD/fuzz/target}"
cargo +nightly fuzz build --fuzz-dir fuzz --target-dir "$target_dir" >&2
bin="$target_dir/x86_64-unknown-linux-gnu/release"

printf '%-14s %12s %8s %10s %10s %9s  %s\n' target executions exec/s "rss start" "rss peak" slowest result
status=0
for t in "${targets[@]}"; do
    corpus="fuzz/corpus/$t"
    work="fuzz/work/$t"
    artifacts="fuzz/artifacts/$t"
    log="fuzz/work/$t.log"
    mkdir -p "$work" "$artifacts"
    before=$(ls "$artifacts" | wc -l)
    set +e
    # A small quarantine for freed memory, so that peak RSS shows what the
    # target holds rather than what AddressSanitizer keeps to catch use after free.
    ASAN_OPTIONS="quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}" "$bin/$t" "$work" "$corpus" -runs="$runs" -max_total_time="$seconds" -max_len=$max_len \
        -timeout=$timeout -rss_limit_mb=$rss_mb -malloc_limit_mb=$rss_mb \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
    execs=$(stat number_of_executed_units)
    per_sec=$(stat average_exec_per_sec)
    peak=$(stat peak_rss_mb)
    slowest=$(stat slowest_unit_time_sec)
    start_rss=$(sed -n 's/.*INITED.* rss: \([0-9]*\)Mb.*/\1/p' "$log" | head -1)
    found=$(( $(ls "$artifacts" | wc -l) - before ))
    if [ $rc -eq 0 ] && [ "$found" -eq 0 ]; then
        result="ok"
    else
        result="FAILED (exit $rc): $(grep -m1 -o 'ERROR: libFuzzer: [a-z-]*\|panicked at [^ ]*\|ERROR: AddressSanitizer: [a-z-]*' "$log" || true); see $log and $artifacts/"
        status=1
    fi
    printf '%-14s %12s %8s %8sMB %8sMB %8ss  %s\n' "$t" "${execs:-?}" "${per_sec:-?}" "${start_rss:-?}" "${peak:-?}" "${slowest:-?}" "$result"
    if [ $merge -eq 1 ] && [ "$result" = ok ]; then
        "$bin/$t" -merge=1 -max_len=$max_len "$corpus" "$work" >>"$log" 2>&1
        echo "    merged: $(ls "$corpus" | wc -l) inputs in $corpus" >&2
    fi
done
exit $status
