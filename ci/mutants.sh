#!/usr/bin/env bash
# Mutation testing of the harness's rule-bearing modules with cargo-mutants
# (`cargo install cargo-mutants --locked`). Not part of CI: each mutant is a
# rebuild of the harness's unit-test binary, 3 s to minutes on 2 shared cores
# (CONTRIBUTING.md, "Mutation testing", has measured figures).
#
#   ci/mutants.sh                      every module below, one at a time
#   ci/mutants.sh harness/src/spec.rs  only the files given (all unit tests)
#   ci/mutants.sh harness/src/spec.rs=spec::   ... only the tests named
#   MUTANTS_ARGS='--re give_back' ci/mutants.sh harness/src/trace/query/stalls.rs=trace::
#                                      ... only the mutants named (any
#                                      cargo-mutants options, split at spaces:
#                                      --re, --exclude-re)
#   MUTANTS_TIMEOUT=60 ci/mutants.sh ...   a test timeout of 60 s a mutant
#   MUTANTS_BASELINE=skip ci/mutants.sh ... no unmutated baseline run
#
# Mutants are tried in place, one at a time (`--in-place`, which cannot run
# jobs in parallel: the warm `target/` is used, and
# each mutated file is put back before the next); the script stops if a
# mutated file is left behind. The tests are the harness's unit tests
# (`cargo test -p grpc-chaos --lib`, the feature set `ci/check.sh` builds;
# `--lib` to the build as well, so that it builds the test binary alone),
# by default only those of the module and of the code that uses it (after
# `=`, libtest filters): the whole set takes over 2 minutes per mutant on 2
# shared cores. A filter only makes a missed mutant more likely, never a
# caught one.
# The first file runs the unmutated baseline; the later ones skip it.
# The test timeout is 300 s a mutant, 20 s for trace/stalls.rs, whose
# tests take under 1 s and whose mutants include loops that never end
# (MUTANTS_TIMEOUT overrides both).
# Results: target/mutants/<file>/mutants.out/{caught,missed,unviable,timeout}.txt,
# and one summary line per file at the end. CONTRIBUTING.md, "Mutation testing", has
# the last figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
files=("$@")
# The tap's fault engine is exercised by the tap's tests, the property
# tests aside (10 s a run in a debug build).
tap_faults=harness/src/fault
tap_tests="fault:: net::tap::tests net::tap::mock_io net::tap::pair_tests net::tap::fuzzing sim::"
if [ ${#files[@]} -eq 0 ]; then
    files=(
        "harness/src/spec.rs=spec:: check:: trace::"
        "harness/src/deadline.rs=deadline:: retry::"
        "harness/src/retry/backoff.rs=retry::"
        "harness/src/retry/throttle.rs=retry::"
        "harness/src/retry/decide.rs=retry::"
        "harness/src/policy/keepalive.rs=policy::"
        "harness/src/policy/enforce.rs=policy::"
        "harness/src/policy/middlebox.rs=policy::"
        "harness/src/trace/query/stalls.rs=trace::"
        "$tap_faults/rule.rs=$tap_tests"
        "$tap_faults/builtin.rs=$tap_tests"
        "$tap_faults/frame.rs=$tap_tests"
    )
fi
if ! git diff --quiet -- harness; then
    echo "harness/ has uncommitted changes: commit or stash them first" >&2
    exit 1
fi
baseline=${MUTANTS_BASELINE:-run}
extra=()
if [ -n "${MUTANTS_ARGS:-}" ]; then read -r -a extra <<<"$MUTANTS_ARGS"; fi
summary=()
for entry in "${files[@]}"; do
    file="${entry%%=*}"
    filters=()
    if [ "$entry" != "$file" ]; then read -r -a filters <<<"${entry#*=}"; fi
    out="target/mutants/$(echo "$file" | tr / _)"
    rm -rf "$out"
    mkdir -p "$out"
    case $file in
        */trace/query/stalls.rs) timeout=20 ;;
        *) timeout=300 ;;
    esac
    timeout=${MUTANTS_TIMEOUT:-$timeout}
    status=0
    nice -n 10 cargo mutants --in-place --no-shuffle \
        --file "$file" --test-package grpc-chaos \
        --cargo-arg=--locked --cargo-arg=--lib \
        --baseline "$baseline" --timeout "$timeout" --output "$out" \
        "${extra[@]}" -- -- "${filters[@]}" || status=$?
    if ! git diff --quiet -- harness; then
        echo "a mutated file is left behind in harness/: git checkout it" >&2
        exit 1
    fi
    # 0: all caught; 2: some missed; 3: some timed out. Anything else (a
    # failing baseline, a usage error) stops the run.
    case $status in 0 | 2 | 3) ;; *) exit "$status" ;; esac
    baseline=skip
    count() { [ -f "$out/mutants.out/$1.txt" ] && wc -l <"$out/mutants.out/$1.txt" || echo 0; }
    summary+=("$file: $(count caught) caught, $(count missed) missed, $(count unviable) unviable, $(count timeout) timeout")
done
printf '%s\n' "${summary[@]}"
