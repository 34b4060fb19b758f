#!/usr/bin/env python3
"""An HTTP/1.1 backend that records how request bodies arrive, for warren's
streamed-upload tests (crates/warren/tests/proxy_upload.rs).

Binds 127.0.0.1 on a free port, prints the port on its first line, and
serves until its standard input closes. Connections are kept alive.

  POST /upload?id=ID       reads the body (Content-Length or chunked) in
                           pieces of at most 4 KB, recording the bytes so far
                           under ID; answers "framing=length|chunked
                           bytes=N sum=S" (S: the bytes' sum modulo 2**32)
  POST /upload?id=ID&hold  the same, but stops after the first piece until
                           /release?id=ID (the test's own request)
  POST /early              413 at once, the body unread (then drained until
                           the connection closes)
  GET /progress?id=ID      the bytes of ID's body read so far (-1: none yet)
  GET /release?id=ID       lets a held upload read on
  GET /cut                 bodies whose connection closed before their end
  GET /seen                the request lines so far, one a line
  GET /connections         connections accepted so far
"""

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

lock = threading.Lock()
progress = {}
releases = {}
counts = {"cut": 0, "connections": 0}
seen = []


class Cut(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        with lock:
            counts["connections"] += 1
        super().setup()

    def log_message(self, *args):
        pass

    def answer(self, text):
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def parse_request(self):
        ok = super().parse_request()
        with lock:
            seen.append(self.requestline)
        return ok

    def query(self):
        return parse_qs(urlsplit(self.path).query, keep_blank_values=True)

    def do_GET(self):
        path = urlsplit(self.path).path
        ident = self.query().get("id", [""])[0]
        if path == "/progress":
            with lock:
                self.answer(str(progress.get(ident, -1)))
        elif path == "/release":
            with lock:
                event = releases.setdefault(ident, threading.Event())
            event.set()
            self.answer("released")
        elif path == "/seen":
            with lock:
                self.answer("".join(line + "\n" for line in seen))
        elif path in ("/cut", "/connections"):
            with lock:
                self.answer(str(counts[path[1:]]))
        else:
            self.answer("hello")

    def read_piece(self, n):
        piece = self.rfile.read1(min(n, 4096))
        if not piece:
            raise Cut()
        return piece

    def do_POST(self):
        if urlsplit(self.path).path == "/early":
            body = b"too large for me"
            self.send_response(413)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            try:
                while self.rfile.read1(65536):
                    pass
            except ConnectionError:
                pass
            self.close_connection = True
            return
        q = self.query()
        ident = q.get("id", [""])[0]
        hold = "hold" in q
        with lock:
            progress[ident] = 0
            event = releases.setdefault(ident, threading.Event())
        got = 0
        total = 0

        def took(piece):
            nonlocal got, total
            got += len(piece)
            total = (total + sum(piece)) % (1 << 32)
            with lock:
                progress[ident] = got
            if hold:
                event.wait()

        try:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                framing = "chunked"
                while True:
                    line = self.rfile.readline()
                    if not line:
                        raise Cut()
                    size = int(line.split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    left = size
                    while left:
                        piece = self.read_piece(left)
                        left -= len(piece)
                        took(piece)
                    self.rfile.readline()
            else:
                framing = "length"
                left = int(self.headers.get("Content-Length", "0"))
                while left:
                    piece = self.read_piece(left)
                    left -= len(piece)
                    took(piece)
        except (Cut, ConnectionError, ValueError):
            with lock:
                counts["cut"] += 1
            self.close_connection = True
            return
        self.answer(f"framing={framing} bytes={got} sum={total}")


def main():
    # Many uploads connect at once in the attack tests: a listen queue of
    # 5 (the default) would drop their SYNs and hold them for seconds.
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
