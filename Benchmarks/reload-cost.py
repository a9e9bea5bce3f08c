#!/usr/bin/env python3
"""What one reload of one changed plugin costs (docs/BENCHMARKS.md, "Reload of one changed plugin").

  Benchmarks/reload-cost.py [BUILD] time [RELOADS]   milliseconds per reload (POST /v1/admin/reload)
  Benchmarks/reload-cost.py [BUILD] trace            reads and hashes of the changed file, one reload
  Benchmarks/reload-cost.py [BUILD] start [RUNS]     `plugboard check --in-process` over the same three plugins
  Benchmarks/reload-cost.py [BUILD] isolated [RELOADS]  an isolated FileStorage: reload request to the new generation serving

BUILD is a folder holding plugboard and the plugin libraries (default .build/release).
The manifest selects three plugins: "Changed" (MemoryStorage, from a copy of its file that
each round rewrites with one more byte after its end, so every reload sees new bytes),
"Files" (FileStorage) and "Spare" (MemoryStorage), so a reload also hashes the unchanged
files it must compare. Each reload is `POST /v1/admin/reload` on a server with the watchers
off: it stages, runs a preflight child, maps and commits.

`isolated` serves one plugin, "Files" (FileStorage with `"isolation": "process"`, its data
folder granted), from a copy of its file that each round rewrites with one more byte, and
times each round from sending `POST /v1/admin/reload` to the first GET answered by the new
generation (`X-Plugboard-Generation`); between rounds it waits until the new worker's spare
is up and the old workers have drained, so no round pays for the last one's background work.

`trace` counts, for one reload, every open of the changed plugin's file or of a copy of it
in the plugin cache (strace on the server and its children), and every SHA-256 update over
exactly the changed file's size in a `plugboard` process (a perf uprobe on libcrypto's
EVP_DigestUpdate). It needs root, perf and strace.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
args = sys.argv[1:]
build = args.pop(0) if args and os.path.isdir(args[0]) else os.path.join(REPO, ".build", "release")
sys.argv = [sys.argv[0], build]
import hot_swap as e2e  # noqa: E402  (the e2e driver's Server and manifest)

LIBCRYPTO = "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"


def setup():
    work = tempfile.mkdtemp(prefix="plugboard-bench-reload-")
    os.makedirs(os.path.join(work, "plugins"))
    original = open(e2e.lib("MemoryStorage"), "rb").read()
    changed = os.path.join(work, "plugins", "libMemoryStorage.so")
    with open(changed, "wb") as f:
        f.write(original)
    plugins = [
        {"name": "Changed", "path": changed, "environments": ["testing"], "rank": 10},
        {"name": "Files", "path": e2e.lib("FileStorage"), "environments": ["testing"], "config": {"root": "data"}},
        {"name": "Spare", "path": e2e.lib("MemoryStorage"), "environments": ["testing"]},
    ]
    server = e2e.Server(work, e2e.manifest(plugins, preflightTimeoutSeconds=30), args=("--no-watch",))
    return work, server, changed, original


def change(path, original, round_number):
    """New bytes under the same name, renamed into place as a build would."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(original + b"\0" * round_number)
    os.chmod(tmp, 0o755)
    os.rename(tmp, path)


def reload(server):
    started = time.monotonic()
    status, outcome = server.reload()
    elapsed = time.monotonic() - started
    e2e.check(status == 200 and outcome["result"] == "applied", "reload: %d %s" % (status, outcome))
    return elapsed, outcome


def time_reloads(count):
    work, server, changed, original = setup()
    try:
        change(changed, original, 1)
        reload(server)  # warm: the first reload pays for what later ones reuse
        client, host = [], []
        for i in range(count):
            change(changed, original, i + 2)
            elapsed, outcome = reload(server)
            client.append(elapsed * 1000)
            host.append(outcome.get("durationSeconds", 0) * 1000)
        size = len(original)
        print("reloads of one changed plugin (%d bytes), %d rounds" % (size, count))
        for name, values in (("host (outcome)", host), ("client (POST)", client)):
            values.sort()
            print("  %-15s median %.1f ms  p90 %.1f ms  min %.1f ms" % (
                name, statistics.median(values), values[int(0.9 * (len(values) - 1))], values[0]))
    finally:
        e2e.stop_process(server.proc)
        shutil.rmtree(work, ignore_errors=True)


def trace():
    work, server, changed, original = setup()
    probe = "probe_libcrypto:plugboard_reload_cost"
    try:
        offset = None
        for line in subprocess.run(["nm", "-D", LIBCRYPTO], capture_output=True, text=True).stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[2].split("@")[0] == "EVP_DigestUpdate":
                offset = parts[0]
        e2e.check(offset, "EVP_DigestUpdate not found in %s" % LIBCRYPTO)
        subprocess.run(["perf", "probe", "-q", "-d", probe], capture_output=True)
        subprocess.run(["perf", "probe", "-q", "-x", LIBCRYPTO, "-a", "plugboard_reload_cost=0x%s cnt=%%dx:u64" % offset],
                       check=True, capture_output=True)
        change(changed, original, 1)
        size = len(original) + 1
        data = os.path.join(work, "perf.data")
        strace_out = os.path.join(work, "strace.out")
        perf = subprocess.Popen(["perf", "record", "-q", "-o", data, "-e", probe, "-a"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        strace = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=openat", "-o", strace_out, "-p", str(server.proc.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # both attached: they report nothing that says so
        elapsed, _ = reload(server)
        strace.send_signal(signal.SIGINT)
        strace.wait()
        perf.send_signal(signal.SIGINT)
        perf.wait()
        opens = {"source": 0, "cache": 0}
        cache = os.path.realpath(os.path.join(work, "cache"))
        for line in open(strace_out):
            if "= -1" in line or "openat(" not in line:
                continue
            if '"%s"' % changed in line:
                opens["source"] += 1
            elif cache in line and line.split('"')[1].endswith(".so") or "O_NOFOLLOW" in line and '.so"' in line:
                opens["cache"] += 1
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,event,trace"], capture_output=True, text=True).stdout
        hashes, hashed = 0, 0
        for line in script.splitlines():
            if "plugboard" not in line or "cnt=" not in line:
                continue
            count = int(line.rsplit("cnt=", 1)[1].split()[0])
            hashed += count
            if count == size:
                hashes += 1
        print("one reload of one changed plugin (%d bytes) under strace and perf: %.0f ms" % (size, elapsed * 1000))
        print("  opens of the changed file: %d; of plugin copies in the cache: %d" % (opens["source"], opens["cache"]))
        print("  SHA-256 over the changed file's bytes in plugboard processes: %d; bytes hashed in all: %d" % (hashes, hashed))
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", probe], capture_output=True)
        e2e.stop_process(server.proc)
        shutil.rmtree(work, ignore_errors=True)


def start(runs):
    """A process that loads the three plugins in process and exits: a plugin load at start."""
    work, server, changed, original = setup()
    e2e.stop_process(server.proc)
    try:
        command = [e2e.PLUGBOARD, "check", "--in-process", "--manifest", server.manifest, "--cache-dir", os.path.join(work, "cache")]
        subprocess.run(command, check=True, capture_output=True)  # warm: the cache copies exist after it
        samples = []
        for _ in range(runs):
            started = time.monotonic()
            subprocess.run(command, check=True, capture_output=True)
            samples.append((time.monotonic() - started) * 1000)
        samples.sort()
        print("plugboard check --in-process, three plugins, %d runs: median %.1f ms  p90 %.1f ms  min %.1f ms" % (
            runs, statistics.median(samples), samples[int(0.9 * (runs - 1))], samples[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def isolated(count):
    work = tempfile.mkdtemp(prefix="plugboard-bench-reload-isolated-")
    os.makedirs(os.path.join(work, "plugins"))
    original = open(e2e.lib("FileStorage"), "rb").read()
    changed = os.path.join(work, "plugins", "libFileStorage.so")
    with open(changed, "wb") as f:
        f.write(original)
    plugins = [{"name": "Files", "path": changed, "environments": ["testing"], "isolation": "process",
                "sandbox": {"readWrite": ["data"]}, "config": {"root": "data"}}]
    server = e2e.Server(work, e2e.manifest(plugins, preflightTimeoutSeconds=30, drainTimeoutSeconds=5), args=("--no-watch",))
    try:
        status, _, _ = server.request("PUT", "/v1/objects/k", body=b"v", headers={"Content-Type": "text/plain"})
        e2e.check(status in (200, 201), "PUT answered %d" % status)

        def settled(rounds):
            """The new worker's spare is up and every retired worker has drained."""
            deadline = time.time() + 30
            while time.time() < deadline:
                files = [p for p in server.admin("/v1/admin/plugins")["plugins"] if p["name"] == "Files"][0]
                drained = sum(1 for e in server.admin("/v1/admin/events")["events"] if e.get("kind") == "drained")
                if (files.get("worker") or {}).get("sparePid") and drained >= rounds:
                    return
                time.sleep(0.02)
            raise e2e.Failure("no spare or no drain after 30 s")

        settled(0)
        samples, host = [], []
        for i in range(count + 1):
            change(changed, original, i + 1)
            started = time.monotonic()
            status, outcome = server.reload()
            e2e.check(status == 200 and outcome["result"] == "applied", "reload: %d %s" % (status, outcome))
            while True:
                status, headers, body = server.request("GET", "/v1/objects/k")
                if status == 200 and int(headers.get("x-plugboard-generation", 0)) == outcome["generation"]:
                    break
            elapsed = (time.monotonic() - started) * 1000
            if i > 0:  # the first is a warm-up
                samples.append(elapsed)
                host.append(outcome.get("durationSeconds", 0) * 1000)
            settled(i + 1)
        print("isolated FileStorage, reload request to the new generation serving, %d rounds" % count)
        for name, values in (("served", samples), ("host (outcome)", host)):
            values.sort()
            print("  %-15s median %.1f ms  p90 %.1f ms  min %.1f ms" % (
                name, statistics.median(values), values[int(0.9 * (len(values) - 1))], values[0]))
    finally:
        e2e.stop_process(server.proc)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    mode = args[0] if args else "time"
    if mode == "time":
        time_reloads(int(args[1]) if len(args) > 1 else 30)
    elif mode == "trace":
        trace()
    elif mode == "start":
        start(int(args[1]) if len(args) > 1 else 20)
    elif mode == "isolated":
        isolated(int(args[1]) if len(args) > 1 else 30)
    else:
        sys.exit(__doc__)
