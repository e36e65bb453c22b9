#!/usr/bin/env bash
# The harness's minimum Rust (`rust-version` in Cargo.toml, 1.88) checked by
# an older compiler. No rustc 1.88 can be had here (rustup fetches nothing);
# Debian bookworm's `rustc-web` 1.85 can, from Debian's archive. This
# script type-checks the grpc-chaos library (`cargo check`, default and all
# features, the locked dependencies) with rustc 1.85 and lets through only
# the features stabilized after 1.85 and by 1.88 that the build needs, each
# named below with its release, per crate. Anything newer than 1.88 —
# a std API, a trait impl, a macro, a language feature — is unknown or
# unstable to 1.85 and fails the check. What it does not cover: the tests,
# benches and doctests (they are not part of the promise); rustc 1.86–1.88
# itself (an impl or API that appeared in 1.86–1.88 without a feature gate
# fails here though 1.88 has it: a false alarm, never a miss); cargo 1.88
# reading the manifest (cargo 1.95 resolves here; the manifest uses nothing
# newer than the `[lints]` table, cargo 1.74).
#
# Beside it, clippy's `incompatible_msrv` (suspicious group, on in
# ci/check.sh's clippy steps; it reads rust-version) flags a call, path or
# type of std newer than 1.88 outside tests, with the right line. It sees
# nothing else: a language feature (an `if let` guard, 1.95, passed clippy
# and failed here, 2026-12-02), a newer trait impl, a std macro.
#
# The toolchain is unpacked (dpkg -x, nothing installed) under the target
# dir, msrv/toolchain, once; the check builds in msrv/build.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian bookworm (oldstable, LTS: its main archive no longer changes).
rust_deb=1.85.0+dfsg3-1~deb12u3
llvm_deb=1:19.1.7-3~deb12u1
# Each entry crate=feature[,feature]: the crate (its --crate-name) may use
# these features, and no other crate any.
#   tonic 0.14.9: let_chains, stable in 1.88 (edition 2024 only). grpc-chaos
#     is edition 2024 too but uses none (clippy's collapsible_if, which
#     would fold nested `if let`s into them, is allowed in its lib.rs); a
#     let chain there fails this check until grpc_chaos=let_chains is added.
#   grpc_chaos: unsigned_is_multiple_of, stable in 1.87 (`is_multiple_of`).
#   rcgen 0.14.10 (grpc_chaos::tls): unsigned_is_multiple_of, 1.87 (its
#     rust-version is 1.88). Its `time` is held at 0.3.41 in Cargo.lock:
#     0.3.42 on uses 1.87 and 1.88 features in many places.
# Add a feature only with the release that stabilized it, and only one of
# 1.86, 1.87 or 1.88.
export MSRV_FEATURES="tonic=let_chains grpc_chaos=unsigned_is_multiple_of rcgen=unsigned_is_multiple_of"

target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
root="$target_dir/msrv/toolchain"
rustc="$root/usr/bin/rustc"
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

version=$("$rustc" --version 2>/dev/null || true)
if [ "${version#rustc 1.85.0 }" = "$version" ]; then
    rm -rf "$root"
    mkdir -p "$root/debs"
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    packages=(rustc-web="$rust_deb" libstd-rust-web-1.85="$rust_deb"
        libstd-rust-web-dev="$rust_deb" libllvm19="$llvm_deb")
    # apt-get download needs the package lists (a new machine may have none).
    if ! (cd "$root/debs" && apt-get download "${packages[@]}"); then
        $sudo apt-get update
        (cd "$root/debs" && apt-get download "${packages[@]}")
    fi
    for deb in "$root"/debs/*.deb; do dpkg -x "$deb" "$root"; done
    rm -rf "$root/debs"
    # libLLVM's own libraries (libz3, libedit, …) come with the machine's
    # LLVM; where one is missing, Debian's libllvm19 brings them.
    libs=$(ldd "$rustc" "$root"/usr/lib/x86_64-linux-gnu/libLLVM.so.* 2>&1 || true)
    if [[ "$libs" == *"not found"* ]]; then
        $sudo apt-get install -y --no-install-recommends "libllvm19=$llvm_deb"
    fi
fi
"$rustc" --version

crates=""
for entry in $MSRV_FEATURES; do crates="$crates${crates:+,}${entry%%=*}"; done
for features in "" "--all-features"; do
    # RUSTC_BOOTSTRAP with crate names opens features to those crates only;
    # ci/msrv-rustc.sh adds each one's -Zcrate-attr=feature(..).
    RUSTC="$rustc" RUSTC_WRAPPER="$PWD/ci/msrv-rustc.sh" RUSTC_BOOTSTRAP="$crates" \
        cargo check -p grpc-chaos --lib --locked --ignore-rust-version $features \
        --target-dir "$target_dir/msrv/build"
done
echo "msrv: grpc-chaos type-checks with rustc 1.85 plus ${MSRV_FEATURES}"
