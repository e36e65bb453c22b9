#!/usr/bin/env bash
# The grpc-chaos crate's public API, listed and diffed against the
# checked-in listing ci/public-api.txt, so every change to the API shows in
# review. `ci/api.sh --bless` rewrites the listing after a deliberate change.
#
# rustdoc writes its JSON (what cargo-public-api reads) only with
# `-Z unstable-options`: no nightly toolchain can be had here, so the
# stable rustdoc is asked with RUSTC_BOOTSTRAP=1, for this one step. The
# listing is the public-api library's (ci/api/, its own workspace, locked);
# 0.52.1 reads the format rustc 1.95 writes (57), and a newer rustc that
# writes another format fails here with public-api's message, not a diff.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
RUSTC_BOOTSTRAP=1 cargo rustdoc -p grpc-chaos --lib --locked \
    --target-dir "$target/api-json" -- -Z unstable-options --output-format json
listing=$(mktemp)
cargo run --quiet --release --locked --manifest-path ci/api/Cargo.toml \
    --target-dir "$target/api-tool" -- "$target/api-json/doc/grpc_chaos.json" >"$listing"
if [ "${1:-}" = "--bless" ]; then
    mv "$listing" ci/public-api.txt
    echo "ci/public-api.txt rewritten"
    exit 0
fi
if ! diff -u ci/public-api.txt "$listing"; then
    echo "the public API changed (above: - was, + is); if that is meant, run ci/api.sh --bless and commit ci/public-api.txt" >&2
    rm -f "$listing"
    exit 1
fi
rm -f "$listing"
echo "public API: $(wc -l <ci/public-api.txt) lines, unchanged"
