#!/usr/bin/env bash
# What CI runs, in order; each step fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The harness on its own, without the `unstable-codec` feature the tests
# crate turns on for the whole workspace: the private codec must build and
# lint clean too.
cargo clippy -p grpc-chaos --lib --tests --locked -- -D warnings
# Publishable (harness/README.md, CHANGELOG.md): the crate as crates.io
# would get it, unpacked outside the workspace, its library built and its
# doctests run from the package alone (the guide's examples mount the
# reference services from the package's reference/ folder); the build
# shares the workspace's target dir, so only the crates whose features
# differ alone (tokio, hyper, tonic, the crate itself) are built again:
# 1 min 27 s CPU, 2026-12-04. This build stands in for cargo's own verify
# build of the package, which would build the library once more. Then its
# docs as docs.rs builds them, warnings refused (a broken intra-doc link
# fails docs.rs's build: the lint is `deny`), the guide's pages
# (harness/src/guide/) with them.
cargo package -p grpc-chaos --locked --no-verify
version=$(cargo pkgid -p grpc-chaos | sed 's/.*@//')
unpacked=$(mktemp -d)
tar xzf "target/package/grpc-chaos-$version.crate" -C "$unpacked"
(cd "$unpacked/grpc-chaos-$version" &&
    CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OLDPWD/target}" cargo test --locked --doc)
rm -rf "$unpacked"
RUSTDOCFLAGS="-D warnings" cargo doc -p grpc-chaos --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p grpc-chaos --no-deps --locked --features unstable-codec
# The minimum Rust version (rust-version), checked by rustc 1.85 (Debian's);
# ci/msrv.sh says what it covers and what it does not.
bash ci/msrv.sh
# The public API against its checked-in listing (ci/public-api.txt).
bash ci/api.sh
# The one-way module flow (harness/src/flow_check.rs): fails on any import
# from a module above the importer in DESIGN's order.
cargo test -p grpc-chaos --locked --lib -- flow_check
# The property tests of the wire decoder and of the tap once more, at a
# high case count (`cargo test` runs them at proptest's default of 256
# cases). 10,000 cases per property is about a minute on 2 cores in a debug
# build (47 s for both files; the tap's 3 properties alone 18 s); raise
# PROPTEST_CASES here only with a new measurement (CONTRIBUTING.md,
# "Testing the wire decoder and the tap").
cases="${PROPTEST_CASES:-10000}"
cargo test -p grpc-chaos --locked --lib --no-run
# A property is a `fn` indented once, inside `proptest!`; helpers in these
# files stay at the top level.
proptest_files=(harness/src/wire/proptests.rs harness/src/net/tap/proptests.rs)
properties=$(cat "${proptest_files[@]}" | grep -c '^    fn ')
start=$(date +%s%N)
PROPTEST_CASES="$cases" cargo test -p grpc-chaos --locked --lib -- \
    wire::proptests net::tap::proptests
end=$(date +%s%N)
ms=$(((end - start) / 1000000))
execs=$((properties * cases))
echo "wire and tap proptests: ${properties} properties x ${cases} cases = ${execs} executions" \
    "in ${ms} ms wall = $((execs * 1000 / (ms > 0 ? ms : 1))) executions/s"

# The fuzz targets (fuzz/), on the stable toolchain, over a copy of their
# committed seeds for FUZZ_SECONDS of wall-clock time side by side
# (default 90; CONTRIBUTING.md, "Fuzzing"); fails on any crash. Its build has its
# own target dir, fuzz/target (the flags differ from the workspace's).
bash ci/fuzz.sh

# The README's test command, last, so its summary closes the log. cargo
# prints one summary per test binary (the last one is a doc-test binary with
# no tests), so end with the totals over all of them.
# With the determinism canary on (harness/src/guide/determinism.md): every
# run a test makes is compared with the same test's run in a second
# process.
log=$(mktemp)
GRPC_CHAOS_CANARY=1 cargo test --workspace --locked 2>&1 | tee "$log"
awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
