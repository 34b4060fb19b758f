#!/usr/bin/env python3
"""A throwaway HTTP/2 server on python-h2 (cleartext, prior knowledge), used only
to cross-check conformance.py against a second implementation (README.md).
    reference_server.py PORT"""
import socket, threading, sys
import h2.connection, h2.config, h2.events, h2.exceptions
FILES = {b"/index.html": b"<html>hello</html>\n", b"/100k.bin": bytes(i % 251 for i in range(102400))}
def serve(sock):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding=None))
    conn.initiate_connection(); sock.sendall(conn.data_to_send())
    pending = {}
    def pump():
        for sid in list(pending):
            body = pending[sid]
            try:
                while body:
                    n = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, len(body))
                    if n <= 0: break
                    conn.send_data(sid, body[:n]); body = body[n:]
                if not body:
                    conn.end_stream(sid); del pending[sid]
                else: pending[sid] = body
            except (h2.exceptions.StreamClosedError, KeyError, h2.exceptions.ProtocolError):
                pending.pop(sid, None)
    try:
        while True:
            data = sock.recv(65536)
            if not data: return
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                sock.sendall(conn.data_to_send()); return
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived):
                    h = dict(ev.headers)
                    body = FILES.get(h.get(b":path"))
                    status = b"200" if body is not None else b"404"
                    body = body or b"nf"
                    if h.get(b":method") == b"POST": body, status = b"posted", b"200"
                    if h.get(b":path") == b"/echo-cookie":
                        body = b"; ".join(v for k, v in ev.headers if k == b"cookie"); status = b"200"
                    if h.get(b":method") == b"HEAD":
                        conn.send_headers(ev.stream_id, [(b":status", status)], end_stream=True)
                    else:
                        conn.send_headers(ev.stream_id, [(b":status", status), (b"content-length", str(len(body)).encode())])
                        pending[ev.stream_id] = body
                elif isinstance(ev, h2.events.DataReceived):
                    if ev.flow_controlled_length:
                        conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamReset):
                    pending.pop(ev.stream_id, None)
            pump()
            out = conn.data_to_send()
            if out: sock.sendall(out)
    except OSError:
        return
    finally:
        sock.close()
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(("127.0.0.1", int(sys.argv[1]))); ls.listen(100)
while True:
    s, _ = ls.accept(); threading.Thread(target=serve, args=(s,), daemon=True).start()
