#!/usr/bin/env python3
"""h2ws-echo's client (bench/h2ws_echo.sh): round trips through one
WebSocket tunnel over HTTP/2 (RFC 8441, h2c with prior knowledge), with the
`h2` package as the tests' client (crates/warren/tests/h2_websocket/).

  h2ws_echo.py PORT PATH SAMPLES TICKS_CMD
      Opens the tunnel (an extended CONNECT), checks one echo, runs
      TICKS_CMD (bash -c: the server's CPU ticks), times SAMPLES round trips
      of a 32-byte message, runs TICKS_CMD again. Prints:
      TICKS ROUND_TRIPS WALL_SECONDS
Every wait is bounded (a 20 s socket timeout).
"""
import os, socket, subprocess, sys, time

import h2.config
import h2.connection
import h2.events


def frame(payload):
    """A client frame: FIN, binary, masked (RFC 6455 5.3)."""
    mask = os.urandom(4)
    assert len(payload) < 126
    return bytes([0x82, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class Tunnel:
    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.flush()
        self.data = bytearray()
        self.status = None
        self.settings = False
        while not self.settings:
            self.pump()
        self.sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(self.sid, [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"), (":path", path), (":authority", "localhost"), ("sec-websocket-version", "13")])
        self.flush()
        while self.status is None:
            self.pump()
        assert self.status == "200", f"CONNECT {path}: {self.status}"

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def pump(self):
        got = self.sock.recv(65536)
        if not got:
            raise ConnectionError("closed")
        for ev in self.conn.receive_data(got):
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                self.settings = True
            elif isinstance(ev, h2.events.ResponseReceived):
                self.status = dict(ev.headers).get(b":status", b"").decode()
            elif isinstance(ev, h2.events.DataReceived):
                self.data += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                raise ConnectionError(f"ended: {ev}")
        self.flush()

    def round_trip(self, payload):
        self.conn.send_data(self.sid, frame(payload))
        self.flush()
        while len(self.data) < 2 + len(payload):
            self.pump()
        assert bytes(self.data[2:]) == payload, self.data
        self.data.clear()


def ticks(cmd):
    return int(subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout.split()[0])


def main():
    port, path, samples, ticks_cmd = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    t = Tunnel(port, path)
    payload = bytes(range(32))
    t.round_trip(payload)
    before = ticks(ticks_cmd)
    start = time.monotonic()
    for _ in range(samples):
        t.round_trip(payload)
    wall = time.monotonic() - start
    print(ticks(ticks_cmd) - before, samples, f"{wall:.2f}")


if __name__ == "__main__":
    main()
