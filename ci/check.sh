#!/usr/bin/env bash
# What CI runs, in order; each step fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The README's test command.
cargo test --workspace --locked
