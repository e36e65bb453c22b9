"""Raw HTTP/2 peers that record every frame they receive.

`FrameLog` parses the octets a peer reads (hyperframe for the frames, a
second HPACK decoder kept in step for header blocks) and stores each frame
with its time in ms relative to a shared origin. `Client` drives one
connection to the proxy (nginx, Envoy) from a schedule; `Backend` is a
gRPC server that
behaves as the request's `calib-backend` header says (answers, stays
silent, sends PINGs). Every loop is bounded by a deadline.
"""

import select
import socket
import threading
import time

import h2.config
import h2.errors
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import hpack
from hyperframe.frame import Frame

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Header names whose values change from run to run.
VOLATILE = {"date", "x-envoy-upstream-service-time", "x-request-id"}

SETTING_NAMES = {
    1: "HEADER_TABLE_SIZE",
    2: "ENABLE_PUSH",
    3: "MAX_CONCURRENT_STREAMS",
    4: "INITIAL_WINDOW_SIZE",
    5: "MAX_FRAME_SIZE",
    6: "MAX_HEADER_LIST_SIZE",
    8: "ENABLE_CONNECT_PROTOCOL",
}

ERROR_NAMES = {
    0: "NO_ERROR",
    1: "PROTOCOL_ERROR",
    2: "INTERNAL_ERROR",
    3: "FLOW_CONTROL_ERROR",
    4: "SETTINGS_TIMEOUT",
    5: "STREAM_CLOSED",
    6: "FRAME_SIZE_ERROR",
    7: "REFUSED_STREAM",
    8: "CANCEL",
    9: "COMPRESSION_ERROR",
    10: "CONNECT_ERROR",
    11: "ENHANCE_YOUR_CALM",
    12: "INADEQUATE_SECURITY",
    13: "HTTP_1_1_REQUIRED",
}



def recv_logged(sock, log):
    """One read from `sock`, fed to `log`: the octets, or None once the peer
    reset the connection or closed it (which `log` records)."""
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        log.closed("reset")
        return None
    if not data:
        log.closed("fin")
        return None
    log.feed(data)
    return data

class Clock:
    """The origin every recorded time is relative to (the request)."""

    def __init__(self):
        self.origin = time.monotonic()

    def reset(self):
        self.origin = time.monotonic()

    def ms(self):
        return round((time.monotonic() - self.origin) * 1000, 1)


class FrameLog:
    """Every frame read on one connection, in order, with its fields."""

    def __init__(self, clock, expect_preface=False):
        self.clock = clock
        self.buf = b""
        self.preface = expect_preface
        self.decoder = hpack.Decoder()
        self.block = None  # (frame record, octets) of an open header block
        self.frames = []
        self.end = None

    def feed(self, data):
        self.buf += data
        if self.preface:
            if len(self.buf) < len(PREFACE):
                return
            self.buf = self.buf[len(PREFACE):]
            self.preface = False
        while len(self.buf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(self.buf[:9]))
            if len(self.buf) < 9 + length:
                return
            frame.parse_body(memoryview(self.buf[9:9 + length]))
            self.buf = self.buf[9 + length:]
            self.record(frame, length)

    def record(self, frame, length):
        rec = {
            "t_ms": self.clock.ms(),
            "type": frame.type_name if hasattr(frame, "type_name") else type(frame).__name__,
            "stream": frame.stream_id,
            "flags": sorted(frame.flags),
            "length": length,
        }
        kind = type(frame).__name__
        rec["type"] = kind.replace("Frame", "").upper().replace("RSTSTREAM", "RST_STREAM").replace(
            "WINDOWUPDATE", "WINDOW_UPDATE"
        )
        if kind == "RstStreamFrame":
            rec["error_code"] = ERROR_NAMES.get(frame.error_code, frame.error_code)
        elif kind == "GoAwayFrame":
            rec["error_code"] = ERROR_NAMES.get(frame.error_code, frame.error_code)
            rec["last_stream_id"] = frame.last_stream_id
            rec["debug"] = frame.additional_data.decode("latin-1")
        elif kind == "WindowUpdateFrame":
            rec["increment"] = frame.window_increment
        elif kind == "SettingsFrame":
            rec["settings"] = {SETTING_NAMES.get(k, str(k)): v for k, v in sorted(frame.settings.items())}
        elif kind == "PingFrame":
            rec["payload"] = frame.opaque_data.hex()
        elif kind == "DataFrame":
            rec["data_len"] = len(frame.data)
            rec["data_head"] = frame.data[:16].hex()
        if kind in ("HeadersFrame", "ContinuationFrame"):
            self.header_block(rec, frame)
        self.frames.append(rec)

    def header_block(self, rec, frame):
        if type(frame).__name__ == "HeadersFrame":
            self.block = (rec, bytes(frame.data))
        elif self.block is not None:
            self.block = (self.block[0], self.block[1] + bytes(frame.data))
        if "END_HEADERS" in frame.flags and self.block is not None:
            head, octets = self.block
            self.block = None
            fields = self.decoder.decode(octets, raw=False)
            head["headers"] = [[n, v] for n, v in fields if n not in VOLATILE]

    def closed(self, how):
        if self.end is None:
            self.end = {"t_ms": self.clock.ms(), "how": how}


def grpc_message(payload=b"\x0a\x02m1\x12\x04home\x18\x01"):
    """A gRPC message frame (Compressed-Flag 0, length, a Rally)."""
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


class Client:
    """One client connection to nginx, driven by a schedule."""

    def __init__(self, port, clock):
        self.port = port
        self.clock = clock
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.requests = []  # (stream, ms) of each request's HEADERS
        self.sock.setblocking(False)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.log = FrameLog(clock)
        self.h2_error = None
        self.stream_ended = {}
        self.conn.initiate_connection()
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data and self.log.end is None:
            try:
                self.sock.sendall(data)
            except OSError as e:
                self.log.closed("write failed: %s" % type(e).__name__)

    def request(self, path, behaviour, end_stream):
        sid = self.conn.get_next_available_stream_id()
        headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", "127.0.0.1:%d" % self.port),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("calib-backend", behaviour),
        ]
        self.conn.send_headers(sid, headers, end_stream=end_stream)
        self.flush()
        self.requests.append({"stream": sid, "t_ms": self.clock.ms()})
        return sid

    def send_message(self, sid, end_stream=False):
        try:
            self.conn.send_data(sid, grpc_message(), end_stream=end_stream)
        except h2.exceptions.H2Error as e:
            self.h2_error = self.h2_error or repr(e)
        self.flush()

    def ping(self):
        self.conn.ping(b"client!!")
        self.flush()

    def ignore_stream_limit(self):
        """From now on opens streams past the peer's acknowledged
        SETTINGS_MAX_CONCURRENT_STREAMS (h2 would refuse to, locally)."""
        self.conn.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = 1000
        self.conn.remote_settings.acknowledge()

    def end_request(self, sid):
        try:
            self.conn.end_stream(sid)
        except h2.exceptions.H2Error as e:
            self.h2_error = self.h2_error or repr(e)
        self.flush()

    def run(self, until_s, actions=(), stop_after_end_s=None):
        """Reads until `until_s` (from the clock's origin), running each
        `(at_s, fn)` of `actions` when due; stops early `stop_after_end_s`
        after every stream ended or at the connection's end."""
        pending = sorted(actions, key=lambda a: a[0])
        done_at = None
        while self.log.end is None:
            now = self.clock.ms() / 1000
            while pending and pending[0][0] <= now:
                pending.pop(0)[1](self)
            if now >= until_s or (done_at is not None and now >= done_at):
                return
            nxt = min([until_s] + [p[0] for p in pending[:1]] + ([done_at] if done_at else []))
            readable, _, _ = select.select([self.sock], [], [], max(0.0, nxt - now))
            if not readable:
                continue
            data = recv_logged(self.sock, self.log)
            if data is None:
                return
            self.events(data)
            if stop_after_end_s is not None and done_at is None and self.all_ended():
                done_at = self.clock.ms() / 1000 + stop_after_end_s

    def all_ended(self):
        return bool(self.stream_ended) and all(self.stream_ended.values())

    def events(self, data):
        if self.h2_error:
            return
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.H2Error as e:
            self.h2_error = repr(e)
            return
        for ev in events:
            sid = getattr(ev, "stream_id", None)
            if isinstance(ev, h2.events.DataReceived):
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                self.stream_ended[sid] = True
            if isinstance(ev, h2.events.ResponseReceived):
                self.stream_ended.setdefault(sid, False)
        self.flush()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Backend:
    """A gRPC backend on 127.0.0.1:`port`: each connection nginx opens is
    served by a thread that records the frames it reads. The request's
    `calib-backend` header picks the behaviour (see `BEHAVIOURS`)."""

    def __init__(self, port, clock):
        self.clock = clock
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", port))
        self.lsock.listen(16)
        self.lsock.settimeout(0.2)
        self.stop = threading.Event()
        self.conns = []  # one FrameLog per accepted connection
        self.threads = []
        self.acceptor = threading.Thread(target=self.accept, daemon=True)
        self.acceptor.start()

    def take(self):
        """What each connection received since the last call: those opened
        since, and those kept open from before (Envoy pools its upstream
        connections) that read a frame or ended since."""
        out = []
        for c in self.conns:
            seen = getattr(c, "taken", None)
            frames = c.frames[seen[0]:] if seen else c.frames
            if seen and not frames and c.end == seen[1]:
                continue
            out.append({"frames": frames, "end": c.end, "opened_ms": c.opened})
            c.taken = (len(c.frames), c.end)
        self.conns = [c for c in self.conns if c.end is None]
        return out

    def accept(self):
        while not self.stop.is_set():
            try:
                sock, _ = self.lsock.accept()
            except socket.timeout:
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            log = FrameLog(self.clock, expect_preface=True)
            log.opened = self.clock.ms()
            self.conns.append(log)
            t = threading.Thread(target=BackendConn(sock, log, self.stop).serve, daemon=True)
            t.start()
            self.threads.append(t)

    def close(self):
        self.stop.set()
        self.acceptor.join(2)
        for t in self.threads:
            t.join(2)
        self.lsock.close()


# behaviour -> schedule of (seconds after the request's HEADERS, action)
BEHAVIOURS = {
    # Response headers, one message, OK trailers, at once.
    "ok": [(0.0, "headers"), (0.0, "message"), (0.0, "trailers")],
    # Reads the request, never answers.
    "silent": [],
    # Response headers at once, one message at 1 s, then nothing.
    "headers-then-silent": [(0.0, "headers"), (1.0, "message")],
    # Response headers at once, then nothing.
    "headers-only": [(0.0, "headers")],
    # Response headers at once, one message at 0.5 s, RST_STREAM(CANCEL) at 1 s.
    "headers-then-reset": [(0.0, "headers"), (0.5, "message"), (1.0, "reset")],
    # Response headers at once, a PING every 0.6 s, OK trailers at 5 s.
    "pings": [(0.0, "headers")] + [(0.6 * i, "ping") for i in range(1, 9)] + [(5.0, "trailers")],
}


class BackendConn:
    def __init__(self, sock, log, stop):
        self.sock = sock
        self.log = log
        self.stop = stop
        cfg = h2.config.H2Configuration(client_side=False)
        self.conn = h2.connection.H2Connection(cfg)
        # Distinctive SETTINGS, so the client can tell whose it sees.
        self.conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 7,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1234567,
            },
        )
        self.pending = []  # (monotonic at, stream, action)

    def serve(self):
        self.conn.initiate_connection()
        self.flush()
        deadline = time.monotonic() + 60
        while not self.stop.is_set() and time.monotonic() < deadline and self.log.end is None:
            now = time.monotonic()
            self.pending.sort(key=lambda p: p[0])
            while self.pending and self.pending[0][0] <= now:
                _, sid, action = self.pending.pop(0)
                self.act(sid, action)
            wait = min([0.2] + [max(0.0, self.pending[0][0] - now)] if self.pending else [0.2])
            readable, _, _ = select.select([self.sock], [], [], wait)
            if not readable:
                continue
            data = recv_logged(self.sock, self.log)
            if data is None:
                break
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.H2Error:
                events = []
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived):
                    behaviour = dict(ev.headers).get(b"calib-backend", b"silent").decode()
                    for at, action in BEHAVIOURS.get(behaviour, []):
                        self.pending.append((now + at, ev.stream_id, action))
            self.flush()
        try:
            self.sock.close()
        except OSError:
            pass

    def act(self, sid, action):
        try:
            if action == "headers":
                self.conn.send_headers(sid, [(":status", "200"), ("content-type", "application/grpc")])
            elif action == "message":
                self.conn.send_data(sid, grpc_message(b"\x0a\x02m1\x10\x01"))
            elif action == "trailers":
                self.conn.send_headers(sid, [("grpc-status", "0")], end_stream=True)
            elif action == "ping":
                self.conn.ping(b"backend!")
            elif action == "reset":
                self.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        except h2.exceptions.H2Error:
            pass  # the stream is gone (nginx reset it): nothing to send
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:
                self.log.closed("write failed")
