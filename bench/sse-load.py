#!/usr/bin/env python3
"""Many live-update (SSE) clients against one kelp dashboard, and the latency of ordinary
requests while they hold on.

    bench/sse-load.py [--kelp target/release/kelp] [--clients 2000] [--seconds 30]

It starts `kelp demo` on a free loopback port (or uses --url), then opens --clients SSE
streams at once, each a plain socket that asks for /clusters/<c>/karpenter/events and keeps
what it gets. A refused stream (503) comes back after its Retry-After plus up to as much
again (as the dashboard's page does), or at once with --hostile, as a client that ignores
it would; an accepted one is held open and never read again. Meanwhile a prober, in a
process of its own (so the clients' event loop is not in its timings), asks GET
/api/v1/clusters on a fresh connection every 20 ms and times the whole answer. At the end
it prints, as one JSON object: streams accepted and refused, the probes' count, failures
and latency percentiles (ms). Exit 1 when the probes' p99 is over --p99-ms (default 100)
or any probe failed.

Standard library only. Raises its own open-file limit to the hard limit.
"""

import argparse
import asyncio
import json
import multiprocessing
import random
import re
import resource
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def sse_client(host, port, path, stats, stop, hostile):
    """One client: open a stream; refused, go again (at once, or after Retry-After and
    up to as much again); accepted, hold it."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            stats["connect_errors"] += 1
            await asyncio.sleep(0.05)
            continue
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            status = int(head[9:12])
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError):
            stats["stream_errors"] += 1
            writer.close()
            continue
        if status == 200:
            stats["accepted"] += 1
            await stop.wait()
            writer.close()
            return
        stats["refused"] += 1
        writer.close()
        if not hostile:
            m = re.search(rb"(?i)\r\nretry-after: *(\d+)", head)
            wait = int(m.group(1)) if m else 15
            try:
                await asyncio.wait_for(stop.wait(), wait * (1 + random.random()))
            except asyncio.TimeoutError:
                pass


def probe(host, port, seconds, out):
    """GET /api/v1/clusters on a fresh connection every 20 ms for `seconds`, timed to the
    last byte; the latencies (ms) and the failures go to `out`."""
    import socket as s
    req = b"GET /api/v1/clusters HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    latencies, failures = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        ok = False
        try:
            with s.create_connection((host, port), timeout=10) as c:
                c.sendall(req)
                body = b""
                while chunk := c.recv(65536):
                    body += chunk
                ok = body.startswith(b"HTTP/1.1 200")
        except OSError:
            pass
        ms = (time.perf_counter() - t0) * 1000
        if ok:
            latencies.append(ms)
        else:
            failures += 1
        time.sleep(max(0.0, 0.02 - ms / 1000))
    out.put((latencies, failures))


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p / 100))], 2)


async def run(args, host, port, cluster):
    path = f"/clusters/{cluster}/karpenter/events"
    stats = {"accepted": 0, "refused": 0, "stream_errors": 0, "connect_errors": 0}
    stop = asyncio.Event()
    out = multiprocessing.Queue()
    prober = multiprocessing.Process(target=probe, args=(host, port, args.seconds, out))
    clients = [asyncio.create_task(sse_client(host, port, path, stats, stop, args.hostile))
               for _ in range(args.clients)]
    prober.start()
    await asyncio.sleep(args.seconds)
    lat, failures = await asyncio.get_running_loop().run_in_executor(None, out.get)
    prober.join()
    stop.set()
    for c in clients:
        c.cancel()
    await asyncio.gather(*clients, return_exceptions=True)
    return {
        "clients": args.clients,
        "hostile": args.hostile,
        "seconds": args.seconds,
        **stats,
        "probes": len(lat),
        "probe_failures": failures,
        "p50_ms": pct(lat, 50),
        "p99_ms": pct(lat, 99),
        "max_ms": round(max(lat), 2) if lat else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kelp", default="target/release/kelp")
    ap.add_argument("--url", help="a running dashboard's base URL instead of starting kelp demo")
    ap.add_argument("--cluster", default="demo")
    ap.add_argument("--clients", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--p99-ms", type=float, default=100)
    ap.add_argument("--hostile", action="store_true",
                    help="a refused client comes back at once, ignoring Retry-After")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    proc = None
    if args.url:
        m = re.match(r"http://([^:/]+):(\d+)", args.url)
        host, port = m.group(1), int(m.group(2))
    else:
        host, port = "127.0.0.1", free_port()
        proc = subprocess.Popen([args.kelp, "demo", "--dashboard-addr", f"{host}:{port}"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = proc.stdout.readline()
        m = re.search(r"/clusters/([^/]+)/karpenter", line)
        if not m:
            proc.kill()
            sys.exit(f"sse-load: kelp demo did not start: {line!r}")
        args.cluster = m.group(1)
    try:
        result = asyncio.run(run(args, host, port, args.cluster))
    finally:
        if proc:
            proc.terminate()
            proc.wait()
    print(json.dumps(result))
    bad = result["probe_failures"] > 0 or result["p99_ms"] is None or result["p99_ms"] > args.p99_ms
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
