#!/usr/bin/env python3
"""Hostile HTTP(S) clients for the webhook and the monitor: the attacks of
issue 37, from the tests and the benchmarks, on loopback only.

    hostile_http.py --port P [--tls] KIND=COUNT ... [--sources A.B.C.D-N]
                    [--reconnect] [--ready FILE] [--stats FILE]

KIND is one of
  idle      a TCP connection that sends nothing (no TLS handshake either)
  headers   a request whose header lines trickle in, a byte every --every s
  body      headers with Content-Length 4096, then the body a byte at a time
  bigbody   headers with Content-Length --big, every byte but the last sent
            at once, then nothing
The clients connect from the source addresses of --sources (default
127.0.0.1; "127.0.1.1-30" = 30 addresses, used in turn) and hold their
connections until SIGTERM or SIGINT. With --reconnect a connection the server
closes is opened again (0.1 s later), as an attacker would. --ready FILE is
written once every connection has been tried; --stats FILE (JSON) at exit:
how many connected, how many the server closed, how many were refused.
"""
import argparse
import asyncio
import ipaddress
import json
import os
import signal
import ssl
import sys

P = argparse.ArgumentParser()
P.add_argument("--host", default="127.0.0.1")
P.add_argument("--port", type=int, required=True)
P.add_argument("--tls", action="store_true")
P.add_argument("--path", default="/mutate")
P.add_argument("--sources", default="127.0.0.1")
P.add_argument("--every", type=float, default=0.5)
P.add_argument("--big", type=int, default=512 * 1024 - 1)
P.add_argument("--reconnect", action="store_true")
P.add_argument("--ready")
P.add_argument("--stats")
P.add_argument("attacks", nargs="+", help="KIND=COUNT")
a = P.parse_args()

host = ipaddress.ip_address(a.host)
if not host.is_loopback:
    sys.exit("hostile_http.py: loopback addresses only, not %s" % a.host)


def sources(spec):
    if "-" not in spec:
        return [spec]
    first, n = spec.rsplit("-", 1)
    base = ipaddress.ip_address(first)
    out = [str(base + i) for i in range(int(n) - int(first.rsplit(".", 1)[1]) + 1)]
    for s in out:
        if not ipaddress.ip_address(s).is_loopback:
            sys.exit("hostile_http.py: loopback sources only, not %s" % s)
    return out


srcs = sources(a.sources)
stats = {"connected": 0, "closed_by_server": 0, "refused": 0, "sent_bytes": 0}
stop = None  # an asyncio.Event, made in main()
ctx = None
if a.tls:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE


def head(kind):
    h = "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n" % (a.path, a.host)
    if kind == "body":
        return (h + "Content-Length: 4096\r\n\r\n").encode()
    if kind == "bigbody":
        return (h + "Content-Length: %d\r\n\r\n" % a.big).encode()
    return h.encode()


async def one(kind, src):
    while not stop.is_set():
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(
                a.host, a.port, local_addr=(src, 0),
                ssl=ctx if kind != "idle" else None,
                server_hostname=None if kind == "idle" or not a.tls else ""), 10)
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            stats["refused"] += 1
            if not a.reconnect:
                return
            await asyncio.sleep(0.2)
            continue
        stats["connected"] += 1
        try:
            if kind in ("headers", "body"):
                w.write(head(kind))
                await w.drain()
                while not stop.is_set():
                    w.write(b"X" if kind == "body" else b"x")
                    await w.drain()
                    stats["sent_bytes"] += 1
                    # the server closing shows as a read at EOF
                    try:
                        d = await asyncio.wait_for(r.read(1024), a.every)
                        if not d:
                            break
                    except asyncio.TimeoutError:
                        pass
            elif kind == "bigbody":
                w.write(head(kind) + b" " * (a.big - 1))
                await w.drain()
                stats["sent_bytes"] += a.big - 1
                while not stop.is_set():
                    d = await r.read(1024)
                    if not d:
                        break
            else:
                while not stop.is_set():
                    d = await r.read(1024)
                    if not d:
                        break
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        if stop.is_set():
            w.close()
            return
        stats["closed_by_server"] += 1
        w.close()
        if not a.reconnect:
            return
        await asyncio.sleep(0.1)


async def main():
    global stop
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks, i = [], 0
    for spec in a.attacks:
        kind, n = spec.split("=")
        if kind not in ("idle", "headers", "body", "bigbody"):
            sys.exit("hostile_http.py: unknown kind %s" % kind)
        for _ in range(int(n)):
            tasks.append(asyncio.create_task(one(kind, srcs[i % len(srcs)])))
            i += 1
            if i % 50 == 0:
                await asyncio.sleep(0.05)
    # every connection tried (connected or refused) before "ready"
    for _ in range(600):
        if stats["connected"] + stats["refused"] >= len(tasks) or stop.is_set():
            break
        await asyncio.sleep(0.05)
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            json.dump(stats, f)
        os.rename(a.ready + ".tmp", a.ready)
    await stop.wait()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


asyncio.run(main())
if a.stats:
    with open(a.stats, "w") as f:
        json.dump(stats, f)
