#!/usr/bin/env bash
# Re-records the calibration fixtures against the real software: installs
# what is missing (Debian's nginx-light, PyPI's h2), then runs every nginx
# scenario twice on 127.0.0.1 (about 2 minutes). Run from anywhere:
#   bash calibration/record.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v nginx >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light
fi
nginx -v 2>&1 | grep -q 'nginx/1.22.1' || echo "note: the fixtures were recorded with nginx 1.22.1; this is $(nginx -v 2>&1)" >&2
python3 -c 'import h2, sys; sys.exit(h2.__version__ != "4.1.0")' 2>/dev/null || pip install -q 'h2==4.1.0'
out="$here/fixtures/nginx"
rm -rf "$out"
timeout 600 python3 "$here/nginx/record.py" --out "$out" --runs 2
