#!/usr/bin/env bash
# RUSTC_WRAPPER for ci/msrv.sh: "$1" is rustc, the rest its arguments. A
# crate named in MSRV_FEATURES ("crate=feature[,feature] …") is compiled
# with those features turned on (-Zcrate-attr); every other crate as is.
set -euo pipefail
rustc=$1
shift
name=""
prev=""
for arg in "$@"; do
    if [ "$prev" = "--crate-name" ]; then name=$arg; fi
    prev=$arg
done
extra=()
for entry in ${MSRV_FEATURES:-}; do
    if [ -n "$name" ] && [ "${entry%%=*}" = "$name" ]; then
        extra+=("-Zcrate-attr=feature(${entry#*=})")
    fi
done
exec "$rustc" "$@" "${extra[@]}"
