"""Prints a fixture folder's frames, one line each: python3 show.py DIR"""
import json
import os
import sys


def line(f):
    extra = []
    for k in ("error_code", "increment", "last_stream_id", "debug", "settings", "payload", "data_len"):
        if k in f:
            extra.append("%s=%s" % (k, f[k]))
    if "headers" in f:
        extra.append(" ".join("%s:%s" % (n, v) for n, v in f["headers"]))
    return "%8.1f s%d %-13s %-22s %s" % (f["t_ms"], f["stream"], f["type"], ",".join(f["flags"]), " ".join(extra))


for name in sorted(os.listdir(sys.argv[1])):
    if not name.endswith(".json"):
        continue
    d = json.load(open(os.path.join(sys.argv[1], name)))
    print("==", d["scenario"], "requests", d["client"]["requests"])
    for f in d["client"]["frames"]:
        print("  C", line(f))
    print("  C end", d["client"]["end"], d["client"]["h2_error"] or "")
    for c in d["backend_connections"]:
        print("  B conn opened", c["opened_ms"])
        for f in c["frames"]:
            print("  B", line(f))
        print("  B end", c["end"])
