"""Records what real nginx does in each calibration scenario.

Starts nginx (calibration/nginx/nginx.conf.in, timers below) in front of
the recording backend (h2peer.Backend), drives each scenario with a raw
HTTP/2 client (h2peer.Client) and writes one JSON fixture per scenario
and run under --out, with nginx's version, the timers and the date.
Everything listens on 127.0.0.1; every loop is bounded; a whole run of
every scenario takes about 45 s.

    python3 calibration/nginx/record.py --out calibration/fixtures/nginx --runs 2
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import h2peer  # noqa: E402
import recording  # noqa: E402
from recording import message_every, shared_scenarios  # noqa: E402

PORT_READ, PORT_BODY, PORT_BACKEND = 18081, 18082, 18090

# The config's timers, seconds. "read" server: grpc_read_timeout and
# grpc_send_timeout = READ, client_body_timeout = BODY_LONG; "body" server:
# client_body_timeout = BODY, grpc_read/send_timeout = READ_LONG. Both:
# keepalive_timeout, client_header_timeout.
TIMERS = {
    "grpc_read_timeout": 2,
    "grpc_send_timeout": 2,
    "client_body_timeout": 2,
    "client_body_timeout_read_server": 10,
    "grpc_timeouts_body_server": 10,
    "keepalive_timeout": 4,
    "client_header_timeout": 6,
}

UPLOAD = "/tt.v1.Scoreboard/Upload"
WATCH = "/tt.v1.Scoreboard/Watch"
SAVE = "/tt.v1.Store/Save"


def config(prefix):
    here = os.path.dirname(os.path.abspath(__file__))
    subst = {
        "@PREFIX@": prefix,
        "@PORT_READ@": str(PORT_READ),
        "@PORT_BODY@": str(PORT_BODY),
        "@PORT_BACKEND@": str(PORT_BACKEND),
        "@READ@": "%ds" % TIMERS["grpc_read_timeout"],
        "@SEND@": "%ds" % TIMERS["grpc_send_timeout"],
        "@BODY_LONG@": "%ds" % TIMERS["client_body_timeout_read_server"],
        "@READ_LONG@": "%ds" % TIMERS["grpc_timeouts_body_server"],
        "@BODY@": "%ds" % TIMERS["client_body_timeout"],
        "@KEEPALIVE@": "%ds" % TIMERS["keepalive_timeout"],
        "@HEADER@": "%ds" % TIMERS["client_header_timeout"],
    }
    return recording.fill(os.path.join(here, "nginx.conf.in"), subst, os.path.join(prefix, "nginx.conf"))


# Each scenario: (name, what it asks, function(clock) -> client record).
def s_idle_with_pings(clock):
    """A connection after one finished call whose client sends a PING every
    second for 7 s: do PINGs hold off keepalive_timeout?"""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request(SAVE, "ok", end_stream=False)
    c.send_message(sid, end_stream=True)
    pings = [(float(i), lambda c: c.ping()) for i in range(1, 8)]
    c.run(TIMERS["keepalive_timeout"] + 5, actions=pings)
    return c


def s_unary_silent_backend(clock):
    """A complete unary request, a backend that never answers."""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request(SAVE, "silent", end_stream=False)
    c.send_message(sid, end_stream=True)
    c.run(6, stop_after_end_s=0.5)
    return c


def s_upload_messages_then_end(clock):
    """Client streaming: a message every 0.5 s for 3 s, END_STREAM with the
    last; the backend never answers. When does the read timer start?"""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request(UPLOAD, "silent", end_stream=False)
    c.run(9, actions=message_every(sid, 0.5, 6, end_last=True), stop_after_end_s=0.5)
    return c


def s_upload_messages_no_end(clock):
    """Client streaming: a message every 0.5 s for 3 s, no END_STREAM, then
    silent; the backend never answers."""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request(UPLOAD, "silent", end_stream=False)
    c.run(9, actions=message_every(sid, 0.5, 6), stop_after_end_s=0.5)
    return c


def s_headers_then_silent(clock):
    """Response headers at once, one message at 1 s, then nothing."""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request(WATCH, "headers-then-silent", end_stream=False)
    c.send_message(sid, end_stream=True)
    c.run(7, stop_after_end_s=0.5)
    return c


def s_client_data_after_headers(clock):
    """Response headers at once, then nothing from the backend; the client
    sends a message every 0.5 s for 4 s. Do the client's writes re-arm it?"""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request("/tt.v1.Scoreboard/Rally", "headers-only", end_stream=False)
    c.run(7, actions=message_every(sid, 0.5, 8), stop_after_end_s=0.5)
    return c


def s_backend_pings(clock):
    """Response headers at once, a backend PING every 0.6 s, trailers at 5 s.
    Do the PINGs reach the client; do they re-arm the read timer?"""
    c = h2peer.Client(PORT_READ, clock)
    clock.reset()
    sid = c.request(WATCH, "pings", end_stream=False)
    c.send_message(sid, end_stream=True)
    c.run(7, stop_after_end_s=0.5)
    return c


def s_silent_client_stream(clock):
    """client_body_timeout: HEADERS without END_STREAM, then nothing; the
    backend never answers (body server: upstream timers long)."""
    c = h2peer.Client(PORT_BODY, clock)
    clock.reset()
    c.request(UPLOAD, "silent", end_stream=False)
    c.run(TIMERS["client_body_timeout"] + 4, stop_after_end_s=0.5)
    return c


IDLE_WINDOW_S = TIMERS["client_header_timeout"] + TIMERS["keepalive_timeout"] + 1

SCENARIOS = shared_scenarios(PORT_READ, IDLE_WINDOW_S) + [
    s_idle_with_pings,
    s_unary_silent_backend,
    s_upload_messages_then_end,
    s_upload_messages_no_end,
    s_headers_then_silent,
    s_client_data_after_headers,
    s_backend_pings,
    s_silent_client_stream,
]


def nginx_version():
    out = subprocess.run(["nginx", "-v"], capture_output=True, text=True)
    return (out.stderr or out.stdout).strip()


def start(prefix):
    """nginx on the config, in the foreground."""
    return subprocess.Popen(["nginx", "-p", prefix, "-c", config(prefix)])


def keep_error_log(prefix, out):
    """nginx's error log, without the date, time and pid#tid, which change
    every run."""
    with open(os.path.join(prefix, "error.log")) as f:
        errors = f.read()
    with open(os.path.join(out, "nginx-error.log.txt"), "w") as f:
        f.write("".join(" ".join(line.split(" ")[2:3] + line.split(" ")[4:]) for line in errors.splitlines(True)))


if __name__ == "__main__":
    recording.main(
        "nginx", start, [PORT_READ, PORT_BODY], nginx_version, TIMERS, SCENARIOS, PORT_BACKEND, after=keep_error_log
    )
