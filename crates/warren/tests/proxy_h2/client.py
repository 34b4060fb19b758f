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
  post PATH N        a POST with an N-byte body; one JSON line as for get
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

    def request(self, path, method="GET", body=b""):
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path)]
        if body:
            headers.append(("content-length", str(len(body))))
        self.conn.send_headers(sid, headers, end_stream=not body)
        if body:
            # The whole body, as the windows let it go.
            self.pending = (sid, body)
            self.push_body()
        self.streams[sid] = {"path": path, "interim": [], "status": None, "fields": {}, "body": b"", "reset": None, "ended": False}
        self.flush()
        return sid

    def push_body(self):
        sid, body = self.pending
        while body:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room <= 0:
                break
            self.conn.send_data(sid, body[:room], end_stream=len(body) <= room)
            body = body[room:]
        self.pending = (sid, body)

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
        sid = c.request(a.args[0], "POST", b"x" * int(a.args[1]))
        c.until(lambda: c.finished(sid))
        c.report(sid)
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
