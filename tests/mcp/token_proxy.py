#!/usr/bin/env python3
"""A loopback HTTP/1.1 proxy that adds `Authorization: Bearer <token>` to every request it forwards
(unless the request has one), for clients that cannot send a header of their own choosing: the
conformance CLI has no header option, and `hands serve` always requires a bearer token.

Usage: token_proxy.py LISTEN_PORT UPSTREAM_PORT   (the token is read from the HANDS_PROXY_TOKEN
variable, so that it never shows in a process list). One request per connection: the upstream
request says `Connection: close`, so the answer tells the client to open a new connection; Host,
Origin and every other header pass unchanged (the DNS-rebinding checks still see what the client
sent). Prints `ready` on stdout once listening."""

from __future__ import annotations

import asyncio
import os
import sys

MAX_HEAD = 64 * 1024


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(1 << 16):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, upstream: int, token: bytes) -> None:
    try:
        head = await client_r.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        client_w.close()
        return
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]]
    has_auth = False
    for line in lines[1:]:
        name = line.split(b":", 1)[0].strip().lower()
        if name == b"authorization":
            has_auth = True
        if name in (b"connection", b"keep-alive"):
            continue
        kept.append(line)
    if not has_auth:
        kept.append(b"Authorization: Bearer " + token)
    kept.append(b"Connection: close")
    try:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream)
    except OSError:
        client_w.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        client_w.close()
        return
    up_w.write(b"\r\n".join(kept) + b"\r\n\r\n")
    await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))


async def main() -> None:
    listen, upstream = int(sys.argv[1]), int(sys.argv[2])
    token = os.environ["HANDS_PROXY_TOKEN"].encode()
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, upstream, token), "127.0.0.1", listen, limit=MAX_HEAD
    )
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
