#!/usr/bin/env python3
"""HTTP/2 conformance checks for a server (RFC 9113, HPACK RFC 7541).

    conformance.py --host 127.0.0.1 --port N [--tls] [--path /index.html]
                   [--big-path /100k.bin] [--post-path /x.php]
                   [--cookie-path /echo-cookie] [-k SECTION] [-v]

Each case runs on a connection of its own (prior knowledge over cleartext,
or TLS with ALPN h2 and no certificate verification), within a deadline;
one line per case (PASS / FAIL / SKIP), a summary, exit status 1 if any
case failed. Written from the RFCs' text; README.md beside this file says
what a case accepts where the RFCs leave a choice.
"""

import argparse
import select
import signal
import socket
import ssl
import struct
import sys
import time

import hpack
from h2.errors import ErrorCodes
from hyperframe.exceptions import HyperframeError
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, PushPromiseFrame, RstStreamFrame, SettingsFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types (RFC 9113 §6) and flags.
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20

# Settings (§6.5.2).
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE, MAX_HEADER_LIST_SIZE = range(1, 7)

# Error codes (§7).
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED, FRAME_SIZE_ERROR, \
    REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, CONNECT_ERROR, ENHANCE_YOUR_CALM = range(12)

PROBE = b"h2probe!"  # the payload of the PING a check sends after the frame under test
MAX_WINDOW = 2**31 - 1


def code_name(code):
    try:
        return ErrorCodes(code).name
    except ValueError:
        return "0x%x" % code


# --- outcomes -------------------------------------------------------------


class Fail(Exception):
    pass


class Skip(Exception):
    pass


class Warn(Exception):
    """A SHOULD (or a hardening expectation beyond the RFC) not met: WARN,
    which fails the run only with --strict."""


class Closed(Exception):
    """The server closed the connection (or reset it)."""


class Timeout(Exception):
    """The case's deadline passed while waiting."""


class CaseTimeout(BaseException):
    """The safety net: a case ran past its deadline by a wide margin."""


# --- frames the client sends ----------------------------------------------


def frame(ftype, flags, stream, payload=b"", length=None):
    """A raw frame; `length` overrides the length field (for malformed frames)."""
    n = len(payload) if length is None else length
    return struct.pack(">I", n)[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def headers_frame(stream, block, end_stream=True, end_headers=True, pad=None, priority=None):
    """HEADERS; `pad` is the padding length, `priority` (dependency, weight, exclusive)."""
    flags = (END_STREAM if end_stream else 0) | (END_HEADERS if end_headers else 0)
    payload = block
    if priority is not None:
        dep, weight, excl = priority
        payload = struct.pack(">IB", dep | (0x80000000 if excl else 0), weight - 1) + payload
        flags |= PRIORITY_FLAG
    if pad is not None:
        payload = bytes([pad]) + payload + b"\0" * pad
        flags |= PADDED
    return frame(HEADERS, flags, stream, payload)


def continuation(stream, block, end_headers=True):
    return frame(CONTINUATION, END_HEADERS if end_headers else 0, stream, block)


def data(stream, payload, end_stream=True):
    return frame(DATA, END_STREAM if end_stream else 0, stream, payload)


def settings(*pairs, ack=False, stream=0):
    return frame(SETTINGS, ACK if ack else 0, stream, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def ping(payload=b"12345678", ack=False, stream=0):
    return frame(PING, ACK if ack else 0, stream, payload)


def rst_stream(stream, code=CANCEL):
    return frame(RST_STREAM, 0, stream, struct.pack(">I", code))


def window_update(stream, increment):
    return frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment))


def goaway(last_stream=0, code=NO_ERROR, stream=0):
    return frame(GOAWAY, 0, stream, struct.pack(">II", last_stream, code))


def priority(stream, dependency, weight=16, exclusive=False):
    return frame(PRIORITY, 0, stream, struct.pack(">IB", dependency | (0x80000000 if exclusive else 0), weight - 1))


# --- HPACK, by hand ---------------------------------------------------------
# Request blocks are written as literals without indexing (RFC 7541 §6.2.2),
# so that any name or value can be sent, and each block stands alone: no
# dynamic table state carries from one block to the next.


def hpack_int(value, prefix_bits, first=0):
    """RFC 7541 §5.1: an integer with an N-bit prefix; `first` holds the pattern bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_str(s):
    """A string literal without Huffman coding (§5.2)."""
    raw = s.encode("latin-1") if isinstance(s, str) else s
    return hpack_int(len(raw), 7) + raw


def literal(name, value, indexing=False):
    """A literal field with a new name: without indexing, or with incremental indexing."""
    return (b"\x40" if indexing else b"\x00") + hpack_str(name) + hpack_str(value)


def block(fields):
    return b"".join(literal(n, v) for n, v in fields)


# --- the connection ---------------------------------------------------------


class Response:
    def __init__(self):
        self.headers = []   # the final response's fields
        self.informational = []
        self.trailers = None
        self.body = b""
        self.complete = False

    @property
    def status(self):
        for n, v in self.headers:
            if n == ":status":
                return int(v)
        return None

    def header(self, name):
        return [v for n, v in self.headers if n == name]


class Conn:
    """One client connection: connects, sends the preface and SETTINGS, reads
    the server's frames (checking what every server frame must satisfy), and
    keeps the flow-control accounting of what the server may send."""

    def __init__(self, opt, client_settings=((ENABLE_PUSH, 0),), preface=PREFACE, handshake=True, deadline=None):
        self.opt = opt
        self.deadline = deadline or time.monotonic() + opt.timeout
        self.inbuf = bytearray()
        self.closed = False
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = 1 << 24
        self.server_settings = {}
        self.first_frame = None
        self.settings_acked = 0
        self.pings = []          # PING ACK payloads received
        self.goaway = None
        self.resets = {}         # stream -> RST_STREAM code
        self.responses = {}      # stream -> Response
        self.stream_id = -1
        self.auto_window = True
        self.log = []
        # What the server may still send: our windows (§6.9).
        self.our_initial_window = 65535
        self.our_max_frame = 16384
        for k, v in client_settings or ():
            if k == INITIAL_WINDOW_SIZE:
                self.our_initial_window = v
            if k == MAX_FRAME_SIZE:
                self.our_max_frame = v
        self.conn_window = 65535
        self.stream_windows = {}
        self.sock = self._connect()
        if preface is not None:
            self.send(preface + (settings(*client_settings) if client_settings is not None else b""))
        if handshake:
            self.handshake()

    def _connect(self):
        try:
            sock = socket.create_connection((self.opt.host, self.opt.port), timeout=self.remaining())
        except OSError as e:
            raise Fail("cannot connect: %s" % e)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if not self.opt.tls:
            return sock
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        try:
            tls = ctx.wrap_socket(sock, server_hostname=self.opt.authority.split(":")[0])
        except (OSError, ssl.SSLError) as e:
            raise Fail("TLS handshake failed: %s" % e)
        if tls.selected_alpn_protocol() != "h2":
            raise Fail("ALPN did not select h2 (got %r)" % tls.selected_alpn_protocol())
        return tls

    def remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Timeout()
        return left

    def next_stream(self):
        self.stream_id += 2
        return self.stream_id

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # Sending. The socket is read while it is written, so that a server
    # that writes while it reads cannot deadlock with us; what is read waits
    # in inbuf. A server that closes the connection meanwhile ends the
    # sending, not the case: what it sent before is still read.
    def send(self, *chunks):
        buf = memoryview(b"".join(chunks))
        if self.closed:
            return
        self.sock.setblocking(False)
        try:
            while buf:
                wait = min(self.remaining(), 1.0)
                r, w, _ = select.select([self.sock], [self.sock], [], wait)
                if r or (self.opt.tls and self.sock.pending()):
                    self._pull()
                    if self.closed:
                        return
                if w:
                    try:
                        n = self.sock.send(buf[:65536])
                        buf = buf[n:]
                    except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                        pass
                    except OSError:
                        self.closed = True
                        return
        finally:
            if not self.closed:
                self.sock.settimeout(None)

    def send_until_blocked(self, chunk, count, stall=1.0):
        """Sends `chunk` up to `count` times without reading; stops early when
        the server has not taken any more for `stall` seconds (its receive
        buffer and ours are full) or closes. Returns how many were sent."""
        sent = 0
        self.sock.settimeout(stall)
        try:
            for sent in range(count):
                self.remaining()
                self.sock.sendall(chunk)
            sent = count
        except (socket.timeout, TimeoutError):
            pass
        except OSError:
            self.closed = True
        return sent

    def _pull(self):
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
        self.inbuf += chunk
        if len(self.inbuf) > 64 << 20:
            raise Fail("the server sent over 64 MB this check did not read")

    # Receiving.
    def _read_exact(self, n):
        while len(self.inbuf) < n:
            if self.closed:
                raise Closed()
            self.sock.settimeout(self.remaining())
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, TimeoutError):
                raise Timeout()
            except (ConnectionError, ssl.SSLError, OSError):
                chunk = b""
            if not chunk:
                self.closed = True
                raise Closed()
            self.inbuf += chunk
        out = bytes(self.inbuf[:n])
        del self.inbuf[:n]
        return out

    def recv_frame(self):
        """The server's next frame, checked and accounted for. HEADERS and
        PUSH_PROMISE come with their CONTINUATIONs merged and decoded
        (`.fields`)."""
        f = self._parse_one()
        if isinstance(f, (HeadersFrame, PushPromiseFrame)):
            fragment = bytes(f.data)
            while "END_HEADERS" not in f.flags:
                c = self._parse_one()
                if not isinstance(c, ContinuationFrame) or c.stream_id != f.stream_id:
                    raise Fail("the server interrupted its own header block with %s" % type(c).__name__)
                fragment += bytes(c.data)
                if "END_HEADERS" in c.flags:
                    break
            f.fragment = fragment
            try:
                f.fields = self.decoder.decode(fragment)
            except Exception as e:  # hpack's errors
                raise Fail("cannot decode the server's header block: %s" % e)
        if self.opt.verbose:
            print("      <- %s" % describe(f))
        self._account(f)
        return f

    def _parse_one(self):
        head = self._read_exact(9)
        try:
            f, length = Frame.parse_frame_header(memoryview(head))
        except HyperframeError as e:
            raise Fail("invalid frame header from the server: %s" % e)
        if length > self.our_max_frame:
            raise Fail("the server sent a %d-byte frame, over our SETTINGS_MAX_FRAME_SIZE %d" % (length, self.our_max_frame))
        body = self._read_exact(length)
        try:
            f.parse_body(memoryview(body))
        except HyperframeError as e:
            raise Fail("invalid %s frame from the server: %s" % (type(f).__name__, e))
        f.length = length
        if self.first_frame is None:
            self.first_frame = f
        return f

    def _account(self, f):
        if isinstance(f, SettingsFrame):
            if "ACK" in f.flags:
                self.settings_acked += 1
            else:
                self.server_settings.update(f.settings)
                self.send(settings(ack=True))
        elif isinstance(f, PingFrame):
            if "ACK" in f.flags:
                self.pings.append(bytes(f.opaque_data))
            else:
                self.send(ping(bytes(f.opaque_data), ack=True))
        elif isinstance(f, GoAwayFrame):
            self.goaway = f
        elif isinstance(f, RstStreamFrame):
            self.resets[f.stream_id] = f.error_code
        elif isinstance(f, PushPromiseFrame):
            raise Fail("PUSH_PROMISE although we sent SETTINGS_ENABLE_PUSH 0 (§8.4)")
        elif isinstance(f, DataFrame):
            n = f.length  # padding counts (§6.9.1)
            window = self.stream_windows.get(f.stream_id, self.our_initial_window)
            if n > self.conn_window or n > window:
                raise Fail("the server overran the flow-control window: %d bytes of DATA with %d on the connection, %d on stream %d"
                           % (n, self.conn_window, window, f.stream_id))
            self.conn_window -= n
            self.stream_windows[f.stream_id] = window - n
            if self.auto_window and n:
                self.grant(0, n)
                if "END_STREAM" not in f.flags:
                    self.grant(f.stream_id, n)
        if isinstance(f, (HeadersFrame, DataFrame)):
            r = self.responses.setdefault(f.stream_id, Response())
            if isinstance(f, HeadersFrame):
                if not r.headers:
                    check_response_fields(f.fields)
                    status = dict(f.fields).get(":status", "")
                    if status.startswith("1") and status != "101":
                        r.informational.append(f.fields)
                    else:
                        r.headers = f.fields
                else:
                    r.trailers = f.fields
            else:
                r.body += bytes(f.data)
            if "END_STREAM" in f.flags:
                r.complete = True

    def grant(self, stream, n):
        self.send(window_update(stream, n))
        if stream == 0:
            self.conn_window += n
        else:
            self.stream_windows[stream] = self.stream_windows.get(stream, self.our_initial_window) + n

    def set_initial_window(self, value):
        """SETTINGS_INITIAL_WINDOW_SIZE mid-connection: every stream's window moves by the difference (§6.9.2)."""
        delta = value - self.our_initial_window
        self.our_initial_window = value
        for s in self.stream_windows:
            self.stream_windows[s] += delta
        self.send(settings((INITIAL_WINDOW_SIZE, value)))

    def handshake(self):
        """Reads up to the server's SETTINGS (which it ACKs, in _account)."""
        try:
            while True:
                f = self.recv_frame()
                if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
                    return
                if isinstance(f, GoAwayFrame):
                    raise Fail("GOAWAY %s during the handshake" % code_name(f.error_code))
        except Closed:
            raise Fail("the server closed the connection during the handshake")
        except Timeout:
            raise Fail("no SETTINGS from the server")

    # Requests.
    def request_fields(self, method="GET", path=None, extra=()):
        return [(":method", method), (":scheme", "https" if self.opt.tls else "http"),
                (":authority", self.opt.authority), (":path", path or self.opt.path)] + list(extra)

    def request(self, stream=None, method="GET", path=None, extra=(), end_stream=True, fields=None):
        stream = stream or self.next_stream()
        self.send(headers_frame(stream, block(fields or self.request_fields(method, path, extra)), end_stream=end_stream))
        return stream

    def response(self, stream):
        """Reads until the response on `stream` is complete."""
        try:
            while True:
                r = self.responses.get(stream)
                if r and r.complete:
                    return r
                f = self.recv_frame()
                if isinstance(f, RstStreamFrame) and f.stream_id == stream:
                    raise Fail("RST_STREAM %s on stream %d instead of a response" % (code_name(f.error_code), stream))
                if isinstance(f, GoAwayFrame) and (f.error_code != NO_ERROR or f.last_stream_id < stream):
                    raise Fail("GOAWAY %s instead of a response on stream %d" % (code_name(f.error_code), stream))
        except Closed:
            raise Fail("connection closed before the response on stream %d was complete" % stream)
        except Timeout:
            raise Fail("no complete response on stream %d within %gs" % (stream, self.opt.timeout))

    def get_ok(self, stream=None, path=None):
        r = self.response(self.request(stream, path=path))
        if r.status != 200:
            raise Fail("GET %s answered %s, expected 200" % (path or self.opt.path, r.status))
        return r


def check_response_fields(fields):
    """§8.3 and §8.2.2: what a response's field section must be."""
    seen_regular = False
    names = [n for n, _ in fields]
    if names.count(":status") != 1:
        raise Fail("response without exactly one :status: %r" % names)
    for n, v in fields:
        if n != n.lower():
            raise Fail("upper-case field name in the response: %r" % n)
        if n.startswith(":"):
            if n != ":status":
                raise Fail("pseudo-header %s in a response" % n)
            if seen_regular:
                raise Fail(":status after a regular field")
        else:
            seen_regular = True
            if n in ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"):
                raise Fail("connection-specific field %r in the response (§8.2.2)" % n)


def describe(f):
    name = type(f).__name__.replace("Frame", "").upper()
    extra = ""
    if isinstance(f, (RstStreamFrame, GoAwayFrame)):
        extra = " " + code_name(f.error_code)
    if isinstance(f, HeadersFrame):
        extra = " %r" % getattr(f, "fields", "")
    if isinstance(f, DataFrame):
        extra = " %d bytes" % f.length
    return "%s stream=%d flags=%s%s" % (name, f.stream_id, ",".join(sorted(f.flags)) or "-", extra)


# --- expectations -----------------------------------------------------------


def names(codes):
    return "/".join(code_name(c) for c in codes)


def expect_connection_error(c, *codes, probe=True, need_goaway=False):
    """A connection error (§5.4.1): GOAWAY with one of `codes`, or the
    connection closed (GOAWAY is a SHOULD). A server that goes on (answers
    the PING sent after the frame under test: frames are processed in order,
    and a connection error ends the processing) fails."""
    if probe:
        c.send(ping(PROBE))
    rst = None
    try:
        while True:
            f = c.recv_frame()
            if isinstance(f, GoAwayFrame):
                if f.error_code in codes:
                    return "GOAWAY %s" % code_name(f.error_code)
                raise Fail("GOAWAY %s, expected %s" % (code_name(f.error_code), names(codes)))
            if isinstance(f, RstStreamFrame):
                rst = "RST_STREAM %s on stream %d" % (code_name(f.error_code), f.stream_id)
            if PROBE in c.pings:
                raise Fail("no connection error (%s): the server answered the PING sent after%s"
                           % (names(codes), ", " + rst + " only" if rst else ""))
    except Closed:
        if need_goaway:
            raise Warn("connection closed without GOAWAY (§5.4.1: SHOULD send GOAWAY first)")
        return "connection closed (no GOAWAY)"
    except Timeout:
        raise Fail("neither GOAWAY %s nor close within %gs%s" % (names(codes), c.opt.timeout, "; got " + rst if rst else ""))


def expect_stream_error(c, stream, *codes, probe=True):
    """A stream error (§5.4.2): RST_STREAM on `stream` with one of `codes`;
    a connection error with one of them is accepted too (an endpoint may
    treat a stream error as a connection error)."""
    if probe:
        c.send(ping(PROBE))
    try:
        while True:
            f = c.recv_frame()
            if isinstance(f, RstStreamFrame) and f.stream_id == stream:
                if f.error_code in codes:
                    return "RST_STREAM %s" % code_name(f.error_code)
                raise Fail("RST_STREAM %s, expected %s" % (code_name(f.error_code), names(codes)))
            if isinstance(f, GoAwayFrame):
                if f.error_code in codes:
                    return "GOAWAY %s" % code_name(f.error_code)
                raise Fail("GOAWAY %s, expected RST_STREAM %s" % (code_name(f.error_code), names(codes)))
    except Closed:
        return "connection closed (no GOAWAY)"
    except Timeout:
        r = c.responses.get(stream)
        got = "; the stream was answered %s" % r.status if r and r.headers else ""
        raise Fail("no RST_STREAM %s on stream %d within %gs%s" % (names(codes), stream, c.opt.timeout, got))


def expect_malformed(c, stream):
    """A malformed request (§8.1.1): a stream error of type PROTOCOL_ERROR,
    which the server MAY precede with an HTTP response; accepted: RST_STREAM
    PROTOCOL_ERROR, a 4xx response (then the stream closed or reset with any
    code), GOAWAY PROTOCOL_ERROR or a close. Anything else — a 2xx, 3xx or
    5xx answer, another error code, nothing — fails."""
    c.send(ping(PROBE))
    try:
        while True:
            r = c.responses.get(stream)
            if r and r.headers and 400 <= r.status < 500:
                return "answered %d" % r.status
            # Another status may have been sent before the fault was seen (an
            # answer given before the body came): a reset may still follow.
            # Once the answer is complete and the PING after our frames is
            # answered, the server has let the request through.
            if r and r.complete and PROBE in c.pings:
                raise Fail("answered %d: the malformed request was not refused" % r.status)
            f = c.recv_frame()
            if isinstance(f, RstStreamFrame) and f.stream_id == stream:
                if f.error_code == PROTOCOL_ERROR:
                    r = c.responses.get(stream)
                    return "RST_STREAM PROTOCOL_ERROR" + (" after %d" % r.status if r and r.headers else "")
                raise Fail("RST_STREAM %s, expected PROTOCOL_ERROR" % code_name(f.error_code))
            if isinstance(f, GoAwayFrame):
                if f.error_code == PROTOCOL_ERROR:
                    return "GOAWAY PROTOCOL_ERROR"
                if f.error_code == NO_ERROR and f.last_stream_id >= stream:
                    continue  # a graceful shutdown that still covers this stream
                raise Fail("GOAWAY %s, expected RST_STREAM PROTOCOL_ERROR" % code_name(f.error_code))
    except Closed:
        return "connection closed (no GOAWAY)"
    except Timeout:
        r = c.responses.get(stream)
        if r and r.headers:
            raise Fail("answered %d: the malformed request was not refused" % r.status)
        raise Fail("neither RST_STREAM PROTOCOL_ERROR nor a 4xx answer within %gs" % c.opt.timeout)


def expect_alive(c):
    """The connection goes on: a PING is answered, with no GOAWAY or RST_STREAM before."""
    c.send(ping(PROBE))
    try:
        while PROBE not in c.pings:
            f = c.recv_frame()
            if isinstance(f, GoAwayFrame):
                raise Fail("GOAWAY %s" % code_name(f.error_code))
            if isinstance(f, RstStreamFrame):
                raise Fail("RST_STREAM %s on stream %d" % (code_name(f.error_code), f.stream_id))
    except Closed:
        raise Fail("the server closed the connection")
    except Timeout:
        raise Fail("no PING ACK within %gs" % c.opt.timeout)


def fresh_get_ok(opt, what="", timeout=None):
    """A normal GET on a new connection is answered 200."""
    c = Conn(opt, deadline=time.monotonic() + (timeout or opt.timeout))
    try:
        c.get_ok()
    except Fail as e:
        raise Fail("%s: a new connection was not served: %s" % (what, e) if what else str(e))
    finally:
        c.close()


# --- the registry -----------------------------------------------------------

CASES = []


def case(section, title, needs=None, timeout_factor=1, should=False):
    """Registers a check: `section` like "6.5/3" (RFC 9113) or "hpack/5.2/1"
    (RFC 7541) or "attack/rapid-reset"; `needs` names an option it cannot do
    without (SKIP when it is not given); `should`: the RFC's requirement is a
    SHOULD (or only the sender's MUST), so a failure is a WARN."""
    def register(fn):
        CASES.append((section, title, fn, needs, timeout_factor, should))
        return fn
    return register


# === RFC 9113 §3.4: the connection preface ===================================

@case("3.4/1", "an invalid connection preface -> GOAWAY PROTOCOL_ERROR or close")
def _(opt):
    c = Conn(opt, preface=b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", client_settings=None, handshake=False)
    c.send(settings())
    # "The peer is not using HTTP/2" (§3.4): a server that speaks HTTP/1.1
    # on the port may answer in HTTP/1.1 (an error status) and close.
    try:
        head = c._read_exact(9)
    except Closed:
        return "connection closed"
    except Timeout:
        raise Fail("no answer nor close within %gs" % opt.timeout)
    if head.startswith(b"HTTP/1."):
        status = (head + c._read_exact(3))[9:12]
        if not status.startswith((b"4", b"5")):
            raise Fail("answered in HTTP/1.x with status %r" % status)
        return "answered HTTP/1.x %s" % status.decode("latin-1")
    c.inbuf[:0] = head
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


@case("3.4/2", "the server's first frame is SETTINGS")
def _(opt):
    c = Conn(opt)
    if not isinstance(c.first_frame, SettingsFrame) or "ACK" in c.first_frame.flags:
        raise Fail("first frame: %s" % describe(c.first_frame))


@case("3.4/3", "a preface not followed by SETTINGS (a PING first) -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt, client_settings=None, preface=PREFACE + ping(), handshake=False)
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


# === §4.1 frame format ========================================================

@case("4.1/1", "a frame of unknown type is ignored")
def _(opt):
    c = Conn(opt)
    c.send(frame(0x7a, 0, 0, b"unknown"), frame(0x7b, 0xff, 1, b"on an idle stream"))
    expect_alive(c)
    c.get_ok()


@case("4.1/2", "unknown flags are ignored (PING with flags 0xfe, HEADERS with unused flags)")
def _(opt):
    c = Conn(opt)
    c.send(frame(PING, 0xfe, 0, PROBE))
    try:
        while PROBE not in c.pings:
            f = c.recv_frame()
            if isinstance(f, (GoAwayFrame, RstStreamFrame)):
                raise Fail(describe(f))
    except (Closed, Timeout) as e:
        raise Fail("the PING with unknown flags was not answered (%s)" % type(e).__name__)
    s = c.next_stream()
    c.send(frame(HEADERS, END_STREAM | END_HEADERS | 0x02 | 0x10 | 0x40 | 0x80, s, block(c.request_fields())))
    r = c.response(s)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


@case("4.1/3", "the reserved bit of the stream identifier is ignored")
def _(opt):
    c = Conn(opt)
    c.send(headers_frame(0x80000001, block(c.request_fields())))
    c.stream_id = 1
    r = c.response(1)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


# === §4.2 frame size ==========================================================

def over_max_frame(c):
    limit = c.server_settings.get(MAX_FRAME_SIZE, 16384)
    if limit >= 2**24 - 1:
        raise Skip("the server's SETTINGS_MAX_FRAME_SIZE is the largest a frame can be")
    return limit + 1


@case("4.2/1", "DATA over SETTINGS_MAX_FRAME_SIZE -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    size = over_max_frame(c)
    s = c.request(method="POST", path=opt.post_path, end_stream=False)
    c.send(data(s, b"x" * size))
    return expect_stream_error(c, s, FRAME_SIZE_ERROR)


@case("4.2/2", "HEADERS over SETTINGS_MAX_FRAME_SIZE -> connection FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    size = over_max_frame(c)
    c.send(headers_frame(c.next_stream(), block(c.request_fields(extra=[("x-pad", "a" * size)]))))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("4.2/3", "a frame shorter than its type requires (WINDOW_UPDATE of 3 bytes) -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(frame(WINDOW_UPDATE, 0, 0, b"\0\0\1"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


# === §4.3 field section compression ===========================================

@case("4.3/1", "an undecodable field block -> COMPRESSION_ERROR")
def _(opt):
    c = Conn(opt)
    # A literal whose value claims 100 bytes and ends after 3.
    c.send(headers_frame(c.next_stream(), block(c.request_fields()) + b"\x00\x01a\x64abc"))
    return expect_connection_error(c, COMPRESSION_ERROR)


@case("4.3/2", "a field block interrupted by a PING -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    b = block(c.request_fields())
    s = c.next_stream()
    c.send(headers_frame(s, b[:10], end_headers=False), ping(), continuation(s, b[10:]))
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


@case("4.3/3", "a field block interrupted by DATA on another stream -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s1 = c.request(method="POST", path=opt.post_path, end_stream=False)
    b = block(c.request_fields())
    s3 = c.next_stream()
    c.send(headers_frame(s3, b[:10], end_headers=False), data(s1, b"x"), continuation(s3, b[10:]))
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


# === §5.1 stream states ========================================================

@case("5.1/1", "idle: DATA -> PROTOCOL_ERROR (§5.1) or STREAM_CLOSED (§6.1)")
def _(opt):
    c = Conn(opt)
    c.send(data(1, b"test"))
    return expect_stream_error(c, 1, PROTOCOL_ERROR, STREAM_CLOSED)


@case("5.1/2", "idle: RST_STREAM -> connection PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(rst_stream(1))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/3", "idle: WINDOW_UPDATE -> connection PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(window_update(1, 100))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/4", "idle: CONTINUATION -> connection PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(continuation(1, block(c.request_fields())))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1/5", "idle: HEADERS opens the stream (a GET is answered)")
def _(opt):
    Conn(opt).get_ok()


@case("5.1/6", "half-closed (remote): DATA -> STREAM_CLOSED")
def _(opt):
    # Our window of 0 keeps the server from finishing its answer: the
    # stream stays half-closed (remote) until we grant it.
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 0)))
    c.auto_window = False
    s = c.request()
    c.send(data(s, b"late"))
    return expect_stream_error(c, s, STREAM_CLOSED)


@case("5.1/7", "half-closed (remote): HEADERS -> STREAM_CLOSED")
def _(opt):
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 0)))
    c.auto_window = False
    s = c.request()
    c.send(headers_frame(s, block([("x-trailer", "late")])))
    return expect_stream_error(c, s, STREAM_CLOSED)


@case("5.1/8", "closed: DATA after the stream ended -> STREAM_CLOSED")
def _(opt):
    c = Conn(opt)
    s = c.request()
    c.response(s)
    c.send(data(s, b"late"))
    return expect_stream_error(c, s, STREAM_CLOSED)


@case("5.1/9", "closed: HEADERS on a closed stream -> STREAM_CLOSED or PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.request()
    c.response(s)
    c.responses.pop(s)
    c.request(s)
    note = expect_stream_error(c, s, STREAM_CLOSED, PROTOCOL_ERROR)
    r = c.responses.get(s)
    if r and r.headers:
        raise Fail("the reused stream was answered %s (%s)" % (r.status, note))
    return note


@case("5.1/10", "closed: DATA after our RST_STREAM is ignored or answered STREAM_CLOSED")
def _(opt):
    # §5.1: after a RST_STREAM, frames the peer sent before it saw the reset
    # may still arrive; the receiver may ignore them for a while or answer
    # STREAM_CLOSED. Any other error, or a connection that stops, fails.
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False)
    c.send(rst_stream(s), data(s, b"late"))
    c.send(ping(PROBE))
    try:
        while PROBE not in c.pings:
            f = c.recv_frame()
            if isinstance(f, GoAwayFrame) and f.error_code != STREAM_CLOSED:
                raise Fail("GOAWAY %s" % code_name(f.error_code))
            if isinstance(f, RstStreamFrame) and f.error_code not in (STREAM_CLOSED, NO_ERROR, CANCEL):
                raise Fail("RST_STREAM %s" % code_name(f.error_code))
            if isinstance(f, GoAwayFrame):
                return "GOAWAY STREAM_CLOSED"
    except Closed:
        return "connection closed"
    except Timeout:
        raise Fail("no PING ACK")


@case("5.1.1/1", "an even stream identifier from the client -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.request(2)
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("5.1.1/2", "a stream identifier lower than one already used -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.response(c.request(5))
    c.request(3)
    return expect_connection_error(c, PROTOCOL_ERROR, STREAM_CLOSED)


# === §5.1.2 stream concurrency ================================================

@case("5.1.2/1", "HEADERS over SETTINGS_MAX_CONCURRENT_STREAMS -> REFUSED_STREAM or PROTOCOL_ERROR", timeout_factor=2)
def _(opt):
    # Window 0: the server cannot finish any answer, so every stream stays open.
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 0)))
    c.auto_window = False
    limit = c.server_settings.get(MAX_CONCURRENT_STREAMS)
    if limit is None:
        raise Skip("the server sets no SETTINGS_MAX_CONCURRENT_STREAMS")
    if limit > 1000:
        raise Skip("SETTINGS_MAX_CONCURRENT_STREAMS %d is over this check's bound of 1000" % limit)
    c.send(*[headers_frame(c.next_stream(), block(c.request_fields())) for _ in range(limit)])
    extra = c.request()
    return expect_stream_error(c, extra, REFUSED_STREAM, PROTOCOL_ERROR)


# === §5.3 prioritization =======================================================

@case("5.3/1", "HEADERS depending on its own stream -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.next_stream()
    c.send(headers_frame(s, block(c.request_fields()), priority=(s, 16, False)))
    return expect_stream_error(c, s, PROTOCOL_ERROR)


@case("5.3/2", "PRIORITY depending on its own stream -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(priority(1, 1))
    return expect_stream_error(c, 1, PROTOCOL_ERROR)


# === §5.4 error handling =======================================================

@case("5.4.1/1", "a connection error is answered with GOAWAY (SHOULD; WARN without) and the connection is closed (MUST)")
def _(opt):
    c = Conn(opt)
    c.send(frame(SETTINGS, 0, 0, b"\x00\x04\x00"))  # a SETTINGS frame of 3 bytes
    note = expect_connection_error(c, FRAME_SIZE_ERROR, need_goaway=True)
    try:
        while True:
            c.recv_frame()
    except Closed:
        return note + ", then closed"
    except Timeout:
        raise Fail("%s, but the connection stayed open" % note)


@case("5.4.1/2", "GOAWAY's last stream identifier covers the streams the server processed")
def _(opt):
    c = Conn(opt)
    s = c.request()
    c.response(s)
    c.send(ping(stream=1))
    expect_connection_error(c, PROTOCOL_ERROR, probe=False)
    if c.goaway is not None and c.goaway.last_stream_id < s:
        raise Fail("GOAWAY last-stream-id %d, but stream %d was served" % (c.goaway.last_stream_id, s))


# === §5.5 extending HTTP/2 =====================================================

@case("5.5/1", "unknown extension frames and settings are ignored")
def _(opt):
    c = Conn(opt)
    c.send(frame(0xfa, 0x1, 0, b"\0" * 20), settings((0x7f7f, 1), (0xff00, 99)))
    expect_alive(c)
    c.get_ok()


@case("5.5/2", "an extension frame inside a field block -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    b = block(c.request_fields())
    s = c.next_stream()
    c.send(headers_frame(s, b[:10], end_headers=False), frame(0xfa, 0, s, b"ext"), continuation(s, b[10:]))
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


# === §6.1 DATA =================================================================

@case("6.1/1", "DATA on stream 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(data(0, b"test"))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.1/2", "DATA with a padding length over the payload -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False)
    c.send(frame(DATA, PADDED | END_STREAM, s, b"\x08abc"))  # 8 bytes of padding in 4
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.1/3", "DATA with padding is accepted (padding counts against flow control)")
def _(opt):
    c = Conn(opt)
    path = opt.post_path or opt.path
    s = c.request(method="POST", path=path, end_stream=False, extra=[("content-length", "4")])
    c.send(frame(DATA, PADDED | END_STREAM, s, b"\x05body\0\0\0\0\0"))
    r = c.response(s)
    if r.status >= 500 or (opt.post_strict and not 200 <= r.status < 300):
        raise Fail("answered %s" % r.status)
    return "answered %d" % r.status


# === §6.2 HEADERS ==============================================================

@case("6.2/1", "HEADERS on stream 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(headers_frame(0, block(c.request_fields())))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.2/2", "HEADERS with a padding length over the payload -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    b = block(c.request_fields())
    c.send(frame(HEADERS, PADDED | END_HEADERS | END_STREAM, c.next_stream(), bytes([len(b) + 1]) + b))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.2/3", "HEADERS with padding and priority is accepted")
def _(opt):
    c = Conn(opt)
    s = c.next_stream()
    c.send(headers_frame(s, block(c.request_fields()), pad=7, priority=(0, 200, True)))
    r = c.response(s)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


@case("6.2/4", "HEADERS with a priority on itself -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.next_stream()
    c.send(headers_frame(s, block(c.request_fields()), pad=2, priority=(s, 1, True)))
    return expect_stream_error(c, s, PROTOCOL_ERROR)


# === §6.3 PRIORITY =============================================================

@case("6.3/1", "PRIORITY on stream 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(priority(0, 1))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.3/2", "PRIORITY with a length other than 5 -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(frame(PRIORITY, 0, 1, b"\0\0\0\0\x10\0"))
    return expect_stream_error(c, 1, FRAME_SIZE_ERROR)


@case("6.3/3", "PRIORITY on an idle stream is accepted, and the stream can open after")
def _(opt):
    c = Conn(opt)
    c.send(priority(3, 0, 32), priority(5, 3))
    expect_alive(c)
    c.get_ok(3)


# === §6.4 RST_STREAM ===========================================================

@case("6.4/1", "RST_STREAM on stream 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(rst_stream(0))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.4/2", "RST_STREAM on an idle stream -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(rst_stream(3))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.4/3", "RST_STREAM with a length other than 4 -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False)
    c.send(frame(RST_STREAM, 0, s, b"\0\0\0\x08\0"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


# === §6.5 SETTINGS =============================================================

@case("6.5/1", "SETTINGS ACK with a payload -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(frame(SETTINGS, ACK, 0, struct.pack(">HI", INITIAL_WINDOW_SIZE, 65535)))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("6.5/2", "SETTINGS on a stream other than 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(settings((INITIAL_WINDOW_SIZE, 65535), stream=1))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5/3", "SETTINGS with a length not a multiple of 6 -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(frame(SETTINGS, 0, 0, struct.pack(">HI", INITIAL_WINDOW_SIZE, 65535) + b"\0\3\0"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("6.5.2/1", "SETTINGS_ENABLE_PUSH 2 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(settings((ENABLE_PUSH, 2)))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5.2/2", "SETTINGS_INITIAL_WINDOW_SIZE 2^31 -> FLOW_CONTROL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(settings((INITIAL_WINDOW_SIZE, 2**31)))
    return expect_connection_error(c, FLOW_CONTROL_ERROR)


@case("6.5.2/3", "SETTINGS_MAX_FRAME_SIZE 16383 (under the minimum) -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(settings((MAX_FRAME_SIZE, 16383)))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5.2/4", "SETTINGS_MAX_FRAME_SIZE 2^24 (over the maximum) -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(settings((MAX_FRAME_SIZE, 2**24)))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.5.2/5", "an unknown setting is ignored")
def _(opt):
    c = Conn(opt)
    c.send(settings((0x00ab, 12345)))
    expect_alive(c)
    c.get_ok()


@case("6.5.2/6", "SETTINGS_HEADER_TABLE_SIZE 0: the server's header blocks decode without a dynamic table")
def _(opt):
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (HEADER_TABLE_SIZE, 0)))
    # Our table holds nothing now: a reference to a dynamic entry fails to decode.
    c.decoder.max_allowed_table_size = 0
    c.decoder.header_table_size = 0
    for _ in range(3):
        c.get_ok()


@case("hpack/4.2/2", "after our SETTINGS_HEADER_TABLE_SIZE 0, the server's next block starts with a table size update",
      should=True)
def _(opt):
    # RFC 7541 §4.2: a change of the table's maximum size is signalled at the
    # start of the first block after it. A server whose encoder never used
    # its table may see no change to signal: a SHOULD-level check.
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (HEADER_TABLE_SIZE, 0)))
    s = c.request()
    try:
        while True:
            f = c.recv_frame()
            if isinstance(f, HeadersFrame) and f.stream_id == s:
                break
    except (Closed, Timeout) as e:
        raise Fail("no response (%s)" % type(e).__name__)
    if not f.fragment or f.fragment[0] & 0xe0 != 0x20:
        raise Fail("the block starts with 0x%02x, not a dynamic table size update" % (f.fragment[:1] or b"\0")[0])


@case("6.5.3/1", "the server acknowledges our SETTINGS")
def _(opt):
    c = Conn(opt)
    c.send(settings((INITIAL_WINDOW_SIZE, 100000), (MAX_HEADER_LIST_SIZE, 100000)))
    try:
        while c.settings_acked < 2:
            c.recv_frame()
    except (Closed, Timeout) as e:
        raise Fail("%d of our 2 SETTINGS acknowledged (%s)" % (c.settings_acked, type(e).__name__))


# === §6.7 PING =================================================================

@case("6.7/1", "PING is answered with an ACK carrying the same payload")
def _(opt):
    c = Conn(opt)
    c.send(ping(b"\x00\xffpay\x01ld"))
    try:
        while not c.pings:
            c.recv_frame()
    except (Closed, Timeout) as e:
        raise Fail("no PING ACK (%s)" % type(e).__name__)
    if c.pings[0] != b"\x00\xffpay\x01ld":
        raise Fail("ACK payload %r" % c.pings[0])


@case("6.7/2", "a PING ACK from the client is not answered")
def _(opt):
    c = Conn(opt)
    c.send(ping(b"unasked!", ack=True), ping(PROBE))
    try:
        while PROBE not in c.pings:
            c.recv_frame()
            if b"unasked!" in c.pings:
                raise Fail("the server answered a PING ACK")
    except (Closed, Timeout) as e:
        raise Fail("no answer to the PING after it (%s)" % type(e).__name__)


@case("6.7/3", "PING on a stream other than 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(ping(stream=1))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.7/4", "PING with a length other than 8 -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(frame(PING, 0, 0, b"123456"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


# === §6.8 GOAWAY ===============================================================

@case("6.8/1", "GOAWAY on a stream other than 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(goaway(stream=1))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.8/2", "after the client's GOAWAY, streams already open are still answered", should=True)
def _(opt):
    c = Conn(opt)
    s = c.request()
    c.send(goaway(0))  # the last stream we (a client) processed: none pushed
    r = c.response(s)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


# === §6.9 WINDOW_UPDATE ========================================================

def blocked_stream(opt):
    """A stream whose answer waits on our window of 0: it stays open."""
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 0)))
    c.auto_window = False
    return c, c.request()


@case("6.9/1", "WINDOW_UPDATE of 0 on a stream -> PROTOCOL_ERROR")
def _(opt):
    c, s = blocked_stream(opt)
    c.send(window_update(s, 0))
    return expect_stream_error(c, s, PROTOCOL_ERROR)


@case("6.9/2", "WINDOW_UPDATE of 0 on the connection -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(window_update(0, 0))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.9/3", "WINDOW_UPDATE with a length other than 4 -> FRAME_SIZE_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(frame(WINDOW_UPDATE, 0, 0, b"\0\0\0\1\0"))
    return expect_connection_error(c, FRAME_SIZE_ERROR)


@case("6.9.1/1", "the connection window over 2^31-1 -> FLOW_CONTROL_ERROR")
def _(opt):
    c = Conn(opt)
    c.send(window_update(0, MAX_WINDOW), window_update(0, MAX_WINDOW))
    return expect_connection_error(c, FLOW_CONTROL_ERROR)


@case("6.9.1/2", "a stream window over 2^31-1 -> FLOW_CONTROL_ERROR", needs="big_path")
def _(opt):
    # The big answer uses up the connection's window (65535): the server is
    # blocked on it, the stream stays open whatever its own window.
    c = Conn(opt)
    c.auto_window = False
    s = c.request(path=opt.big_path)
    try:
        while c.conn_window > 0:
            c.recv_frame()
            if c.responses.get(s) and c.responses[s].complete:
                raise Skip("the big file fits in the connection's first window")
    except (Closed, Timeout) as e:
        raise Fail("the first 65535 bytes did not come (%s)" % type(e).__name__)
    c.grant(s, MAX_WINDOW - c.stream_windows[s])
    c.send(window_update(s, 1))
    return expect_stream_error(c, s, FLOW_CONTROL_ERROR)


@case("6.9.1/3", "a 1-byte window gets 1 byte of DATA, the rest after WINDOW_UPDATE")
def _(opt):
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 1)))
    c.auto_window = False  # recv_frame fails the case if the server sends beyond the window
    s = c.request()
    try:
        while c.stream_windows.get(s, 1) > 0:
            c.recv_frame()
        expect_alive(c)
        r = c.responses[s]
        if r.complete:
            raise Skip("the body is 1 byte long")
        c.grant(0, 1 << 20)
        c.grant(s, 1 << 20)
    except (Closed, Timeout) as e:
        raise Fail("no first byte (%s)" % type(e).__name__)
    r = c.response(s)
    if r.status != 200 or len(r.body) < 2:
        raise Fail("answered %s with %d bytes" % (r.status, len(r.body)))
    return "%d bytes" % len(r.body)


@case("6.9.2/1", "a new SETTINGS_INITIAL_WINDOW_SIZE applies to open streams")
def _(opt):
    c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 1)))
    c.auto_window = False
    c.grant(0, 1 << 20)
    s = c.request()
    try:
        while c.stream_windows.get(s, 1) > 0:
            c.recv_frame()
        if c.responses[s].complete:
            raise Skip("the body is 1 byte long")
    except (Closed, Timeout) as e:
        raise Fail("no first byte (%s)" % type(e).__name__)
    c.set_initial_window(1 << 20)  # no WINDOW_UPDATE: the settings alone open the stream's window
    r = c.response(s)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


@case("6.9.2/2", "SETTINGS_INITIAL_WINDOW_SIZE can make a stream's window negative; data waits for WINDOW_UPDATE",
      needs="big_path")
def _(opt):
    c = Conn(opt)
    c.auto_window = False
    c.grant(0, 1 << 24)
    s = c.request(path=opt.big_path)
    try:
        while c.stream_windows.get(s, 65535) > 1000:
            c.recv_frame()
    except (Closed, Timeout) as e:
        raise Fail("DATA did not come (%s)" % type(e).__name__)
    c.set_initial_window(0)  # the window goes to 0 - (bytes sent): negative or 0
    expect_alive(c)          # and recv_frame fails the case on DATA beyond it
    c.set_initial_window(65535)
    c.grant(s, 1 << 24)
    r = c.response(s)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


# === §6.10 CONTINUATION ========================================================

@case("6.10/1", "HEADERS then CONTINUATIONs make one field block")
def _(opt):
    c = Conn(opt)
    b = block(c.request_fields(extra=[("x-a", "1" * 100), ("x-b", "2")]))
    s = c.next_stream()
    c.send(headers_frame(s, b[:5], end_headers=False), continuation(s, b[5:20], end_headers=False),
           continuation(s, b"", end_headers=False), continuation(s, b[20:]))
    r = c.response(s)
    if r.status != 200:
        raise Fail("answered %s" % r.status)


@case("6.10/2", "CONTINUATION on another stream -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    b = block(c.request_fields())
    s = c.next_stream()
    c.send(headers_frame(s, b[:10], end_headers=False), continuation(s + 2, b[10:]))
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


@case("6.10/3", "CONTINUATION after END_HEADERS -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.next_stream()
    c.send(headers_frame(s, block(c.request_fields()), end_stream=False), continuation(s, block([("x-c", "1")])))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.10/4", "CONTINUATION after DATA -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False)
    c.send(data(s, b"x", end_stream=False), continuation(s, block([("x-c", "1")])))
    return expect_connection_error(c, PROTOCOL_ERROR)


@case("6.10/5", "CONTINUATION on stream 0 -> PROTOCOL_ERROR")
def _(opt):
    c = Conn(opt)
    b = block(c.request_fields())
    s = c.next_stream()
    c.send(headers_frame(s, b[:10], end_headers=False), continuation(0, b[10:]))
    return expect_connection_error(c, PROTOCOL_ERROR, probe=False)


# === §8.1 HTTP message exchange ================================================

@case("8.1/1", "GET is answered 200 with a body (matching content-length when there is one)")
def _(opt):
    r = Conn(opt).get_ok()
    if not r.body:
        raise Fail("empty body")
    cl = r.header("content-length")
    if cl and int(cl[0]) != len(r.body):
        raise Fail("content-length %s, %d bytes of DATA" % (cl[0], len(r.body)))
    return "%d bytes" % len(r.body)


@case("8.1/2", "HEAD is answered without a body")
def _(opt):
    c = Conn(opt)
    r = c.response(c.request(method="HEAD"))
    if r.status != 200 or r.body:
        raise Fail("answered %s with %d bytes of DATA" % (r.status, len(r.body)))


@case("8.1/3", "POST with a body in DATA frames is answered")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False, extra=[("content-length", "11"), ("content-type", "application/x-www-form-urlencoded")])
    c.send(data(s, b"a=1&", end_stream=False), data(s, b"b=2&c=3"))
    r = c.response(s)
    if r.status >= 500 or (opt.post_strict and not 200 <= r.status < 300):
        raise Fail("answered %s" % r.status)
    return "answered %d" % r.status


@case("8.1/4", "a request with trailers is accepted")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False, extra=[("te", "trailers")])
    c.send(data(s, b"body", end_stream=False), headers_frame(s, block([("x-trailer", "done")])))
    r = c.response(s)
    if r.status >= 500 or (opt.post_strict and not 200 <= r.status < 300):
        raise Fail("answered %s" % r.status)
    return "answered %d" % r.status


@case("8.1/5", "a second HEADERS without END_STREAM -> malformed (PROTOCOL_ERROR)")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False)
    c.send(headers_frame(s, block([("x-trailer", "no-end")]), end_stream=False))
    return expect_malformed(c, s)


@case("8.1.1/1", "content-length larger than the DATA -> malformed (PROTOCOL_ERROR)")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False, extra=[("content-length", "10")])
    c.send(data(s, b"12345"))
    return expect_malformed(c, s)


@case("8.1.1/2", "content-length smaller than the DATA -> malformed (PROTOCOL_ERROR)")
def _(opt):
    c = Conn(opt)
    s = c.request(method="POST", path=opt.post_path, end_stream=False, extra=[("content-length", "2")])
    c.send(data(s, b"12345"))
    return expect_malformed(c, s)


# === §8.2 / §8.3 fields ========================================================

def malformed_case(section, title, make, should=False):
    """A request whose fields make it malformed: `make(c)` gives the field list."""
    @case(section, title + " -> malformed (PROTOCOL_ERROR)", should=should)
    def _(opt):
        c = Conn(opt)
        s = c.next_stream()
        c.send(headers_frame(s, block(make(c))))
        return expect_malformed(c, s)


def with_extra(*fields):
    return lambda c: c.request_fields(extra=fields)


def without(name):
    return lambda c: [f for f in c.request_fields() if f[0] != name]


malformed_case("8.2/1", "an upper-case field name", with_extra(("X-Upper", "1")))
malformed_case("8.2.1/1", "a field name with a space", with_extra(("x bad", "1")), should=True)
malformed_case("8.2.1/2", "a field value with CR LF", with_extra(("x-crlf", "a\r\nx-injected: 1")), should=True)
malformed_case("8.2.1/3", "a field value with NUL", with_extra(("x-nul", "a\0b")), should=True)
malformed_case("8.2.1/4", "a field value with a leading space", with_extra(("x-space", " a")), should=True)
malformed_case("8.2.2/1", "connection: keep-alive", with_extra(("connection", "keep-alive")))
malformed_case("8.2.2/2", "keep-alive", with_extra(("keep-alive", "timeout=5")))
malformed_case("8.2.2/3", "proxy-connection", with_extra(("proxy-connection", "keep-alive")))
malformed_case("8.2.2/4", "transfer-encoding: chunked", with_extra(("transfer-encoding", "chunked")))
malformed_case("8.2.2/5", "upgrade: h2c", with_extra(("upgrade", "h2c")))
malformed_case("8.2.2/6", "te other than trailers", with_extra(("te", "trailers, deflate")))
malformed_case("8.3/1", "a pseudo-header after a regular field",
               lambda c: c.request_fields()[:3] + [("x-regular", "1"), c.request_fields()[3]])
malformed_case("8.3/2", "an unknown pseudo-header", with_extra((":foo", "bar")))
malformed_case("8.3/3", "a response pseudo-header (:status) in a request",
               lambda c: c.request_fields() + [(":status", "200")])
malformed_case("8.3.1/1", "no :method", without(":method"))
malformed_case("8.3.1/2", "no :scheme", without(":scheme"))
malformed_case("8.3.1/3", "no :path", without(":path"))
malformed_case("8.3.1/4", "an empty :path", lambda c: c.request_fields()[:3] + [(":path", "")])
malformed_case("8.3.1/5", "two :method", lambda c: c.request_fields() + [(":method", "GET")])
malformed_case("8.3.1/6", "two :path", lambda c: c.request_fields()[:4] + [(":path", "/")])
malformed_case("8.3.1/7", "two :scheme", lambda c: c.request_fields()[:2] + [(":scheme", "http")] + c.request_fields()[2:])
malformed_case("8.3.1/8", "two :authority",
               lambda c: c.request_fields()[:3] + [(":authority", "other.example")] + c.request_fields()[3:])


@case("8.2.2/7", "te: trailers is allowed")
def _(opt):
    c = Conn(opt)
    r = c.response(c.request(extra=[("te", "trailers")]))
    if r.status != 200:
        raise Fail("answered %s" % r.status)


@case("8.2.3/1", "cookie fields sent apart are joined with '; '", needs="cookie_path")
def _(opt):
    c = Conn(opt)
    r = c.response(c.request(path=opt.cookie_path, extra=[("cookie", "a=1"), ("cookie", "b=2"), ("cookie", "c=3")]))
    if r.status != 200 or b"a=1; b=2; c=3" not in r.body:
        raise Fail("answered %s %r" % (r.status, r.body[:200]))


# === RFC 7541 (HPACK) ==========================================================

def hpack_case(section, title, tail, make_block=None, should=False):
    @case(section, title + " -> COMPRESSION_ERROR", should=should)
    def _(opt):
        c = Conn(opt)
        b = make_block(c) if make_block else block(c.request_fields()) + tail
        c.send(headers_frame(c.next_stream(), b))
        return expect_connection_error(c, COMPRESSION_ERROR)


# The static table has 61 entries; the dynamic one is empty on a new connection.
hpack_case("hpack/2.3.3/1", "an indexed field past the tables (index 70)", b"\xc6")
hpack_case("hpack/2.3.3/2", "a literal whose name index is past the tables (index 70)", b"\x0f\x37\x01a")
hpack_case("hpack/4.2/1", "a dynamic table size update over SETTINGS_HEADER_TABLE_SIZE", None,
           lambda c: hpack_int(c.server_settings.get(HEADER_TABLE_SIZE, 4096) + 1, 5, 0x20) + block(c.request_fields()))
# 'a' is 00011 in the Huffman code (RFC 7541 Appendix B); padding must be
# the EOS code's first bits (all ones) and shorter than 8 bits (§5.2).
hpack_case("hpack/5.2/1", "Huffman padding longer than 7 bits", b"\x00\x01a\x82\x1f\xff")
hpack_case("hpack/5.2/2", "Huffman padding that is not the EOS prefix", b"\x00\x01a\x81\x18")
hpack_case("hpack/5.2/3", "a Huffman string holding EOS", b"\x00\x01a\x84\xff\xff\xff\xff")
hpack_case("hpack/5.1/1", "an integer that overflows (10 continuation bytes)", b"\xff" + b"\xff" * 10 + b"\x01")
hpack_case("hpack/6.1/1", "indexed field with index 0", b"\x80")
# §4.2 puts the MUST on the encoder; a decoder that takes the update anyway
# breaks no receiver's MUST, so this one is a SHOULD-level check.
hpack_case("hpack/6.3/1", "a dynamic table size update after a field", b"\x20", should=True)


@case("hpack/2.3.2/1", "the dynamic table works: a field indexed in one request is referenced in the next")
def _(opt):
    c = Conn(opt)
    fields = c.request_fields()
    s1 = c.next_stream()
    c.send(headers_frame(s1, block(fields[:3]) + literal(":path", opt.path, indexing=True)))
    r = c.response(s1)
    if r.status != 200:
        raise Fail("first request answered %s" % r.status)
    s2 = c.next_stream()
    c.send(headers_frame(s2, block(fields[:3]) + b"\xbe"))  # index 62: the newest dynamic entry
    r = c.response(s2)
    if r.status != 200:
        raise Fail("second request answered %s" % r.status)


# === §9.2 TLS ==================================================================

@case("9.2/1", "TLS 1.2 or later", needs="tls")
def _(opt):
    c = Conn(opt)
    if c.sock.version() not in ("TLSv1.2", "TLSv1.3"):
        raise Fail("negotiated %s" % c.sock.version())
    return c.sock.version()


@case("9.2.2/1", "under TLS 1.2, an ephemeral key exchange and an AEAD cipher", needs="tls")
def _(opt):
    ctx_version = ssl.TLSVersion.TLSv1_2
    sock = socket.create_connection((opt.host, opt.port), timeout=opt.timeout)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ctx_version
    ctx.set_alpn_protocols(["h2"])
    try:
        tls = ctx.wrap_socket(sock, server_hostname=opt.authority.split(":")[0])
    except (OSError, ssl.SSLError) as e:
        raise Skip("no TLS 1.2 handshake (%s): TLS 1.3 only" % e)
    name = tls.cipher()[0]
    tls.close()
    if not (name.startswith("ECDHE-") or name.startswith("DHE-")) or not any(a in name for a in ("GCM", "CHACHA20", "CCM")):
        raise Fail("cipher %s is on RFC 9113 Appendix A's list" % name)
    return name


# === attacks: bounded, the server must survive and go on serving ================

@case("attack/rapid-reset", "2000 HEADERS+RST_STREAM pairs: GOAWAY/close or go on; other clients served",
      timeout_factor=4)
def _(opt):
    c = Conn(opt)
    chunk = []
    for _ in range(2000):
        s = c.next_stream()
        chunk.append(headers_frame(s, block(c.request_fields())) + rst_stream(s, CANCEL))
    c.send(*chunk)
    outcome = "went on"
    try:
        c.send(ping(PROBE))
        while PROBE not in c.pings:
            f = c.recv_frame()
            if isinstance(f, GoAwayFrame):
                outcome = "GOAWAY %s" % code_name(f.error_code)
                break
    except Closed:
        outcome = "closed the connection"
    except Timeout:
        raise Fail("the abusing connection neither answered a PING nor was closed")
    finally:
        c.close()
    fresh_get_ok(opt, "after the reset flood")
    return outcome


@case("attack/continuation-flood", "CONTINUATION frames without end: cut before 1 MB", timeout_factor=4)
def _(opt):
    c = Conn(opt)
    s = c.next_stream()
    c.send(headers_frame(s, block(c.request_fields()), end_headers=False))
    sent = 0
    n = 0
    while sent < 1 << 20 and not c.closed:
        piece = continuation(s, literal("x-flood-%d" % n, "f" * 8000), end_headers=False)
        c.send(piece)
        sent += len(piece)
        n += 1
    outcome = None
    try:
        while outcome is None:
            f = c.recv_frame()
            if isinstance(f, GoAwayFrame):
                outcome = "GOAWAY %s" % code_name(f.error_code)
    except Closed:
        outcome = "closed"
    except Timeout:
        raise Fail("sent %d bytes of CONTINUATION, and the connection is still open" % sent)
    finally:
        c.close()
    fresh_get_ok(opt, "after the CONTINUATION flood")
    return "%s after %d frames" % (outcome, n)


@case("attack/continuation-empty", "100000 empty CONTINUATIONs without end: other clients served (FAIL), connection cut (WARN)",
      timeout_factor=4)
def _(opt):
    # Empty frames add nothing to the field block: a server that reads them
    # at line rate holds no more memory than for PINGs. It must go on
    # serving others; cutting the connection is hardening, hence a WARN.
    c = Conn(opt)
    s = c.next_stream()
    c.send(headers_frame(s, block(c.request_fields()), end_headers=False))
    empty = continuation(s, b"", end_headers=False)
    for _ in range(100):
        c.send(empty * 1000)
        if c.closed:
            break
    outcome = None
    try:
        fresh_get_ok(opt, "during the empty CONTINUATION flood")
        while outcome is None:
            f = c.recv_frame()
            if isinstance(f, GoAwayFrame):
                outcome = "GOAWAY %s" % code_name(f.error_code)
    except Closed:
        outcome = "closed"
    except Timeout:
        raise Warn("other clients served, but after 100000 empty CONTINUATION frames the connection is still open")
    finally:
        c.close()
    return outcome


def unread_flood(opt, one, per_chunk, chunks, what):
    """Sends `one` frame per_chunk x chunks times, never reading the answers,
    then checks that a new connection is served meanwhile."""
    c = Conn(opt)
    n = c.send_until_blocked(one * per_chunk, chunks) * per_chunk
    try:
        fresh_get_ok(opt, "during the %s (%d frames sent, none of the answers read)" % (what, n))
    finally:
        c.close()
    if n < per_chunk * chunks:
        return "%d frames sent before the server stopped reading or closed" % n
    return "all %d frames sent" % n


@case("attack/ping-flood", "100000 PINGs never read: other clients still served", timeout_factor=4)
def _(opt):
    return unread_flood(opt, ping(b"floodpng"), 100, 1000, "PING flood")


@case("attack/settings-flood", "20000 SETTINGS never read: other clients still served", timeout_factor=4)
def _(opt):
    return unread_flood(opt, settings((INITIAL_WINDOW_SIZE, 65535)), 100, 200, "SETTINGS flood")


@case("attack/zero-window", "8 connections x 10 streams held with window 0: other clients served", timeout_factor=4)
def _(opt):
    held = []
    try:
        for _ in range(8):
            c = Conn(opt, client_settings=((ENABLE_PUSH, 0), (INITIAL_WINDOW_SIZE, 0)))
            c.auto_window = False
            for _ in range(10):
                c.request(path=opt.big_path or opt.path)
            held.append(c)
        fresh_get_ok(opt, "with zero-window connections held")
    finally:
        for c in held:
            c.close()


@case("attack/hpack-bomb", "a 4000-byte field indexed once, referenced 10000 times: refused, not built", timeout_factor=2)
def _(opt):
    c = Conn(opt)
    s = c.next_stream()
    b = block(c.request_fields()) + literal("x-bomb", "b" * 4000, indexing=True) + b"\xbe" * 10000
    c.send(headers_frame(s, b))
    c.send(ping(PROBE))
    outcome = None
    try:
        while outcome is None:
            r = c.responses.get(s)
            if r and r.headers:
                if r.status < 400:
                    raise Fail("answered %d: a 40 MB field section was accepted" % r.status)
                outcome = "answered %d" % r.status
                break
            f = c.recv_frame()
            if isinstance(f, RstStreamFrame) and f.stream_id == s:
                outcome = "RST_STREAM %s" % code_name(f.error_code)
            elif isinstance(f, GoAwayFrame):
                outcome = "GOAWAY %s" % code_name(f.error_code)
    except Closed:
        outcome = "closed"
    except Timeout:
        raise Fail("no answer, reset nor GOAWAY within %gs" % opt.timeout)
    finally:
        c.close()
    fresh_get_ok(opt, "after the HPACK bomb")
    return outcome


# --- running ------------------------------------------------------------------


def selected(section, key):
    """-k 6.5 selects 6.5/1 and 6.5.2/1; -k 6.5/1 that case; -k hpack the HPACK cases."""
    return section == key or any(section.startswith(key + sep) for sep in "/.") or (key.endswith("/") and section.startswith(key))


def main():
    ap = argparse.ArgumentParser(description="HTTP/2 conformance checks (RFC 9113, RFC 7541)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls", action="store_true", help="TLS with ALPN h2 (no certificate verification)")
    ap.add_argument("--authority", help=":authority to send (default localhost:PORT)")
    ap.add_argument("--path", default="/index.html", help="a static file of 2 bytes or more, answered 200")
    ap.add_argument("--big-path", help="a file over 64 KB (flow-control checks; skipped without it)")
    ap.add_argument("--post-path", help="a path that answers POST with 2xx (default: --path, any status below 500)")
    ap.add_argument("--cookie-path", help="a path that answers with the request's Cookie header in its body")
    ap.add_argument("-k", "--only", action="append", default=[],
                    help="run only the cases whose section starts with this (repeatable; e.g. 6.5, hpack, attack)")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per case (attack cases get a few times more)")
    ap.add_argument("--strict", action="store_true", help="WARN (a SHOULD not met) fails the run too")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the server's frames")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    opt = ap.parse_args()
    opt.authority = opt.authority or "localhost:%d" % opt.port
    opt.post_path = opt.post_path or None

    def handler(signum, frm):
        raise CaseTimeout()
    signal.signal(signal.SIGALRM, handler)

    counts = {"PASS": 0, "FAIL": 0, "WARN": 0, "SKIP": 0}
    failed, warned = [], []
    for section, title, fn, needs, factor, should in CASES:
        if opt.only and not any(selected(section, k) for k in opt.only):
            continue
        if opt.list:
            print("%s %s" % (section, title))
            continue
        case_opt = argparse.Namespace(**vars(opt))
        case_opt.timeout = opt.timeout * factor
        case_opt.post_strict = bool(opt.post_path)  # a POST path of its own must answer 2xx
        case_opt.post_path = opt.post_path or opt.path
        verdict, why = "PASS", ""
        if needs and not getattr(opt, needs):
            verdict, why = "SKIP", "needs --%s" % needs.replace("_", "-")
        else:
            # The safety net: no case outlives its deadline by much.
            signal.setitimer(signal.ITIMER_REAL, case_opt.timeout * 2 + 5)
            try:
                note = fn(case_opt)
                why = note or ""
            except Fail as e:
                verdict, why = ("WARN" if should else "FAIL"), str(e)
            except Warn as e:
                verdict, why = "WARN", str(e)
            except Skip as e:
                verdict, why = "SKIP", str(e)
            except CaseTimeout:
                verdict, why = "FAIL", "the case ran past its deadline"
            except Exception as e:  # a bug in the case, or something the helpers did not expect
                verdict, why = "FAIL", "%s: %s" % (type(e).__name__, e)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        if verdict == "WARN" and opt.strict:
            verdict = "FAIL"
        counts[verdict] += 1
        if verdict == "FAIL":
            failed.append(section)
        if verdict == "WARN":
            warned.append(section)
        print("%s %s %s%s" % (verdict, section, title, (": " + why) if why else ""), flush=True)
    if opt.list:
        return 0
    print("%d passed, %d failed, %d warnings, %d skipped%s%s" % (
        counts["PASS"], counts["FAIL"], counts["WARN"], counts["SKIP"],
        " (failed: %s)" % " ".join(failed) if failed else "", " (warnings: %s)" % " ".join(warned) if warned else ""))
    return 1 if counts["FAIL"] or not sum(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
