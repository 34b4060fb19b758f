#!/usr/bin/env python3
"""The WebSocket backends of warren's tunnel tests (crates/warren/tests/proxy_websocket.rs).

Prints two ports on its first line and serves until its standard input closes:

  first   a WebSocket echo server (the `websockets` package from PyPI): each
          message comes back; "headers" is answered with the handshake's
          request fields, one a line; "close" makes the server close the
          connection (code 1000). /forbidden is answered 403 "not here".
  second  a broken backend that answers every request 101 Switching
          Protocols, whether it asked for an upgrade or not.

With `--tls CERT KEY` the echo server speaks TLS (wss://).
"""

import asyncio
import socket
import ssl
import sys
import threading
from http import HTTPStatus

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed


async def echo(ws):
    try:
        async for message in ws:
            if message == "close":
                await ws.close(1000, "asked")
                return
            if message == "headers":
                await ws.send("\n".join(f"{k}: {v}" for k, v in ws.request.headers.raw_items()))
                continue
            await ws.send(message)
    except ConnectionClosed:
        # The tests end tunnels without a close frame (idle timeout, a
        # client that goes): not worth a traceback.
        pass


def refuse(connection, request):
    if request.path == "/forbidden":
        return connection.respond(HTTPStatus.FORBIDDEN, "not here\n")
    return None


def answer_101(conn):
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        conn.recv(1)


def always_101(listener):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer_101, args=(conn,), daemon=True).start()


async def main():
    stray = socket.socket()
    stray.bind(("127.0.0.1", 0))
    stray.listen(16)
    threading.Thread(target=always_101, args=(stray,), daemon=True).start()
    tls = None
    if sys.argv[1:2] == ["--tls"]:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    async with serve(echo, "127.0.0.1", 0, process_request=refuse, ping_interval=None, max_size=None, ssl=tls) as server:
        port = server.sockets[0].getsockname()[1]
        print(port, stray.getsockname()[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


asyncio.run(main())
