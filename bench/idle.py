#!/usr/bin/env python3
"""idle-1000: open N keep-alive connections, make one request on each and
leave them idle, then time a request on a fresh connection (ms).
Loopback only; bounded by its own timeouts.

Usage: idle.py HOST PORT N PATH [--tls] [--samples K] [--pss PID]
  --tls      every connection is TLS (certificates not checked, as curl -k);
             the fresh request's time includes its handshake
  --samples K  time K fresh requests one after another, print the median (1)
  --exec CMD   instead, run CMD (sh -c) while the connections are open and
               print the first word of its output as the time
  --pss PID  also print the PSS in kB of PID and its descendants (php-cgi
             and php-fpm not counted) while the N connections are open
Prints: MS FAILED [PSS_KB]  (MS is "fail" if every fresh request failed)."""
import socket, ssl, subprocess, sys, time

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
args = [a for a in args if a != "--tls"]
host, port, n, path = args[0], int(args[1]), int(args[2]), args[3]
req = f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()

context = None
if tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])

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
for _ in range(n):
    try:
        s = connect(10)
        s.sendall(req)
        if not read_response(s).startswith(b"HTTP/1.1 200"):
            failed += 1
        idle.append(s)
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
out = [shown, str(failed)]
if pss_pid is not None:
    out.append(str(pss_kb(pss_pid)))
print(*out)
for s in idle:
    s.close()
