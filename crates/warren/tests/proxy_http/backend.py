#!/usr/bin/env python3
"""An HTTP/1.1 backend for warren's proxy tests (crates/warren/tests/proxy_http.rs).

Binds 127.0.0.1 on a free port, prints the port on its first line, and
serves until its standard input closes. It keeps connections alive and
counts them, so that tests can see warren reuse them. Paths:

  /echo...        the request as it came: request line, fields, body length and body
  /connections    how many connections were accepted so far
  /seen           the request lines of every request so far, one a line
  /redirect       302 to this backend's own URL /landing
  /cookie         a Set-Cookie for the backend's domain and path
  /big?n=N        N bytes, chunked, written in 64 KB pieces
  /hang           never answers
  /short          announces 100 bytes, sends 10 and closes
  /malformed      a head that is not HTTP
  /reset          closes the connection at once, with a reset
  /error          500 with a page of its own
  /early          answers 413 at once without reading the request body (and
                  without 100 Continue to Expect: 100-continue)
  /hints          103 Early Hints (Link: </late.js>) then 200 with what it saw;
                  to Expect: 100-continue, 103 (Link: </style.css>) then 100
  /many-hints     eleven 103s, then 200
  /no-continue    ignores Expect: 100-continue; reads the body, says its length
  /refuse         401 at once (no 100 Continue), the connection kept, then
                  reads the body all the same (RFC 9110 10.1.1 lets it)
  /unasked-100    100 Continue to a request that did not ask, then 200
  /huge-hint      a 103 whose head is larger than 64 KB, then 200
  /tls            over TLS: the SNI name the client sent and the ALPN protocol chosen

With `--tls CERT KEY` it speaks HTTPS (TLS 1.2 and 1.3, ALPN http/1.1).
"""

import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

connections = 0
seen = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        global connections
        with lock:
            connections += 1
        super().setup()

    def log_message(self, *args):
        pass

    def handle_expect_100(self):
        if self.path.startswith(("/early", "/no-continue", "/refuse")):
            return True
        if self.path.startswith("/hints"):
            self.hint("</style.css>")
        return super().handle_expect_100()

    def hint(self, link):
        self.wfile.write(f"HTTP/1.1 103 Early Hints\r\nLink: {link}; rel=preload\r\n\r\n".encode())
        self.wfile.flush()

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body, "chunked"
                body += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or "0")
        return self.rfile.read(n), "length"

    def send(self, status, body, ctype="text/plain", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer(self):
        path = self.path
        with lock:
            seen.append(self.requestline)
        if path.startswith("/early"):
            self.send(413, b"too big\n", extra=[("Connection", "close")])
            self.close_connection = True
            return
        if path.startswith("/refuse"):
            self.send(401, b"who are you\n")
            self.read_body()
            return
        body, framing = self.read_body()
        if path.startswith("/hints"):
            self.hint("</late.js>")
            self.send(200, f"hinted: body-length {len(body)}, expect {self.headers.get('Expect')}\n".encode())
        elif path == "/many-hints":
            for _ in range(11):
                self.hint("</x.css>")
            self.send(200, b"too many hints\n")
        elif path == "/unasked-100":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.send(200, b"after an unasked 100\n")
        elif path == "/huge-hint":
            self.hint("<" + "a" * 70000 + ">")
            self.send(200, b"after a huge hint\n")
        elif path == "/no-continue":
            self.send(200, f"got {len(body)} bytes\n".encode())
        elif path.startswith("/echo"):
            lines = [f"{self.command} {self.path} {self.request_version}"]
            lines += [f"{k}: {v}" for k, v in self.headers.items()]
            lines += [f"body-framing: {framing}", f"body-length: {len(body)}", ""]
            self.send(200, "\n".join(lines).encode() + body, extra=[("X-Hop", "secret"), ("Connection", "X-Hop"), ("Keep-Alive", "timeout=5")])
        elif path == "/seen":
            with lock:
                self.send(200, "".join(line + "\n" for line in seen).encode())
        elif path == "/connections":
            self.send(200, str(connections).encode())
        elif path == "/redirect":
            port = self.server.server_address[1]
            self.send(302, b"moved\n", extra=[("Location", f"http://127.0.0.1:{port}/landing?x=1")])
        elif path == "/cookie":
            self.send(200, b"cookie\n", extra=[("Set-Cookie", "sid=1; Domain=backend.internal; Path=/app")])
        elif path.startswith("/big"):
            n = int(path.split("n=")[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            piece = b"x" * 65536
            while n > 0:
                part = piece[: min(n, len(piece))]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                n -= len(part)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/hang":
            time.sleep(3600)
        elif path == "/short":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            self.wfile.flush()
            self.close_connection = True
        elif path == "/malformed":
            self.wfile.write(b"this is not HTTP at all\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif path == "/reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
        elif path == "/error":
            self.send(500, b"the backend's own error page\n")
        elif path == "/tls":
            conn = self.connection
            alpn = conn.selected_alpn_protocol() if isinstance(conn, ssl.SSLSocket) else None
            self.send(200, f"sni={getattr(conn, 'sni', None)} alpn={alpn}".encode())
        else:
            self.send(200, f"backend saw {self.command} {self.path}\n".encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = answer


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        context.set_alpn_protocols(["http/1.1"])

        def remember_sni(sock, name, _context):
            sock.sni = name or ""

        context.sni_callback = remember_sni
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
