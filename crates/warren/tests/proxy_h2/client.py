#!/usr/bin/env python3
"""The HTTP/2 client of warren's proxy tests for HTTP/2 clients
(crates/warren/tests/proxy_h2.rs, attacks_h2proxy.rs), with the `h2`
package from PyPI (hyper-h2), cleartext prior knowledge.

    client.py --port P CASE [ARGS...]

  get PATH...        every PATH on its own stream of one connection, all at
                     once; one JSON line per stream (in PATH order): status,
                     interim answers (status and fields, in order), fields,
                     body (text if under 100 KB, else its length) and reset code
  seq METHOD:PATH... each asked once the previous one ended, on one
                     connection (a POST with the 4-byte body "body"); one
                     JSON line each as for get
  post PATH N [chunked]
                     a POST with an N-byte body of "x" ("chunked": without
                     content-length); one JSON line as for get
  upload PATH N [chunked]
                     the same (bytes i % 251), sending the first half, then printing "HALF"
                     and waiting for a line on standard input before the rest
  uploadreset PATH N the first half as for upload, then (after the line) the
                     stream is reset, and /api/x asked as for reset
  push PATH N        a POST of N bytes, printing "SENT n" each time more of
                     it went (as the windows let it), then the JSON line
  uploads PATH N SIZE [HELD M HSIZE]
                     N POST streams at once, each a SIZE-byte body (i % 251)
                     sent as the windows let it, all of them interleaved;
                     one JSON line each as for get (PATH gets "&n=I"). With
                     HELD: first M streams to HELD with HSIZE-byte bodies,
                     sent alike but neither awaited nor reported
  dribble PATH N     N POST streams without content-length, one byte sent on
                     each; prints "OPEN", then another byte on each for every
                     line on standard input, until it closes
  lie PATH           content-length 10 and 40 bytes of DATA on one stream
                     (a request line among them), then 5 bytes ending a
                     stream that announced 10; prints each stream's reset
                     code ("RESET a b"), then asks /api/x as for reset
  hinted PATH        asks PATH; prints "HINT status link" as soon as its
                     first interim answer comes (failing if its final answer
                     came first), then one JSON line as for get
  stall PATH...      asks every PATH on one connection and, once their
                     answers' heads are in, reads nothing more (the windows
                     stay shut) until standard input closes; prints "HEAD"
                     and the statuses when the heads came
  reset PATH         asks PATH, resets the stream once the head and some
                     DATA came, then asks /api/x on the same connection and
                     prints "OK status" with that answer's status
  resetall PATH N    N streams asking PATH, all reset once each has some
                     DATA (or has ended), then /api/x as for reset
  flood PATH N       N streams asking PATH, each reset at once, then one
                     /api/x; prints "OK status" (or "GOAWAY code")

Every wait is bounded by --timeout (a deadline, not a sleep); a failed
expectation exits non-zero.
"""

import argparse
import json
import socket
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions


class Client:
    def __init__(self, port, timeout):
        self.deadline = time.monotonic() + timeout
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.flush()
        self.streams = {}
        self.goaway = None

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, method="GET", body=b"", length=True, opened=None):
        """Opens a stream; a body goes as the windows let it (with its
        content-length if `length`). `opened`: the stream stays open for a
        body sent later, its content-length that (True: none told)."""
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path)]
        if body and length:
            headers.append(("content-length", str(len(body))))
        if opened is not None and opened is not True:
            headers.append(("content-length", str(opened)))
        self.conn.send_headers(sid, headers, end_stream=not body and opened is None)
        self.streams[sid] = {"path": path, "interim": [], "status": None, "fields": {}, "body": b"", "reset": None, "ended": False}
        if body:
            self.send_body(sid, body, True)
        self.flush()
        return sid

    def send_body(self, sid, body, end):
        """Queues `body` on `sid`; it goes as the windows let it."""
        self.pending = (sid, body, end)
        self.sent = 0
        self.push_body()

    def push_body(self):
        sid, body, end = self.pending
        while body and not self.finished(sid):
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room <= 0:
                break
            try:
                self.conn.send_data(sid, body[:room], end_stream=end and len(body) <= room)
            except h2.exceptions.StreamClosedError:
                # Answered (a 413 ...) and closed before the body's end.
                body = b""
                break
            self.sent += min(room, len(body))
            body = body[room:]
        self.pending = (sid, body, end)

    def body_sent(self):
        return not self.pending[1] or self.finished(self.pending[0])

    def pump(self, ack=True):
        """Reads once and handles what came."""
        left = self.deadline - time.monotonic()
        assert left > 0, "timed out"
        self.sock.settimeout(left)
        data = self.sock.recv(65536)
        assert data, "connection closed"
        for ev in self.conn.receive_data(data):
            s = self.streams.get(getattr(ev, "stream_id", None))
            if isinstance(ev, h2.events.InformationalResponseReceived):
                s["interim"].append([dict(ev.headers)[b":status"].decode(), {k.decode(): v.decode() for k, v in ev.headers if not k.startswith(b":")}])
            elif isinstance(ev, h2.events.ResponseReceived):
                fields = {k.decode(): v.decode() for k, v in ev.headers}
                s["status"] = int(fields.pop(":status"))
                s["fields"] = fields
            elif isinstance(ev, h2.events.DataReceived):
                if s is not None:
                    s["body"] += ev.data
                if ack:
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                s["ended"] = True
            elif isinstance(ev, h2.events.StreamReset):
                if s is not None:
                    s["reset"] = int(ev.error_code)
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.goaway = int(ev.error_code)
            elif isinstance(ev, h2.events.WindowUpdated) and getattr(self, "pending", None):
                self.push_body()
        self.flush()

    def send_all(self, sid, body, end):
        """Sends `body` on `sid`, reading what comes until it has all gone."""
        self.send_body(sid, body, end)
        self.flush()
        self.until(self.body_sent)


    def until(self, done, ack=True):
        while not done():
            self.pump(ack)

    def finished(self, sid):
        s = self.streams[sid]
        return s["ended"] or s["reset"] is not None

    def report(self, sid):
        s = dict(self.streams[sid])
        body = s.pop("body")
        try:
            s["body"] = body.decode() if len(body) < 100000 else len(body)
        except UnicodeDecodeError:
            s["body"] = len(body)
        print(json.dumps(s), flush=True)


def body_of(n):
    """The bytes backend.py sums: i % 251."""
    return (bytes(range(251)) * (n // 251 + 1))[:n]


def next_request_served(c):
    """After the resets: the same connection serves a request, and says so."""
    again = c.request("/api/x")
    c.until(lambda: c.finished(again))
    assert c.streams[again]["ended"], c.streams[again]
    print(f"OK {c.streams[again]['status']}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("case")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    c = Client(a.port, a.timeout)
    if a.case == "get":
        sids = [c.request(path) for path in a.args]
        c.until(lambda: all(c.finished(s) for s in sids))
        for s in sids:
            c.report(s)
    elif a.case == "seq":
        for arg in a.args:
            method, path = arg.split(":", 1)
            sid = c.request(path, method, b"body" if method == "POST" else b"")
            c.until(lambda: c.finished(sid))
            c.report(sid)
    elif a.case == "post":
        sid = c.request(a.args[0], "POST", b"x" * int(a.args[1]), length="chunked" not in a.args[2:])
        c.until(lambda: c.finished(sid))
        c.report(sid)
    elif a.case in ("upload", "uploadreset"):
        body = body_of(int(a.args[1]))
        half = len(body) // 2
        sid = c.request(a.args[0], "POST", opened=True if "chunked" in a.args[2:] else len(body))
        c.send_all(sid, body[:half], False)
        print("HALF", flush=True)
        sys.stdin.readline()
        if a.case == "uploadreset":
            c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            c.flush()
            next_request_served(c)
        else:
            c.send_all(sid, body[half:], True)
            c.until(lambda: c.finished(sid))
            c.report(sid)
    elif a.case == "push":
        sid = c.request(a.args[0], "POST", body_of(int(a.args[1])))
        reported = 0
        while not c.finished(sid):
            if c.sent > reported:
                reported = c.sent
                print(f"SENT {reported}", flush=True)
            c.pump()
        c.report(sid)
    elif a.case == "uploads":
        n, size = int(a.args[1]), int(a.args[2])
        body = body_of(size)
        left = {}
        held = int(a.args[4]) if len(a.args) > 4 else 0
        for i in range(held):
            hsize = int(a.args[5])
            left[c.request(f"{a.args[3]}&n={i}", "POST", opened=hsize)] = body_of(hsize)
        waited = []
        for i in range(n):
            sid = c.request(f"{a.args[0]}&n={i}", "POST", opened=size)
            left[sid] = body
            waited.append(sid)
        while not all(c.finished(s) for s in waited):
            for sid in left:
                while left[sid] and not c.finished(sid):
                    room = min(c.conn.local_flow_control_window(sid), c.conn.max_outbound_frame_size, 16384)
                    if room <= 0:
                        break
                    chunk = left[sid][:room]
                    c.conn.send_data(sid, chunk, end_stream=len(chunk) == len(left[sid]))
                    left[sid] = left[sid][room:]
            c.flush()
            c.pump()
        for sid in waited:
            c.report(sid)
    elif a.case == "dribble":
        sids = [c.request(a.args[0], "POST", opened=True) for _ in range(int(a.args[1]))]
        for sid in sids:
            c.conn.send_data(sid, b"x")
        c.flush()
        print("OPEN", flush=True)
        for _ in sys.stdin:
            for sid in sids:
                if not c.finished(sid):
                    c.conn.send_data(sid, b"x")
            c.flush()
    elif a.case == "lie":
        over = c.request(a.args[0], "POST", opened=10)
        c.conn.send_data(over, b"0123456789GET /smuggled HTTP/1.1\r\nHost: b\r\n\r\n")
        under = c.request(a.args[0], "POST", opened=10)
        c.conn.send_data(under, b"01234", end_stream=True)
        c.flush()
        c.until(lambda: c.finished(over) and c.finished(under))
        print(f"RESET {c.streams[over]['reset']} {c.streams[under]['reset']}", flush=True)
        next_request_served(c)
    elif a.case == "hinted":
        sid = c.request(a.args[0])
        c.until(lambda: c.streams[sid]["interim"] or c.finished(sid))
        s = c.streams[sid]
        assert s["status"] is None and not c.finished(sid), f"the answer came before any interim one: {s}"
        status, fields = s["interim"][0]
        print(f"HINT {status} {fields.get('link', '-')}", flush=True)
        c.until(lambda: c.finished(sid))
        c.report(sid)
    elif a.case == "stall":
        sids = [c.request(path) for path in a.args]
        c.until(lambda: all(c.streams[s]["status"] is not None for s in sids), ack=False)
        print("HEAD " + " ".join(str(c.streams[s]["status"]) for s in sids), flush=True)
        sys.stdin.read()
    elif a.case == "reset":
        sid = c.request(a.args[0])
        c.until(lambda: c.streams[sid]["body"] or c.finished(sid))
        assert not c.finished(sid), "the answer ended before it could be reset"
        c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        c.flush()
        next_request_served(c)
    elif a.case == "resetall":
        sids = [c.request(a.args[0]) for _ in range(int(a.args[1]))]
        c.until(lambda: all(c.streams[s]["body"] or c.finished(s) for s in sids))
        for s in sids:
            if not c.finished(s):
                c.conn.reset_stream(s, h2.errors.ErrorCodes.CANCEL)
        c.flush()
        next_request_served(c)
    elif a.case == "flood":
        for _ in range(int(a.args[1])):
            sid = c.request(a.args[0])
            c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            c.flush()
        last = c.request("/api/x")
        c.until(lambda: c.finished(last) or c.goaway is not None)
        print(f"GOAWAY {c.goaway}" if c.goaway is not None and not c.finished(last) else f"OK {c.streams[last]['status']}", flush=True)
    else:
        sys.exit(f"unknown case {a.case}")


if __name__ == "__main__":
    main()
