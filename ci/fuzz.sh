#!/usr/bin/env bash
# The fuzz targets (fuzz/fuzz_targets/), built and run on the stable
# toolchain: libfuzzer-sys compiles libFuzzer from its C++ sources, and
# rustc adds the coverage instrumentation cargo-fuzz would add
# (SanitizerCoverage: 8-bit edge counters, the PC table, compare tracing)
# with `--cfg fuzzing`. No sanitizer (`-Zsanitizer` is nightly only): what
# fails is a panic, a broken assertion of a target, an overflow, an input
# taking over 10 s, or running out of memory.
#
# Each target runs over a copy of its committed seeds (fuzz/seeds/<target>/,
# written by `GRPC_CHAOS_WRITE_SEEDS=1 cargo test -p grpc-chaos --lib --
# fuzz_seeds`), so a run never writes into the repository. All targets run
# at once, one process each (libFuzzer uses one core): on 2 cores each gets
# about 2/3 of one.
#
#   FUZZ_SECONDS     wall-clock seconds the targets run (default 90: about
#                    60 s of one core each on 2 cores)
#   FUZZ_TARGETS     which targets (default: all three)
#   FUZZ_TARGET_DIR  cargo's target directory (default fuzz/target)
#
# fuzz/ is its own workspace with its own Cargo.lock, built --locked: after
# a change to the harness's dependencies, `cd fuzz && cargo metadata
# --format-version 1 >/dev/null` updates it (minimally) for the commit.
#
# Everything a run leaves is under $FUZZ_TARGET_DIR/fuzz-run/<target>/:
# log, corpus/ (the seeds and what the run added), artifacts/ (an input
# that failed). Fails if any target fails; the log then names the input.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds="${FUZZ_SECONDS:-90}"
read -r -a targets <<<"${FUZZ_TARGETS:-frame_decoder header_block tap}"
target_dir="${FUZZ_TARGET_DIR:-$root/fuzz/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
host=$(rustc -vV | sed -n 's/^host: //p')

# What cargo-fuzz 0.12 passes (project.rs), less its -Z flags. With an
# explicit --target, RUSTFLAGS reaches only the target's code, not build
# scripts and proc macros (which would otherwise need libFuzzer's symbols).
export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing"
start=$(date +%s)
(cd fuzz && cargo build --locked --release --target "$host" --target-dir "$target_dir" \
    $(printf -- '--bin %s ' "${targets[@]}"))
echo "fuzz: built ${targets[*]} in $(($(date +%s) - start)) s wall"
bin="$target_dir/$host/release"

run="$target_dir/fuzz-run"
pids=()
for t in "${targets[@]}"; do
    rm -rf "${run:?}/$t"
    mkdir -p "$run/$t/artifacts"
    cp -r "fuzz/seeds/$t" "$run/$t/corpus"
    # -timeout: seconds one input may take (a few hundred microseconds is
    # usual). -print_final_stats: executions and their rate, for the log.
    (
        begin=$(date +%s)
        rc=0
        "$bin/$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
            -artifact_prefix="$run/$t/artifacts/" "$run/$t/corpus" >"$run/$t/log" 2>&1 || rc=$?
        echo $(($(date +%s) - begin)) >"$run/$t/seconds"
        exit "$rc"
    ) &
    pids+=($!)
done
echo "fuzz: running ${targets[*]} side by side for ${seconds} s wall (logs in $run/<target>/log)"

failed=0
for i in "${!targets[@]}"; do
    t=${targets[$i]}
    log="$run/$t/log"
    rc=0
    wait "${pids[$i]}" || rc=$?
    seeds=$(find "fuzz/seeds/$t" -type f | wc -l)
    # "INITED cov: N": what the seeds reach; the last status line: where
    # the run ended.
    inited=$(grep -m1 -o 'INITED cov: [0-9]* ft: [0-9]*' "$log" | sed 's/INITED //' || true)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]* corp: [^ ]*' || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    added=$(sed -n 's/^stat::new_units_added: *//p' "$log")
    echo "fuzz: $t: ${seeds} seeds (${inited:-?}) -> ${last:-?}; ${execs:-?} executions" \
        "in $(cat "$run/$t/seconds") s, ${rate:-?}/s, ${added:-?} inputs added"
    if [ "$rc" != 0 ]; then
        failed=1
        echo "fuzz: $t FAILED (exit $rc); $log without its progress lines:"
        grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]+NEW_FUNC|^WARNING: Failed to find' "$log" | tail -n 40 || true
        for a in "$run/$t/artifacts/"*; do
            [ -f "$a" ] || continue
            echo "fuzz: $t: the failing input is kept at $a ($(wc -c <"$a") octets)"
            echo "fuzz: run again with its panics shown (FUZZ_SHOW_PANICS=1 $bin/$t $a):"
            FUZZ_SHOW_PANICS=1 "$bin/$t" "$a" 2>&1 | grep -v -E '^INFO:|^WARNING: Failed to find' | tail -n 30 || true
            echo "fuzz: the input in base64 (base64 -d > input to remake it):"
            head -c 16384 "$a" | base64 -w 0
            echo
        done
    fi
done
exit "$failed"
