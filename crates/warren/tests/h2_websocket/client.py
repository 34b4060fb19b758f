#!/usr/bin/env python3
"""The client of warren's RFC 8441 tests (crates/warren/tests/h2_websocket.rs):
WebSockets over HTTP/2 with the `h2` package from PyPI (hyper-h2), its own
WebSocket frames (RFC 6455, masked as a client's must be).

    client.py --port P [--tls] CASE [ARGS...]

Each case asserts what it expects and prints one line starting with "OK";
a failed assertion exits non-zero with its traceback. Every wait is bounded
by --timeout (a deadline, not a sleep).
"""

import argparse
import os
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

ENABLE_CONNECT_PROTOCOL = 0x8


class Client:
    def __init__(self, port, tls, timeout, upgrade=False, rcvbuf=None):
        self.timeout = timeout
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Before connecting, so that the window it announces stays small.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        raw.settimeout(timeout)
        raw.connect(("127.0.0.1", port))
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            raw = ctx.wrap_socket(raw, server_hostname="localhost")
            assert raw.selected_alpn_protocol() == "h2", raw.selected_alpn_protocol()
        self.sock = raw
        # Our requests are sent as written: some are meant to be wrong.
        cfg = h2.config.H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False, validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=cfg)
        early = b""
        if upgrade:
            # HTTP/1.1 first, upgraded with `Upgrade: h2c` (RFC 7540 §3.2).
            settings = self.conn.initiate_upgrade_connection()
            self.sock.sendall(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + settings + b"\r\n\r\n")
            while b"\r\n\r\n" not in early:
                chunk = self.sock.recv(65536)
                assert chunk, "closed before the 101"
                early += chunk
            head, early = early.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 101 "), head
        else:
            self.conn.initiate_connection()
        self.flush()
        self.settings = None
        self.streams = {}
        self.closed = False
        self.goaway = None
        # Streams whose DATA is not credited back (a client that stops reading).
        self.hold = {}
        if early:
            self.feed(early)
        self.wait(lambda: self.settings is not None, "the server's SETTINGS")

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def stream(self, sid):
        return self.streams.setdefault(sid, {"headers": None, "data": bytearray(), "ended": False, "reset": None})

    def pump(self, deadline):
        """Reads once (until the deadline) and files the events."""
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            self.closed = True
            return
        self.feed(data)

    def feed(self, data):
        for ev in self.conn.receive_data(data):
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                self.settings = {int(k): v.new_value for k, v in ev.changed_settings.items()}
            elif isinstance(ev, h2.events.ResponseReceived):
                self.stream(ev.stream_id)["headers"] = dict((k.decode() if isinstance(k, bytes) else k, v.decode() if isinstance(v, bytes) else v) for k, v in ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                self.stream(ev.stream_id)["data"] += ev.data
                if ev.stream_id in self.hold:
                    self.hold[ev.stream_id] += ev.flow_controlled_length
                else:
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                self.stream(ev.stream_id)["ended"] = True
            elif isinstance(ev, h2.events.StreamReset):
                self.stream(ev.stream_id)["reset"] = int(ev.error_code)
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.goaway = int(ev.error_code)
        self.flush()

    def wait(self, done, what, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while not done():
            assert not self.closed, f"the connection closed while waiting for {what}"
            assert time.monotonic() < deadline, f"no {what} within {timeout or self.timeout} s"
            self.pump(deadline)

    def request(self, headers, end_stream=False):
        sid = self.conn.get_next_available_stream_id()
        self.stream(sid)
        self.conn.send_headers(sid, headers, end_stream=end_stream)
        self.flush()
        return sid

    def connect_ws(self, path, extra=(), protocol="websocket", scheme="https"):
        headers = [(":method", "CONNECT"), (":protocol", protocol), (":scheme", scheme), (":path", path), (":authority", "localhost"), ("sec-websocket-version", "13")]
        return self.request(headers + list(extra))

    def get(self, path):
        return self.request([(":method", "GET"), (":scheme", "https"), (":path", path), (":authority", "localhost")], end_stream=True)

    def answer(self, sid):
        """The stream's status, or ("reset", code)."""
        s = self.stream(sid)
        self.wait(lambda: s["headers"] is not None or s["reset"] is not None, f"an answer on stream {sid}")
        if s["headers"] is None:
            return ("reset", s["reset"])
        return int(s["headers"][":status"])

    def send(self, sid, data, end_stream=False):
        """All of `data`, as the windows let it go."""
        view = memoryview(data)
        while view:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room <= 0:
                before = self.conn.local_flow_control_window(sid)
                self.wait(lambda: self.conn.local_flow_control_window(sid) > before or self.stream(sid)["reset"] is not None, f"credit on stream {sid}")
                assert self.stream(sid)["reset"] is None, f"stream {sid} reset while sending"
                continue
            self.conn.send_data(sid, view[:room].tobytes())
            view = view[room:]
            self.flush()
        if end_stream:
            self.conn.end_stream(sid)
            self.flush()

    def message(self, sid):
        """The next WebSocket message the server sent on the stream."""
        s = self.stream(sid)
        result = []

        def have():
            parsed = parse_frame(bytes(s["data"]))
            if parsed is None:
                return False
            result.append(parsed[:2])
            del s["data"][: parsed[2]]
            return True

        self.wait(have, f"a WebSocket message on stream {sid}")
        return result[0]


def frame(opcode, payload):
    """A client's frame: FIN, masked."""
    mask = os.urandom(4)
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n <= 0xFFFF:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def parse_frame(buf):
    """(opcode, payload, length) of a whole server frame at buf's start, else None."""
    if len(buf) < 2:
        return None
    assert buf[1] & 0x80 == 0, "a server frame came masked"
    n, at = buf[1] & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None
        n, at = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n, at = struct.unpack(">Q", buf[2:10])[0], 10
    if len(buf) < at + n:
        return None
    return buf[0] & 0x0F, bytes(buf[at : at + n]), at + n


def echo(c, sid, opcode, payload):
    c.send(sid, frame(opcode, payload))
    got = c.message(sid)
    assert got == (opcode, payload), f"sent {len(payload)} bytes, got back {got[0]}/{len(got[1])} bytes"


def open_tunnel(c, path, extra=()):
    sid = c.connect_ws(path, extra)
    status = c.answer(sid)
    assert status == 200, f"CONNECT {path}: {status}, {c.stream(sid)}"
    return sid


def case_echo(c, args):
    assert c.settings.get(ENABLE_CONNECT_PROTOCOL) == 1, f"SETTINGS_ENABLE_CONNECT_PROTOCOL not announced: {c.settings}"
    sid = open_tunnel(c, args.path, [("sec-websocket-protocol", "chat, superchat"), ("sec-websocket-key", "Y2xpZW50J3Mga2V5IQ==")])
    headers = c.stream(sid)["headers"]
    assert "sec-websocket-accept" not in headers and "upgrade" not in headers and "connection" not in headers, headers
    echo(c, sid, 1, b"hello")
    # Larger than every window (65535 a stream), both ways.
    echo(c, sid, 2, bytes(i % 251 for i in range(300_000)))
    c.send(sid, frame(1, b"headers"))
    _, seen = c.message(sid)
    seen = seen.decode().lower()
    assert "upgrade: websocket" in seen and "connection: upgrade" in seen, seen
    key = [l.split(": ", 1)[1] for l in seen.splitlines() if l.startswith("sec-websocket-key: ")]
    assert len(key) == 1 and key[0] != "y2xpzw50j3mga2v5iq==", f"the backend's key is not a fresh one of the proxy's: {key}"
    assert "sec-websocket-protocol: chat, superchat" in seen and "x-forwarded-for: 127.0.0.1" in seen, seen
    # The client ends its side: the close handshake, then END_STREAM.
    c.send(sid, frame(8, b"\x03\xe8bye"), end_stream=True)
    opcode, _ = c.message(sid)
    assert opcode == 8, opcode
    s = c.stream(sid)
    c.wait(lambda: s["ended"] or s["reset"] is not None, "the tunnel's end")
    assert s["reset"] in (None, 0), f"the tunnel was reset ({s['reset']}) rather than ended"
    # The connection goes on.
    g = c.get("/index.html")
    assert c.answer(g) == 200
    print("OK echo")


def case_multi(c, args):
    a = open_tunnel(c, args.path)
    b = open_tunnel(c, args.path)
    g = c.get("/index.html")
    c.send(a, frame(1, b"to a"))
    c.send(b, frame(1, b"to b"))
    assert c.answer(g) == 200
    c.wait(lambda: c.stream(g)["ended"], "the GET's body")
    assert b"<html>hello</html>" in c.stream(g)["data"], c.stream(g)["data"][:200]
    assert c.message(b) == (1, b"to b")
    assert c.message(a) == (1, b"to a")
    # Stopping one leaves the other.
    c.conn.reset_stream(a, h2.errors.ErrorCodes.CANCEL)
    c.flush()
    echo(c, b, 1, b"still here")
    print("OK multi")


def case_reset(c, args):
    sid = open_tunnel(c, args.path)
    echo(c, sid, 1, b"before")
    c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
    c.flush()
    assert c.answer(c.get("/index.html")) == 200
    if args.log:
        # The backend's connection is closed at once, not at its idle limit.
        deadline = time.monotonic() + args.timeout
        while "closed by the client (RST_STREAM)" not in open(args.log, errors="replace").read():
            assert time.monotonic() < deadline, "the reset tunnel's backend was not closed"
            c.pump(time.monotonic() + 0.05)
    other = open_tunnel(c, args.path)
    echo(c, other, 1, b"after")
    print("OK reset")


def case_client_ended_at_once(c, args):
    """A CONNECT whose HEADERS end the stream: the backend is told (a
    half-close) at once, closes, and the stream ends."""
    headers = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", args.path), (":authority", "localhost"), ("sec-websocket-version", "13")]
    sid = c.request(headers, end_stream=True)
    assert c.answer(sid) == 200
    s = c.stream(sid)
    c.wait(lambda: s["ended"] or s["reset"] is not None, "the end the backend's close makes")
    assert s["ended"], s
    print("OK client_ended_at_once")


def case_backend_close(c, args):
    sid = open_tunnel(c, args.path)
    c.send(sid, frame(1, b"close"))
    opcode, _ = c.message(sid)
    assert opcode == 8, opcode
    s = c.stream(sid)
    c.wait(lambda: s["ended"] or s["reset"] is not None, "the end the backend's close makes")
    assert s["ended"], f"the backend's close reached the client as {s}"
    assert c.answer(c.get("/index.html")) == 200
    print("OK backend_close")


def case_idle(c, args):
    sid = open_tunnel(c, args.path)
    echo(c, sid, 1, b"then nothing")
    s = c.stream(sid)
    c.wait(lambda: s["reset"] is not None or s["ended"], "the idle tunnel's end", timeout=args.timeout * 3)
    assert s["reset"] == int(h2.errors.ErrorCodes.CANCEL), f"idle tunnel ended as {s}"
    assert c.answer(c.get("/index.html")) == 200, "the connection did not go on"
    print("OK idle")


def case_refused(c, args):
    """Under a driver that carries no tunnels: nothing announced, and an
    extended CONNECT is malformed (RFC 8441 §3)."""
    assert c.settings.get(ENABLE_CONNECT_PROTOCOL, 0) == 0, c.settings
    sid = c.connect_ws(args.path)
    assert c.answer(sid) == ("reset", int(h2.errors.ErrorCodes.PROTOCOL_ERROR))
    assert c.answer(c.get("/index.html")) == 200
    print("OK refused")


def case_rejections(c, args):
    expect = {}
    # No WebSocket endpoint: a static file's 200 is no tunnel (502, as
    # mod_http2), a missing one its 404, a route without upgrade=websocket
    # whatever its backend answers to a plain GET (never 200).
    expect[c.connect_ws("/index.html")] = 502
    expect[c.connect_ws("/no/such/file")] = 404
    expect[c.connect_ws("/forbidden-ws/forbidden")] = 403
    expect[c.connect_ws(args.path, protocol="connect-udp")] = 501
    # A 101 that does not answer the proxy's key (RFC 6455's Accept).
    expect[c.connect_ws("/stray-ws/x")] = 502
    malformed = [
        [(":method", "GET"), (":protocol", "websocket"), (":scheme", "https"), (":path", args.path), (":authority", "localhost")],
        [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "localhost")],
        [(":method", "CONNECT"), (":protocol", "websocket"), (":path", args.path), (":authority", "localhost")],
        [(":method", "CONNECT"), (":protocol", "websocket x"), (":scheme", "https"), (":path", args.path), (":authority", "localhost")],
        [(":method", "CONNECT"), (":protocol", "websocket"), (":protocol", "websocket"), (":scheme", "https"), (":path", args.path), (":authority", "localhost")],
        [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", args.path), (":authority", "localhost"), ("upgrade", "websocket")],
    ]
    for headers in malformed:
        expect[c.request(headers)] = ("reset", int(h2.errors.ErrorCodes.PROTOCOL_ERROR))
    plain = c.connect_ws("/plain/")
    for sid, want in expect.items():
        got = c.answer(sid)
        assert got == want, f"stream {sid}: {got}, expected {want}"
    got = c.answer(plain)
    assert got != 200 and got != ("reset", 0), f"a route without upgrade=websocket answered {got}"
    assert c.answer(c.get("/index.html")) == 200
    print("OK rejections")


def case_many(c, args):
    """More tunnels than MaxConcurrentStreams: the rest are refused, the
    ones taken work, and the connection goes on."""
    limit = c.settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
    assert limit is not None and limit < 50, c.settings
    # h2 keeps to the server's limit itself: it is told otherwise.
    c.conn.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = 1000
    c.conn.remote_settings.acknowledge()
    sids = [c.connect_ws(args.path) for _ in range(limit + 4)]
    answers = [c.answer(s) for s in sids]
    opened = [s for s, a in zip(sids, answers) if a == 200]
    refused = [a for a in answers if a == ("reset", int(h2.errors.ErrorCodes.REFUSED_STREAM))]
    assert len(opened) == limit and len(refused) == 4, answers
    for s in opened:
        echo(c, s, 1, b"one of many")
    print(f"OK many: {len(opened)} open, {len(refused)} refused")


def case_backpressure(c, args):
    """A client that stops reading: the server sends no more than the
    stream's window (h2 raises on a frame beyond it), and goes on once
    credit comes."""
    c.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1000})
    c.flush()
    sid = open_tunnel(c, args.path)
    c.hold[sid] = 0
    payload = bytes(i % 251 for i in range(100_000))
    c.send(sid, frame(2, payload))
    s = c.stream(sid)
    c.wait(lambda: len(s["data"]) >= 1000, "the first window's worth of the echo")
    assert len(s["data"]) == 1000, len(s["data"])
    # Other streams are not held up by it.
    assert c.answer(c.get("/index.html")) == 200
    c.conn.acknowledge_received_data(c.hold.pop(sid), sid)
    c.flush()
    got = c.message(sid)
    assert got == (2, payload), f"{got[0]}/{len(got[1])} bytes"
    print("OK backpressure")


def case_never_reading(c, args):
    """An attacker that opens tunnels, makes their backends answer, and
    never reads again (a small receive buffer: the server's writes stall
    at once). Prints SENT, waits for the test to close its stdin, then
    reads what the server left until the connection closes."""
    sids = [open_tunnel(c, args.path) for _ in range(6)]
    for sid in sids:
        # Within the stream's window: sent without waiting for credit.
        c.send(sid, frame(2, bytes(60_000)))
    print(f"SENT {len(sids)}", flush=True)
    sys.stdin.read()
    deadline = time.monotonic() + c.timeout
    c.sock.settimeout(c.timeout)
    while True:
        assert time.monotonic() < deadline, "the server kept the connection of a client that never reads"
        try:
            if not c.sock.recv(1 << 20):
                break
        except (ConnectionResetError, ssl.SSLError):
            break
    print("OK never_reading: closed")


def case_hold(c, args):
    """Opens one tunnel, checks it carries, prints HELD and keeps it open
    until the test closes its stdin."""
    sid = open_tunnel(c, args.path)
    echo(c, sid, 1, b"held")
    print("HELD", flush=True)
    sys.stdin.read()
    print("OK hold")


def case_no_thread_left(c, args):
    """Another connection's extended CONNECT while the tunnels hold every
    thread place of the child: 503, and this connection still served."""
    sid = c.connect_ws(args.path)
    status = c.answer(sid)
    assert status == 503, f"CONNECT {args.path} with every tunnel place held: {status}"
    assert c.answer(c.get("/index.html")) == 200
    print("OK no_thread_left")


def case_stopped(c, args):
    """Prints OPEN once a tunnel echoes, then waits for the server to be
    stopped (by the test) and the tunnel to end. (h2 takes no frame after
    a GOAWAY, the server's RST_STREAM included: the test reads warren's
    log for how the tunnel ended.)"""
    sid = open_tunnel(c, args.path)
    echo(c, sid, 1, b"before the stop")
    print("OPEN", flush=True)
    s = c.stream(sid)
    try:
        c.wait(lambda: s["reset"] is not None or s["ended"] or c.goaway is not None, "the tunnel's end at the stop")
        c.wait(lambda: s["reset"] is not None or s["ended"], "the tunnel's end after the GOAWAY")
    except h2.exceptions.ProtocolError:
        pass
    except AssertionError:
        assert c.closed, "the connection stayed open"
    print("OK stopped")


def case_upgraded(c, args):
    """A connection upgraded from HTTP/1.1 (h2c) carries tunnels too."""
    assert c.answer(1) == 200, "the upgraded request's answer"
    case_echo(c, args)


def case_smuggle(c, args):
    """Fields an attacker puts in an extended CONNECT to reach past it:
    each is refused as malformed (RST_STREAM PROTOCOL_ERROR) or with a
    400, never opened, and the connection goes on."""
    base = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", args.path), (":authority", "localhost")]
    malformed = {
        "CR LF in :protocol": [(":protocol", "websocket\r\nx-injected: 1")],
        "NUL in :protocol": [(":protocol", "websocket\x00")],
        "a list in :protocol": [(":protocol", "websocket, h2c")],
        "upgrade field": [("upgrade", "h2c")],
        "connection field": [("connection", "upgrade")],
        "CR LF in a key": [("sec-websocket-key", "x\r\nx-injected: 1")],
        "absolute :path": [(":path", "http://127.0.0.1/ws/echo")],
        "upper-case name": [("Sec-WebSocket-Key", "eA==")],
        "transfer-encoding": [("transfer-encoding", "chunked")],
    }
    expect = {}
    for what, change in malformed.items():
        names = {n for n, _ in change if n.startswith(":")}
        headers = [(n, v) for n, v in base if n not in names]
        pseudo = [(n, v) for n, v in change if n.startswith(":")]
        regular = [(n, v) for n, v in change if not n.startswith(":")]
        # Pseudo-header fields first, as RFC 9113 wants: the field itself is what is wrong.
        expect[c.request(pseudo + headers + regular)] = (what, ("reset", int(h2.errors.ErrorCodes.PROTOCOL_ERROR)))
    expect[c.request(base + [("host", "elsewhere.example")])] = ("host and :authority differ", 400)
    for sid, (what, want) in expect.items():
        got = c.answer(sid)
        assert got == want, f"{what}: {got}, expected {want}"
    assert c.answer(c.get("/index.html")) == 200
    print("OK smuggle")


def case_reset_flood(c, args):
    """Tunnels opened and reset at once, over and over (rapid reset): each
    costs the server a backend handshake; the connection is told to calm
    down (GOAWAY ENHANCE_YOUR_CALM) long before a thousand."""
    sent = 0
    while sent < 1000 and c.goaway is None and not c.closed:
        # A hundred at a time, as fast as an attacker writes them.
        for _ in range(100):
            sid = c.conn.get_next_available_stream_id()
            c.conn.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", args.path), (":authority", "localhost")])
            c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        sent += 100
        try:
            c.flush()
            c.pump(time.monotonic() + 0.01)
        except (BrokenPipeError, ConnectionResetError):
            # Closed under our writes: the GOAWAY may be lost with it.
            c.closed = True
    if not c.closed:
        c.wait(lambda: c.goaway is not None or c.closed, "the server's GOAWAY")
    assert c.closed or c.goaway == int(h2.errors.ErrorCodes.ENHANCE_YOUR_CALM), f"GOAWAY {c.goaway} after {sent} tunnels"
    print(f"OK reset_flood: stopped after {sent} tunnels (GOAWAY {c.goaway})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tls", action="store_true")
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("--path", default="/ws/echo")
    p.add_argument("--log", help="warren's error log (LogLevel debug), for cases that watch it")
    p.add_argument("case")
    args = p.parse_args()
    c = Client(args.port, args.tls, args.timeout, upgrade=args.case == "upgraded", rcvbuf=4096 if args.case == "never_reading" else None)
    globals()["case_" + args.case](c, args)


if __name__ == "__main__":
    main()
