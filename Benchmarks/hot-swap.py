#!/usr/bin/env python3
"""Hot swap benchmarks on a release build (docs/BENCHMARKS.md, "Hot swap").

  Benchmarks/hot-swap.py latency [SWAPS]      swap latency, debounce 0 and the default (500 ms)
  Benchmarks/hot-swap.py rss [RELOADS]        RSS per reload between two builds of one plugin
  Benchmarks/hot-swap.py wrk [SECONDS]        wrk GET + PUT mix, with and without a swap a second

Latency is measured from the rename of the new manifest (as an editor saves it) to the
first response served by the new backend: a client keeps asking on a keep-alive
connection and reads X-Plugboard-Generation from every answer. Each swap goes between
MemoryStorage and FileStorage, so every one maps a plugin, runs a preflight child and
commits a generation.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import http.client

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
sys.argv = [sys.argv[0], os.path.join(REPO, ".build", "release")] + sys.argv[1:]
import hot_swap as e2e  # noqa: E402  (the e2e driver's Server, manifest and store helpers)


def percentile(values, p):
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def latency(swaps, debounce):
    work = tempfile.mkdtemp(prefix="plugboard-bench-swap-")
    backends = [e2e.store("MemoryStorage"), e2e.store("FileStorage", config={"root": "data"})]
    server = e2e.Server(work, e2e.manifest([backends[0]], debounceMilliseconds=debounce))
    samples = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        for i in range(swaps):
            conn.request("HEAD", "/v1/objects/probe")
            r = conn.getresponse()
            r.read()
            before = int(r.getheader("X-Plugboard-Generation"))
            text = e2e.manifest([backends[(i + 1) % 2]], debounceMilliseconds=debounce)
            tmp = server.manifest + ".new"
            with open(tmp, "w") as f:
                f.write(text)
            started = time.perf_counter()
            os.rename(tmp, server.manifest)
            while True:
                conn.request("HEAD", "/v1/objects/probe")
                r = conn.getresponse()
                r.read()
                if int(r.getheader("X-Plugboard-Generation")) > before:
                    samples.append((time.perf_counter() - started) * 1000)
                    break
            time.sleep(0.05)
        durations = server.admin("/v1/admin/plugins")["reload"]["lastAttempt"]["durationSeconds"]
        return {"debounceMilliseconds": debounce, "swaps": swaps, "p50_ms": round(percentile(samples, 50), 1),
                "p99_ms": round(percentile(samples, 99), 1), "min_ms": round(min(samples), 1),
                "max_ms": round(max(samples), 1), "last_reload_duration_ms": round(durations * 1000, 1)}
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def rss(reloads):
    work = tempfile.mkdtemp(prefix="plugboard-bench-rss-")
    try:
        os.mkdir(os.path.join(work, "plugins"))
        a, b = os.path.join(work, "libA.so"), os.path.join(work, "libB.so")
        e2e.variant(e2e.lib("MemoryStorage"), a, "A")
        e2e.variant(e2e.lib("MemoryStorage"), b, "B")
        target = os.path.join(work, "plugins", "libStore.so")
        shutil.copy(a, target)
        server = e2e.Server(work, e2e.manifest([e2e.store(path="plugins/libStore.so")]), args=["--no-watch"])
        try:
            marks = {}
            for i in range(reloads):
                shutil.copy(b if i % 2 == 0 else a, target + ".new")
                os.rename(target + ".new", target)
                status, outcome = server.reload()
                assert status == 200 and outcome["result"] == "applied", outcome
                if i + 1 in (2, 10, reloads):
                    marks[i + 1] = server.rss_kib()
            images = server.admin("/v1/admin/plugins")["mappedImages"]
            growth = marks[reloads] - marks[2]
            return {"reloads": reloads, "rss_kib_after_2": marks[2], "rss_kib_after_10": marks[10],
                    "rss_kib_at_end": marks[reloads], "kib_per_reload_after_2": round(growth / (reloads - 2), 2),
                    "mapped_images": images["count"], "mapped_image_bytes": images["bytes"]}
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


WRK_SCRIPT = """
-- GET of one of 100 keys, and every 10th request a PUT of 1 KiB to one of them.
local counter = 0
local body = string.rep("x", 1024)
request = function()
  counter = counter + 1
  local key = "/v1/objects/bench%2F" .. (counter % 100)
  if counter % 10 == 0 then
    return wrk.format("PUT", key, {["Content-Type"] = "application/octet-stream"}, body)
  end
  return wrk.format("GET", key)
end
local non2xx = 0
response = function(status, headers, body)
  if status >= 300 then non2xx = non2xx + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("JSON {\\"requests\\": %d, \\"seconds\\": %.3f, \\"errors_connect\\": %d, \\"errors_read\\": %d, \\"errors_write\\": %d, \\"errors_timeout\\": %d, \\"non2xx\\": %d, \\"p50_ms\\": %.2f, \\"p99_ms\\": %.2f}\\n",
    summary.requests, summary.duration / 1e6, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
"""


def wrk_run(seconds, swapping):
    work = tempfile.mkdtemp(prefix="plugboard-bench-wrk-")
    # Two builds of FileStorage (the same code, other bytes) on one root: every object
    # stays readable across a swap, and both cost the same, so the runs compare.
    os.mkdir(os.path.join(work, "plugins"))
    for tag in ("a", "b"):
        e2e.variant(e2e.lib("FileStorage"), os.path.join(work, "plugins", "libFileStorage-%s.so" % tag), tag)
    configs = [e2e.store(path="plugins/libFileStorage-%s.so" % tag, config={"root": "data"}) for tag in ("a", "b")]
    server = e2e.Server(work, e2e.manifest([configs[0]]), args=["--max-connections", "1024"])
    script = os.path.join(work, "mix.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT)
    stop = threading.Event()
    swaps = [0]

    def swapper():
        i = 0
        while not stop.wait(1.0):
            i += 1
            e2e.write_atomic(server.manifest, e2e.manifest([configs[i % 2]]))
            swaps[0] += 1

    try:
        for k in range(100):
            server.request("PUT", "/v1/objects/bench%%2F%d" % k, body=b"x" * 1024, headers={"Content-Type": "application/octet-stream"})
        t = threading.Thread(target=swapper)
        if swapping:
            t.start()
        out = subprocess.run(["wrk", "-t2", "-c64", "-d%ds" % seconds, "-s", script, "http://127.0.0.1:%d" % server.port],
                             capture_output=True, text=True, timeout=seconds + 60).stdout
        stop.set()
        if swapping:
            t.join()
        result = json.loads([line for line in out.splitlines() if line.startswith("JSON ")][0][5:])
        result["requests_per_second"] = round(result["requests"] / result["seconds"])
        result["swaps"] = swaps[0]
        result["generation"] = server.generation()
        result["applied"] = server.metric('plugboard_reloads_total{result="applied"}')
        result["refused"] = server.metric('plugboard_reloads_total{result="refused"}')
        return result
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    what = sys.argv[2] if len(sys.argv) > 2 else "latency"
    arg = int(sys.argv[3]) if len(sys.argv) > 3 else None
    if what == "latency":
        for debounce in (0, 500):
            print(json.dumps(latency(arg or 50, debounce)), flush=True)
    elif what == "rss":
        print(json.dumps(rss(arg or 100)), flush=True)
    elif what == "wrk":
        seconds = arg or 60
        # Two pairs, each run beside its baseline, so a change in the machine's load shows.
        for pair in (1, 2):
            base = wrk_run(seconds, swapping=False)
            print(json.dumps(dict(base, run="no swaps", pair=pair)), flush=True)
            swapped = wrk_run(seconds, swapping=True)
            print(json.dumps(dict(swapped, run="a swap a second", pair=pair)), flush=True)
            print(json.dumps({"pair": pair, "throughput_ratio": round(swapped["requests_per_second"] / base["requests_per_second"], 3)}), flush=True)
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
