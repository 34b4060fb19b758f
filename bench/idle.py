#!/usr/bin/env python3
"""idle-1000: open N keep-alive connections, make one request on each and
leave them idle, then time a request on a fresh connection (ms).
Loopback only; bounded by its own timeouts.

Usage: idle.py HOST PORT N PATH [--tls] [--h2] [--samples K] [--pss PID]
  --tls      every connection is TLS (certificates not checked, as curl -k);
             the fresh request's time includes its handshake
  --h2       every connection is HTTP/2 (with --tls, ALPN h2; without, by
             prior knowledge) and makes no request: the preface and an empty
             SETTINGS sent, the server's SETTINGS read and acknowledged, and
             the acknowledgement of ours read; then idle (needs --exec)
  --h2-request  as --h2, and one GET of PATH on each connection (its answer
             read to its end, not checked beyond a HEADERS frame) before idle
  --samples K  time K fresh requests one after another, print the median (1)
  --exec CMD   instead, run CMD (sh -c) while the connections are open and
               print the first word of its output as the time
  --pss PID  also print the PSS in kB of PID and its descendants (php-cgi
             and php-fpm not counted) while the N connections are open
Connections are opened one after another, for at most 90 s in all: those
not opened by then count as failed. FAILED counts the connections that failed
to open, and those the server had closed (or sent GOAWAY on) by the time the
fresh requests were done.
Prints: MS FAILED [PSS_KB]  (MS is "fail" if every fresh request failed)."""
import select, socket, ssl, subprocess, sys, time

args = sys.argv[1:]
tls = "--tls" in args
pss_pid, samples, command = None, 1, None
for opt in ("--pss", "--samples", "--exec"):
    if opt in args:
        i = args.index(opt)
        if opt == "--pss":
            pss_pid = int(args[i + 1])
        elif opt == "--samples":
            samples = int(args[i + 1])
        else:
            command = args[i + 1]
        del args[i:i + 2]
h2_req = "--h2-request" in args
h2 = "--h2" in args or h2_req
args = [a for a in args if a not in ("--tls", "--h2", "--h2-request")]
if h2 and command is None:
    sys.exit("idle.py: --h2 needs --exec")
host, port, n, path = args[0], int(args[1]), int(args[2]), args[3]
req = f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()

context = None
if tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2" if h2 else "http/1.1"])

# HTTP/2: the client's preface and an empty SETTINGS frame (9 bytes: length
# 0, type 4, flags 0, stream 0); a SETTINGS frame with the ACK flag (1).
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
SETTINGS_ACK = bytes([0, 0, 0, 4, 1, 0, 0, 0, 0])


def h2_request(path):
    """A HEADERS frame for GET PATH on stream 1, END_STREAM and END_HEADERS:
    :method GET, :scheme (static entries 2, 6/7), :path and :authority as
    literals without indexing (names 4 and 1), no Huffman coding."""
    def literal(index, value):
        assert len(value) < 127
        return bytes([index, len(value)]) + value
    block = bytes([0x82, 0x87 if context else 0x86]) + literal(4, path.encode()) + literal(1, b"localhost")
    return len(block).to_bytes(3, "big") + bytes([1, 5]) + (1).to_bytes(4, "big") + block


def h2_handshake(s):
    """The preface sent, the server's SETTINGS acknowledged and ours
    acknowledged by it (and with --h2-request, the response on stream 1
    ended): True, else False (GOAWAY, close, no HEADERS)."""
    if context is not None and s.selected_alpn_protocol() != "h2":
        return False
    s.sendall(PREFACE + (h2_request(path) if h2_req else b""))
    buf, theirs, ours, answered, headers = b"", False, False, not h2_req, False
    while not (theirs and ours and answered):
        chunk = s.recv(65536)
        if not chunk:
            return False
        buf += chunk
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            kind, flags, stream = buf[3], buf[4], int.from_bytes(buf[5:9], "big")
            buf = buf[9 + int.from_bytes(buf[:3], "big"):]
            if kind == 4 and flags & 1:
                ours = True
            elif kind == 4:
                theirs = True
                s.sendall(SETTINGS_ACK)
            elif kind in (7, 3):   # GOAWAY, RST_STREAM
                return False
            elif stream == 1 and kind in (0, 1):
                headers = headers or kind == 1
                answered = answered or bool(flags & 1)
    return headers or not h2_req

def connect(timeout):
    s = socket.create_connection((host, port), timeout=timeout)
    if context is not None:
        s = context.wrap_socket(s, server_hostname="localhost")
    return s

def read_response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head

def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []

def pss_kb(root):
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        todo.extend(children(p))
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip().startswith("php"):
                    continue
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total

idle = []
failed = 0
give_up = time.monotonic() + 90
for _ in range(n):
    if time.monotonic() > give_up:
        failed += 1
        continue
    try:
        s = connect(10)
        if h2:
            ok = h2_handshake(s)
        else:
            s.sendall(req)
            ok = read_response(s).startswith(b"HTTP/1.1 200")
        if ok:
            idle.append(s)
        else:
            failed += 1
            s.close()
    except OSError:
        failed += 1
time.sleep(0.5)

def fresh():
    start = time.perf_counter()
    try:
        s = connect(30)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        ok = read_response(s).startswith(b"HTTP/1.1 200")
        s.close()
    except OSError:
        ok = False
    return (time.perf_counter() - start) * 1000 if ok else None

if command is None:
    times = sorted(t for t in (fresh() for _ in range(samples)) if t is not None)
    shown = f"{times[len(times) // 2]:.2f}" if times else "fail"
else:
    run = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    shown = (run.stdout.split() or ["fail"])[0]


def closed(s):
    """The server closed S or said it would: on HTTP/1.1 anything read (an
    idle connection expects nothing but its close), on HTTP/2 a GOAWAY
    (a PING or WINDOW_UPDATE leaves it open)."""
    try:
        if not select.select([s], [], [], 0)[0]:
            return False
        s.setblocking(False)
        data = s.recv(65536)
        if h2 and data and all(b != 7 for b in frame_types(data)):
            return False   # a PING or WINDOW_UPDATE: still open
        return True
    except ssl.SSLWantReadError:
        return False   # a TLS record without data (a session ticket)
    except OSError:
        return True


def frame_types(data):
    while len(data) >= 9:
        yield data[3]
        data = data[9 + int.from_bytes(data[:3], "big"):]


pss_now = pss_kb(pss_pid) if pss_pid is not None else None
failed += sum(1 for s in idle if closed(s))
out = [shown, str(failed)]
if pss_now is not None:
    out.append(str(pss_now))
print(*out)
for s in idle:
    s.close()
