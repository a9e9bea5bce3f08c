#!/usr/bin/env python3
"""Idle connections against plugboard serve (issue 11, docs/BENCHMARKS.md "Server core").

  Benchmarks/idle-connections.py [COUNT] [SECONDS]      (default 10000 10)

Starts a release `plugboard serve` on the shipped plugins.json (FileStorage) with its
defaults and the words of PLUGBOARD_SERVE_ARGS, PUTs a 1 KiB object, then opens COUNT
connections that each GET /healthz once and then stay open, idle, as kept-alive clients
do (a connection that never sends a byte is closed by a first-byte timeout, as it should
be). They come from 100 loopback addresses, 127.0.1.1 to 127.0.1.100, so that a
per-client cap of 100 or more does not refuse them. With them held, another client at
127.0.0.1 GETs the 1 KiB object for SECONDS on a keep-alive connection (opened again
whenever the server closes it) and its latency is measured. Prints one JSON object: how
many idle connections were answered and were still held at the end, the server's RSS
before and with them, its peak, and the client's answers and p50/p99 (of its 2xx
answers). Goals (issue 11): RSS <= 100 MiB, p99 <= 50 ms. Python 3 stdlib only.
"""
import errno
import http.client
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
ARGS = sys.argv[1:]
sys.argv = [sys.argv[0], os.path.join(REPO, ".build", "release")]
import attacks as e2e  # noqa: E402  (the attacks driver's Server, PeakRss and limits)

SOURCES = ["127.0.1.%d" % i for i in range(1, 101)]
IN_FLIGHT = 256          # connections opening at once (below the listen backlog)
OPEN_TIMEOUT = 120       # for all COUNT to be answered or refused


def percentile(values, p):
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))] if s else None


def open_idle(port, count):
    """COUNT connections, each with one GET /healthz answered; returns the selector of
    those still open and the tally of answers."""
    selector = selectors.DefaultSelector()
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    pending = {}   # socket -> bytes received so far
    tally = {"opened": 0, "answered_200": 0, "answered_other": 0, "closed_or_failed": 0}
    idle = []
    started = time.monotonic()
    while (tally["opened"] < count or pending) and time.monotonic() - started < OPEN_TIMEOUT:
        while tally["opened"] < count and len(pending) < IN_FLIGHT:
            s = socket.socket()
            s.setblocking(False)
            s.bind((SOURCES[tally["opened"] % len(SOURCES)], 0))
            code = s.connect_ex(("127.0.0.1", port))
            tally["opened"] += 1
            if code not in (0, errno.EINPROGRESS):
                s.close()
                tally["closed_or_failed"] += 1
                continue
            pending[s] = None   # None: the request is not sent yet
            selector.register(s, selectors.EVENT_WRITE)
        for key, _ in selector.select(timeout=1.0):
            s = key.fileobj
            try:
                if pending[s] is None:
                    s.send(request)
                    pending[s] = b""
                    selector.modify(s, selectors.EVENT_READ)
                    continue
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                selector.unregister(s)
                del pending[s]
                s.close()
                tally["closed_or_failed"] += 1
                continue
            pending[s] += data
            head, sep, body = pending[s].partition(b"\r\n\r\n")
            if not sep:
                continue
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(body) < length:
                continue
            status = head.split(b" ", 2)[1]
            del pending[s]
            if status == b"200":
                tally["answered_200"] += 1
                idle.append(s)
            else:
                tally["answered_other"] += 1
                selector.unregister(s)
                s.close()
    for s in list(pending):
        selector.unregister(s)
        s.close()
        tally["closed_or_failed"] += 1
    tally["seconds_to_open"] = round(time.monotonic() - started, 2)
    return selector, idle, tally


def still_open(selector, idle):
    """How many of the idle connections the server has not closed (none is readable)."""
    closed = {key.fileobj for key, _ in selector.select(timeout=0)}
    return sum(1 for s in idle if s not in closed)


def measure(server, path, seconds):
    latencies, every, statuses, errors = [], [], {}, {}
    conn = None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5, source_address=("127.0.0.1", 0))
        started = time.perf_counter()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            elapsed = (time.perf_counter() - started) * 1000
            statuses[r.status] = statuses.get(r.status, 0) + 1
            every.append(elapsed)
            if 200 <= r.status < 300:
                latencies.append(elapsed)
            if r.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            conn.close()
            conn = None
    if conn:
        conn.close()
    return latencies, every, statuses, errors


def main():
    count = int(ARGS[0]) if ARGS else 10000
    seconds = float(ARGS[1]) if len(ARGS) > 1 else 10.0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # unwind: stop the servers, remove the folder
    e2e.raise_nofile(count + 512)
    work = tempfile.mkdtemp(prefix="plugboard-bench-idle-")
    server = None
    selector = None
    idle = []
    try:
        server = e2e.Server(work)
        path = server.put("bench/object", os.urandom(1024))
        rss_before = server.status_kib("VmRSS")
        peak = e2e.PeakRss(server)
        selector, idle, tally = open_idle(server.port, count)
        held_by_server = sum(1 for address, _ in server.held_peers() if address in SOURCES)
        rss_with = server.status_kib("VmRSS")
        latencies, every, statuses, errors = measure(server, path, seconds)
        result = {
            "idle_connections": count,
            "answered_200": tally["answered_200"], "answered_other": tally["answered_other"],
            "closed_or_failed": tally["closed_or_failed"], "seconds_to_open": tally["seconds_to_open"],
            "held_by_server_before_client": held_by_server,
            "still_open_after_client": still_open(selector, idle),
            "server_rss_mib_before": round(rss_before / 1024, 1),
            "server_rss_mib_with_connections": round(rss_with / 1024, 1),
            "server_peak_rss_mib": round(peak.stop(), 1),
            "client_seconds": seconds,
            "client_statuses": {str(k): v for k, v in sorted(statuses.items())},
            "client_errors": errors,
            "client_p50_ms": round(percentile(latencies, 50), 2) if latencies else None,
            "client_p99_ms": round(percentile(latencies, 99), 2) if latencies else None,
            "client_p99_ms_of_every_answer": round(percentile(every, 99), 2) if every else None,
            "serve_args": e2e.SERVE_ARGS,
            "load_average": os.getloadavg(),
        }
        print(json.dumps(result), flush=True)
    finally:
        for s in idle:
            s.close()
        if selector:
            selector.close()
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
