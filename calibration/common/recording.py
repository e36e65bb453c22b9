"""What every proxy's record.py shares: waiting for a port, client
schedules, and running the scenarios into one JSON fixture per scenario
and run (the software's version, the timers, the date, the client's
frames and each upstream connection's)."""

import datetime
import json
import os
import socket
import time


def wait_port(port, what, limit_s=10):
    """Returns when 127.0.0.1:`port` accepts, or exits after `limit_s`."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("%s did not listen on 127.0.0.1:%d" % (what, port))


def message_every(sid, every_s, count, start_s=0.0, end_last=False):
    """Client actions: one gRPC message every `every_s`, `count` times."""
    out = []
    for i in range(1, count + 1):
        last = end_last and i == count
        out.append((start_s + every_s * i, lambda c, last=last: c.send_message(sid, end_stream=last)))
    return out


def meta(software, timers):
    """The fields every fixture of a recording carries."""
    return {
        "software": software,
        "timers_s": timers,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "h2": __import__("h2").__version__,
    }


def record_runs(scenarios, head, clock, backend, out, runs, only=None):
    """Runs each scenario (a function of the clock returning its
    h2peer.Client; its docstring says what it asks) `runs` times and
    writes out/runN/<name>.json."""
    for run in range(1, runs + 1):
        for scenario in scenarios:
            name = scenario.__name__[2:]
            if only and name != only:
                continue
            backend.take()
            client = scenario(clock)
            client.close()
            time.sleep(0.3)  # let the backend see the upstream's end
            record = dict(head)
            record.update(
                {
                    "scenario": name,
                    "asks": " ".join(scenario.__doc__.split()),
                    "run": run,
                    "client": {
                        "frames": client.log.frames,
                        "end": client.log.end,
                        "h2_error": client.h2_error,
                        "requests": client.requests,
                    },
                    "backend_connections": backend.take(),
                }
            )
            d = os.path.join(out, "run%d" % run)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(record, f, indent=1, sort_keys=True)
                f.write("\n")
            print("run %d %-28s %d frames, end %s" % (run, name, len(client.log.frames), client.log.end))


def shared_scenarios(port, idle_window_s):
    """The scenarios every proxy's recording has, on 127.0.0.1:`port`:
    settings_and_unary, never_used and idle_after_call (each reads for
    `idle_window_s`). Imported here so that h2peer stays the peers alone."""
    import h2peer

    save = "/tt.v1.Store/Save"

    def s_settings_and_unary(clock):
        """Whose SETTINGS the client sees; a unary call that succeeds."""
        c = h2peer.Client(port, clock)
        clock.reset()
        c.run(0.3)
        sid = c.request(save, "ok", end_stream=False)
        c.send_message(sid, end_stream=True)
        c.run(1.5, stop_after_end_s=0.3)
        return c

    def s_never_used(clock):
        """A connection that never carries a request: what the proxy sends,
        when."""
        c = h2peer.Client(port, clock)
        clock.reset()
        c.run(idle_window_s)
        return c

    def s_idle_after_call(clock):
        """A connection idle after one finished call."""
        c = h2peer.Client(port, clock)
        clock.reset()
        sid = c.request(save, "ok", end_stream=False)
        c.send_message(sid, end_stream=True)
        c.run(idle_window_s)
        return c

    return [s_settings_and_unary, s_never_used, s_idle_after_call]


def main(proxy, start, ports, version, timers, scenarios, backend_port, after=None):
    """A proxy's record.py command line (--out, --runs, --only): in a temp
    prefix, `start(prefix)` starts the proxy (a Popen) in front of the
    recording backend on `backend_port`; once `ports` listen, every
    scenario runs; then the proxy stops, and `after(prefix, out)` runs."""
    import argparse
    import shutil
    import tempfile

    import h2peer

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--only", default=None, help="one scenario's name")
    args = ap.parse_args()
    prefix = tempfile.mkdtemp(prefix="calib-%s-" % proxy)
    child = start(prefix)
    clock = h2peer.Clock()
    backend = h2peer.Backend(backend_port, clock)
    try:
        for port in ports:
            wait_port(port, proxy, limit_s=20)
        head = meta(version(), timers)
        record_runs(scenarios, head, clock, backend, args.out, args.runs, args.only)
    finally:
        child.terminate()
        child.wait(10)
        backend.close()
        if after is not None:
            after(prefix, args.out)
        shutil.rmtree(prefix, ignore_errors=True)


def fill(template, subst, out):
    """Writes `template` (a path) to `out` with each key of `subst`
    replaced by its value; returns `out`."""
    with open(template) as f:
        text = f.read()
    for k, v in subst.items():
        text = text.replace(k, v)
    with open(out, "w") as f:
        f.write(text)
    return out
