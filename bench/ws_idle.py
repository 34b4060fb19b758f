#!/usr/bin/env python3
"""ws-idle's two ends (bench/ws_idle.sh): loopback only, bounded by timeouts.

  ws_idle.py backend
      A WebSocket echo server (the `websockets` package, as the tests'
      fixture): prints its port, serves until its standard input closes.

  ws_idle.py client PORT PATH N SAMPLES PSS_CMD
      Opens N WebSocket tunnels to 127.0.0.1:PORT PATH (RFC 6455 handshake
      on a raw socket, one after another, at most 120 s in all), checks one
      echo on each, then with all of them open and idle runs PSS_CMD
      (bash -c; its first word: the server's memory in kB), then times SAMPLES round
      trips of a 32-byte message, each on a tunnel picked at random.
      Prints: OPENED PSS_KB RTT_MEDIAN_US RTT_P99_US
"""
import os, random, socket, statistics, subprocess, sys, time

KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def backend():
    import asyncio
    from websockets.asyncio.server import serve

    async def echo(ws):
        try:
            async for message in ws:
                await ws.send(message)
        except Exception:
            pass

    async def main():
        async with serve(echo, "127.0.0.1", 0, ping_interval=None, max_size=None, backlog=4096) as server:
            print(server.sockets[0].getsockname()[1], flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    asyncio.run(main())


def frame(payload):
    """A client frame: FIN, binary, masked (RFC 6455 5.3)."""
    mask = os.urandom(4)
    assert len(payload) < 126
    return bytes([0x82, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def read_exact(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise ConnectionError("closed")
        got += chunk
    return got


def round_trip(s, payload):
    s.sendall(frame(payload))
    head = read_exact(s, 2)
    body = read_exact(s, head[1] & 0x7F)
    if body != payload:
        raise ValueError("echo changed")


def open_tunnels(port, path, n):
    """Up to N tunnels, opened one after another within 120 s, each checked with one echo."""
    deadline = time.monotonic() + 120
    tunnels = []
    request = (f"GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    while len(tunnels) < n and time.monotonic() < deadline:
        s = socket.socket()
        s.settimeout(10)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(request)
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                b = s.recv(1)
                if not b:
                    raise ConnectionError("closed")
                head += b
            if not head.startswith(b"HTTP/1.1 101"):
                raise ConnectionError(head.split(b"\r\n")[0].decode(errors="replace"))
            round_trip(s, b"hello")
        except (OSError, ValueError) as e:
            print(f"tunnel {len(tunnels)}: {e}", file=sys.stderr)
            s.close()
            break
        tunnels.append(s)
    return tunnels


def time_round_trips(tunnels, samples):
    """SAMPLES round trips of a 32-byte message, each on a tunnel picked at
    random: their median and p99 in µs, and the wall time in s."""
    times = []
    payload = b"x" * 32
    began = time.perf_counter()
    for _ in range(samples):
        s = random.choice(tunnels)
        start = time.perf_counter()
        round_trip(s, payload)
        times.append((time.perf_counter() - start) * 1e6)
    wall = time.perf_counter() - began
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    return statistics.median(times), p99, wall


def client(port, path, n, samples, pss_cmd):
    tunnels = open_tunnels(port, path, n)
    pss = subprocess.run(["bash", "-c", pss_cmd], capture_output=True, text=True).stdout.split()[0]
    median, p99, _ = time_round_trips(tunnels, samples)
    print(len(tunnels), pss, f"{median:.0f}", f"{p99:.0f}")
    for s in tunnels:
        s.close()


if __name__ == "__main__":
    if sys.argv[1] == "backend":
        backend()
    else:
        client(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
