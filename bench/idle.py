#!/usr/bin/env python3
"""idle-1000: open N keep-alive connections, make one request on each and
leave them idle, then time one request on a fresh connection (ms).
Loopback only; bounded by its own timeouts."""
import socket, sys, time

host, port, n, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
req = f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()

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

idle = []
failed = 0
for _ in range(n):
    try:
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(req)
        if not read_response(s).startswith(b"HTTP/1.1 200"):
            failed += 1
        idle.append(s)
    except OSError:
        failed += 1
time.sleep(0.5)
start = time.perf_counter()
s = socket.create_connection((host, port), timeout=30)
s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
ok = read_response(s).startswith(b"HTTP/1.1 200")
ms = (time.perf_counter() - start) * 1000
print(f"{ms:.2f}" if ok else "fail", failed)
for s in idle:
    s.close()
