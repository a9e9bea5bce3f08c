#!/usr/bin/env python3
"""Isolated plugins ("isolation": "process") through `plugboard serve`, beside the same
plugin in process (issue 31, docs/BENCHMARKS.md "Isolated plugins"). Release build.

  Benchmarks/isolated-plugins.py serve [SECONDS] [ONLY]  wrk -t2 -c64 GET of a 1 KiB object
                                                         (ONLY: the cases whose plugin contains it)
  Benchmarks/isolated-plugins.py large [SIZE_MIB]    a 1 GiB object up (PUT) and down (GET)
  Benchmarks/isolated-plugins.py faults [N] [KINDS]  N injected faults under a GET load

serve: MemoryStorage and FileStorage, each in process and isolated (ring transport, and
socket for MemoryStorage), and QuotaStorage (a layer) over FileStorage in process, with
the layer in process and isolated (each GET crosses to the layer's worker and back to the
host for FileStorage's file), one `plugboard serve` at a time; requests/s, wrk's p50/p99, and
CPU per request of the host and of its workers (utime + stime of /proc/PID/stat before and
after; wrk's own CPU is not counted).

large: FileStorage in process and isolated, its folder under /dev/shm when that has room
(tmpfs, so the disk is not what is measured), else under /tmp; `curl -T FILE` (streamed)
up and `curl -o /dev/null` down; MiB/s and the peak RSS (VmHWM after a reset) of the host
and of the worker serving (`worker.pid` of /v1/admin/plugins).

faults: MisbehavingPlugin isolated (`"worker": {"maxCrashes": 100000}`), objects seed-0
.. seed-19, a fault on a GET of `boom`. Four client threads GET seed keys on keep-alive
connections, each retrying a 503 (or a dropped connection) for up to 10 s. For each
fault the injector waits until the worker and its warm spare are ready, GETs boom (the
worker dies; when other reads were in flight beside it the host sends it once more, to
the spare, which dies too; alone it is answered 503 and the spare takes over), then GETs
seed-0 until it answers 200: the time from sending boom to that answer is the recovery.
KINDS (comma-separated, default segfault,fatalError,exit,kill): the MisbehavingPlugin
faults, `hang` (callTimeoutSeconds 0.2), and `kill`: SIGSEGV sent to the worker from
outside, a crash that no request carries (so the spare takes over and survives). The N
faults are shared out among the kinds, one server each.

Prints one JSON object per case. Python 3 stdlib, wrk and curl.
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
ARGS = sys.argv[1:]
sys.argv = [sys.argv[0], os.path.join(REPO, ".build", "release")]
import attacks as e2e  # noqa: E402  (the attacks driver's Server, PeakRss and stop_process)

MIB = 1 << 20
ADMIN = "isolated-bench-" + os.urandom(6).hex()
AUTH = {"Authorization": "Bearer " + ADMIN}
TICK = os.sysconf("SC_CLK_TCK")
CLIENT_RETRY_SECONDS = 10.0   # a GET that got no 200 in this long failed
CLIENT_RETRY_PAUSE = 0.002

MEM = {"name": "Mem", "product": "MemoryStorage"}
FILES = {"name": "Files", "product": "FileStorage", "config": {"root": "data"}}
QUOTA = {"name": "Quota", "product": "QuotaStorage", "wraps": "Files", "config": {"maxBytes": 1 << 40}}


def isolated(entry, **worker):
    e = dict(entry, isolation="process")
    if worker:
        e["worker"] = worker
    if entry["product"] == "FileStorage":
        e["sandbox"] = {"readWrite": ["data"]}
    return e


def manifest(entry):
    """One entry, or a list of them (a layer after what it wraps)."""
    return json.dumps({"schemaVersion": 1, "plugins": entry if isinstance(entry, list) else [entry]})


def start(work, entry, args=()):
    os.makedirs(work, exist_ok=True)
    return e2e.Server(work, args=list(args), env={"PLUGBOARD_ADMIN_TOKEN": ADMIN}, manifest=manifest(entry))


def admin(server, path="/v1/admin/plugins"):
    status, _, body = server.request("GET", path, headers=AUTH)
    if status != 200:
        raise e2e.Failure("GET %s answered %d: %s" % (path, status, body[:300]))
    return json.loads(body)


def worker_info(server):
    """The `worker` of the (first) isolated plugin."""
    return next((p["worker"] for p in admin(server)["plugins"] if p.get("worker")), {})


class Process:
    """A pid with the `status_kib` e2e.PeakRss reads (the worker's)."""

    def __init__(self, pid):
        self.pid = pid

    def status_kib(self, field):
        return e2e.Server.status_kib(self, field)


def cpu_seconds(pid):
    """utime + stime of PID, in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK   # utime, stime (fields 14, 15)


def load_average():
    return [round(x, 2) for x in os.getloadavg()]


WRK_SCRIPT = """
local non2xx = 0
response = function(status, headers, body)
  if status ~= 200 then non2xx = non2xx + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("JSON {\\"requests\\": %d, \\"seconds\\": %.3f, \\"errors\\": %d, \\"non200\\": %d, \\"p50_ms\\": %.3f, \\"p99_ms\\": %.3f}\\n",
    summary.requests, summary.duration / 1e6, summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout, non2xx, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
"""


def serve(seconds, only=None):
    work = tempfile.mkdtemp(prefix="plugboard-bench-isolated-")
    script = os.path.join(work, "get.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT)
    cases = [("MemoryStorage", "in-process", MEM), ("MemoryStorage", "isolated ring", isolated(MEM)),
             ("MemoryStorage", "isolated socket", isolated(MEM, transport="socket")),
             ("FileStorage", "in-process", FILES), ("FileStorage", "isolated ring", isolated(FILES)),
             ("QuotaStorage over FileStorage", "in-process", [FILES, QUOTA]),
             ("QuotaStorage over FileStorage", "isolated layer ring", [FILES, isolated(QUOTA, spare=False)])]
    if only:
        cases = [c for c in cases if only in c[0]]
    try:
        for i, (plugin, where, entry) in enumerate(cases):
            server = start(os.path.join(work, str(i)), entry, ["--max-connections", "1024"])
            try:
                path = server.put("bench/object-1k", os.urandom(1024))
                workers = [p for p in (worker_info(server).get("pid"), worker_info(server).get("sparePid")) if p]
                # Warm up: connections, the worker's first calls.
                subprocess.run(["wrk", "-t2", "-c64", "-d1s", server.url(path)], capture_output=True, timeout=60)
                host0, workers0, load0 = cpu_seconds(server.pid), [cpu_seconds(p) for p in workers], os.getloadavg()[0]
                out = subprocess.run(["wrk", "-t2", "-c64", "-d%ds" % seconds, "-s", script, server.url(path)],
                                     capture_output=True, text=True, timeout=seconds + 60).stdout
                host1, workers1 = cpu_seconds(server.pid), [cpu_seconds(p) for p in workers]
                result = json.loads([line for line in out.splitlines() if line.startswith("JSON ")][0][5:])
                requests = max(result["requests"], 1)
                result.update(plugin=plugin, where=where, requests_per_second=round(result["requests"] / result["seconds"]),
                              host_cpu_us_per_request=round((host1 - host0) / requests * 1e6, 1),
                              worker_cpu_us_per_request=round((sum(workers1) - sum(workers0)) / requests * 1e6, 1) if workers else None,
                              load_average_before=round(load0, 2), load_average_after=load_average())
                print(json.dumps(result), flush=True)
            finally:
                server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def curl(method, url, path):
    args = ["curl", "-s", "-S", "--max-time", "900", "-o", os.devnull, "-w", "%{http_code} %{size_upload} %{size_download} %{time_total}"]
    if method == "PUT":
        args += ["-T", path, "-H", "Content-Type: application/octet-stream", "-H", "Expect:"]
    out = subprocess.run(args + [url], capture_output=True, text=True, timeout=960)
    status, up, down, seconds = out.stdout.split()
    moved = int(float(up if method == "PUT" else down))
    return {"method": method, "status": int(status), "bytes": moved, "seconds": round(float(seconds), 3),
            "mib_per_s": round(moved / MIB / float(seconds), 1) if float(seconds) > 0 else None}


def large(size):
    shm = shutil.disk_usage("/dev/shm").free > 3 * size + 256 * MIB if os.path.isdir("/dev/shm") else False
    work = tempfile.mkdtemp(prefix="plugboard-bench-isolated-large-", dir="/dev/shm" if shm else None)
    try:
        path = os.path.join(work, "large.bin")
        chunk = os.urandom(MIB)
        with open(path, "wb") as f:
            for i in range(size // MIB):
                f.write(chunk[i % 251:] + chunk[:i % 251])
        print(json.dumps({"size_mib": size // MIB, "folder": work, "tmpfs": shm, "nproc": os.cpu_count(),
                          "load_average": load_average()}), flush=True)
        for i, (where, entry) in enumerate((("in-process", FILES), ("isolated ring", isolated(FILES)))):
            server = start(os.path.join(work, str(i)), entry, ["--max-body-bytes", str(size)])
            try:
                url = server.url("/v1/objects/bench%2Flarge")
                for method in ("PUT", "GET"):
                    info = worker_info(server)
                    worker = Process(info["pid"]) if info.get("pid") else None
                    host_peak = e2e.PeakRss(server)
                    worker_peak = e2e.PeakRss(worker) if worker else None
                    result = curl(method, url, path)
                    result.update(where=where, host_peak_rss_mib=round(host_peak.stop(), 1),
                                  worker_peak_rss_mib=round(worker_peak.stop(), 1) if worker_peak else None,
                                  load_average=load_average())
                    print(json.dumps(result), flush=True)
            finally:
                server.stop()
            shutil.rmtree(os.path.join(work, str(i)), ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def percentile(values, p):
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))] if s else None


class Load:
    """Threads that GET seed keys on keep-alive connections, each GET retried (503, a
    dropped connection) until it answers 200 or CLIENT_RETRY_SECONDS pass."""

    def __init__(self, port, threads=4):
        self.port = port
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.latencies = []   # seconds of each GET, retries included
        self.retried = 0      # GETs that needed a retry
        self.failed = []      # GETs that got no 200 in time
        self.threads = [threading.Thread(target=self._run, args=(t,), daemon=True) for t in range(threads)]
        for t in self.threads:
            t.start()

    def _run(self, index):
        conn = None
        n = index
        while not self.stop.is_set():
            key = "/v1/objects/seed-%d" % (n % 20)
            n += 1
            started = time.monotonic()
            attempts = 0
            last = None
            while True:
                attempts += 1
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=CLIENT_RETRY_SECONDS)
                    conn.request("GET", key)
                    r = conn.getresponse()
                    body = r.read()
                    last = r.status
                    if r.status == 200 and body.startswith(b"seed"):
                        break
                    if r.status != 503:
                        last = "%d %s" % (r.status, body[:200])
                except (OSError, http.client.HTTPException) as e:
                    last = repr(e)
                    if conn is not None:
                        conn.close()
                    conn = None
                if time.monotonic() - started > CLIENT_RETRY_SECONDS:
                    with self.lock:
                        self.failed.append({"key": key, "last": str(last)})
                    break
                time.sleep(CLIENT_RETRY_PAUSE)
            with self.lock:
                self.latencies.append(time.monotonic() - started)
                if attempts > 1:
                    self.retried += 1

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(CLIENT_RETRY_SECONDS + 5)


def wait_spare(server, dead, timeout=60):
    """Until a worker and its warm spare are both up, neither of them one of the `dead`
    pids (the host may not have seen a death yet): (worker pid, spare pid)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = worker_info(server)
        if info.get("pid") and info.get("sparePid") and info.get("state") == "ready" \
                and info["pid"] not in dead and info["sparePid"] not in dead:
            return info["pid"], info["sparePid"]
        time.sleep(0.005)
    raise e2e.Failure("no worker with a warm spare within %d s: %s" % (timeout, worker_info(server)))


def get_until_200(port, key, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _, _ = e2e.request(port, "GET", key, timeout=timeout)
            if status == 200:
                return time.monotonic()
        except OSError:
            pass
        time.sleep(0.001)
    raise e2e.Failure("GET %s got no 200 within %d s" % (key, timeout))


def faults(count, kinds):
    work = tempfile.mkdtemp(prefix="plugboard-bench-isolated-faults-")
    try:
        for i, kind in enumerate(kinds):
            n = count // len(kinds) + (1 if i < count % len(kinds) else 0)
            config = {"faultIn": "get", "faultKey": "boom", "seed": 20}
            if kind != "kill":
                config["fault"] = kind
            worker = {"maxCrashes": 100000}
            if kind == "hang":
                worker["callTimeoutSeconds"] = 0.2
            entry = {"name": "Faulty", "product": "MisbehavingPlugin", "isolation": "process", "worker": worker, "config": config}
            server = start(os.path.join(work, kind), entry)
            recoveries, boom_status, host_down, dead = [], {}, 0, set()
            load = Load(server.port)
            started = time.monotonic()
            try:
                for _ in range(n):
                    pid, spare = wait_spare(server, dead)
                    t0 = time.monotonic()
                    if kind == "kill":
                        os.kill(pid, signal.SIGSEGV)
                        dead.add(pid)
                    else:
                        # The serving worker dies. Alone there, the read is answered 503; among
                        # other reads it is sent once more, to the spare, which dies too, seen
                        # by the host before it answers.
                        dead.add(pid)
                        status, _, _ = e2e.request(server.port, "GET", "/v1/objects/boom", timeout=30)
                        boom_status[status] = boom_status.get(status, 0) + 1
                    t1 = get_until_200(server.port, "/v1/objects/seed-0")
                    recoveries.append((t1 - t0) * 1000)
                    if server.proc.poll() is not None:
                        host_down += 1
                        break
            finally:
                load.finish()
                elapsed = time.monotonic() - started
                info = worker_info(server) if server.proc.poll() is None else {}
                result = {"kind": kind, "faults": len(recoveries), "seconds": round(elapsed, 1),
                          "host_up": server.proc.poll() is None and host_down == 0,
                          "boom_answers": boom_status, "restarts": info.get("restarts"),
                          "recovery_ms_p50": round(percentile(recoveries, 50), 1) if recoveries else None,
                          "recovery_ms_p99": round(percentile(recoveries, 99), 1) if recoveries else None,
                          "recovery_ms_max": round(max(recoveries), 1) if recoveries else None,
                          "load_gets": len(load.latencies), "load_gets_retried": load.retried,
                          "load_gets_failed": len(load.failed), "load_failures": load.failed[:5],
                          "load_p50_ms": round(percentile(load.latencies, 50) * 1000, 2) if load.latencies else None,
                          "load_p99_ms": round(percentile(load.latencies, 99) * 1000, 2) if load.latencies else None,
                          "load_max_ms": round(max(load.latencies) * 1000, 1) if load.latencies else None,
                          "load_average": load_average(), "nproc": os.cpu_count()}
                server.stop()
                print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # unwind: stop the servers, remove the folders
    what = ARGS[0] if ARGS else "serve"
    arg = ARGS[1] if len(ARGS) > 1 else None
    for tool in ("wrk", "curl"):
        if shutil.which(tool) is None:
            sys.exit("isolated-plugins.py: %s not found; apt-get install -y %s" % (tool, tool))
    if what == "serve":
        serve(int(arg or 10), ARGS[2] if len(ARGS) > 2 else None)
    elif what == "large":
        large(int(arg or 1024) * MIB)
    elif what == "faults":
        kinds = (ARGS[2] if len(ARGS) > 2 else "segfault,fatalError,exit,kill").split(",")
        faults(int(arg or 1000), kinds)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
