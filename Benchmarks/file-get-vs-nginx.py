#!/usr/bin/env python3
"""A large GET through FileStorage beside nginx's sendfile of the same bytes (issue 25,
docs/BENCHMARKS.md "File bodies with sendfile").

  Benchmarks/file-get-vs-nginx.py [SIZE_MIB] [ROUNDS]      (default 1024 MiB, 5 rounds)

Writes a file of SIZE_MIB random MiB in a temporary folder, PUTs it once into a release
`plugboard serve` on the shipped plugins.json (FileStorage), starts nginx (`sendfile on`,
as Benchmarks/large-object.py does) on the folder holding the file, reads both once to
warm the page cache, then GETs from each in turn, ROUNDS times, with `curl -o /dev/null`.
One transfer is noisy on a shared machine, so rounds alternate between the two servers
and the best and the median of each are printed, with the server's CPU time per GET
(user + system, from /proc; nginx's workers summed), the steadier figure. Goal (issue 25):
plugboard's MiB/s >= 0.9x nginx's. Python 3 stdlib, curl and nginx.
"""
import importlib.util
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = sys.argv[1:]
_spec = importlib.util.spec_from_file_location("large_object", os.path.join(REPO, "Benchmarks", "large-object.py"))
large = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(large)   # its nginx, curl and file writer; the attacks driver's Server
e2e = large.e2e
MIB = large.MIB
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids):
    """User + system CPU seconds of the processes `pids`, from /proc/PID/stat."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / TICKS


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def main():
    size = int(ARGS[0]) * MIB if ARGS and ARGS[0].isdigit() else 1024 * MIB
    rounds = int(ARGS[1]) if len(ARGS) > 1 and ARGS[1].isdigit() else 5
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    large.need("curl", "apt-get install -y curl")
    large.need("nginx", "apt-get install -y nginx")
    work = tempfile.mkdtemp(prefix="plugboard-bench-file-get-")
    server = nginx = None
    try:
        html, path = large.nginx_folder(work, size)
        print(json.dumps({"size_mib": size // MIB, "rounds": rounds, "nproc": os.cpu_count(),
                          "load_average": os.getloadavg()}), flush=True)
        folder = os.path.join(work, "file")
        os.mkdir(folder)
        server = e2e.Server(folder, args=["--max-body-bytes", str(size)])
        plugboard_url = server.url("/v1/objects/bench%2Flarge")
        put = large.curl("PUT", plugboard_url, path, size)
        e2e.check(put["status"] == 200, "PUT answered %s" % put)
        nginx, url = large.start_nginx(work, html)
        nginx_url = url + "/large.bin"
        targets = [("plugboard FileStorage", plugboard_url, lambda: [server.pid]),
                   ("nginx", nginx_url, lambda: children(nginx.pid))]
        for _, target, _ in targets:   # warm the page cache for both files
            large.curl("GET", target, path, size)
        results = {name: [] for name, _, _ in targets}
        for _ in range(rounds):
            for name, target, pids in targets:
                before = cpu_seconds(pids())
                result = large.curl("GET", target, path, size)
                e2e.check(result["complete"] and result["status"] == 200, "%s GET: %s" % (name, result))
                results[name].append((result["mib_per_s"], cpu_seconds(pids()) - before))
        summary = {}
        for name, runs in results.items():
            speeds = [s for s, _ in runs]
            cpu = [c for _, c in runs]
            summary[name] = {"mib_per_s_best": max(speeds), "mib_per_s_median": statistics.median(speeds),
                             "mib_per_s_all": speeds, "server_cpu_s_median": round(statistics.median(cpu), 3),
                             "server_peak_rss_mib": round(server.status_kib("VmHWM") / 1024, 1) if name.startswith("plugboard") else None}
            print(json.dumps(dict(server=name, **summary[name])), flush=True)
        p, n = summary["plugboard FileStorage"], summary["nginx"]
        print(json.dumps({"ratio_best": round(p["mib_per_s_best"] / n["mib_per_s_best"], 2),
                          "ratio_median": round(p["mib_per_s_median"] / n["mib_per_s_median"], 2),
                          "goal": ">= 0.9", "load_average": os.getloadavg()}), flush=True)
    finally:
        if server is not None:
            server.stop()
        if nginx is not None:
            e2e.stop_process(nginx, 10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
