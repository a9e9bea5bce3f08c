#!/usr/bin/env python3
"""The fleet's benchmarks on a release build (docs/BENCHMARKS.md, "Fleet"), on the fleet of
Tests/e2e/fleet_e2e.py (a real three-member etcd from Tests/e2e/etcd.sh, real
`plugboard serve --fleet` processes):

  Benchmarks/fleet-convergence.py converge HOSTS [RUNS]   (default 4 5)
      HOSTS hosts on MemoryStorage; each run is `fleet rollout --waves 100% --bake 0` of a
      new MemoryStorage configuration (every host really reloads: preflight child, commit,
      drain). Measured from the command's start to the last host's `fleet: applied
      manifest` log line, split at the controller's "wave 1/1" line (the targets written);
      and the command's own time until it exits 0.
  Benchmarks/fleet-convergence.py watch HOSTS [WRITES]    (default 50 10)
      A watch event to the start of the reload: this script writes the fleet's `stable`
      record to etcd itself (the manifest's bytes written before), the clock read just
      before the put; each host's `fleet: reloading to manifest` line (its time, UTC with
      milliseconds) minus that. One sample a host a write; p50, p99, max.
  Benchmarks/fleet-convergence.py load [SECONDS] [ROUNDS] (default 20 3)
      Four hosts (FileStorage over one folder) behind HAProxy (docs/examples/haproxy-fleet.cfg),
      wrk -t2 -c16 GET of a 1 KiB object through HAProxy for SECONDS, alternating: a run
      alone, then a run with three-wave rollouts (1,50%,100%, bake 1 s) one after another
      for the whole run. Failed requests: wrk's socket errors and non-2xx answers.

Needs etcd, curl, haproxy and wrk (load), a release build (swift build -c release).
"""
import base64
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
sys.argv = [sys.argv[0], os.path.join(REPO, ".build", "release")] + sys.argv[1:]
import fleet_e2e as e2e  # noqa: E402  (the e2e driver's etcd, hosts and fleet)
from e2e_runner import request  # noqa: E402


def memory_storage(seed):
    return e2e.manifest({"product": "MemoryStorage", "config": {"seed": seed}})


def percentile(values, p):
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def describe(values, unit="s", scale=1.0):
    return "median %.3f %s, max %.3f %s (n=%d: %s)" % (
        statistics.median(values) * scale, unit, max(values) * scale, unit, len(values),
        ", ".join("%.2f" % (v * scale) for v in values))


def machine():
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return "%d cores, load average %s at the start" % (os.cpu_count(), " ".join(load))


def fleet_of(hosts, first, balanced=False):
    work = tempfile.mkdtemp(prefix="plugboard-bench-fleet-")
    fleet = e2e.Fleet(work, hosts=hosts, first=first, balanced=balanced)
    print("fleet:", fleet.start(), flush=True)
    return fleet


def applied_times(fleet, digest):
    times = []
    for host in fleet.hosts:
        found = e2e.log_times(host.log(), "fleet: applied manifest %s" % digest)
        e2e.check(found, "%s did not log applying %s" % (host.id, digest[:12]))
        times.append(found[-1])
    return times


def converge(hosts, runs):
    print("converge: %d hosts, %d runs; %s" % (hosts, runs, machine()), flush=True)
    fleet = fleet_of(hosts, lambda f: memory_storage(0))
    totals, targets_written, exits = [], [], []
    try:
        for run in range(1, runs + 1):
            text = memory_storage(run)
            digest = e2e.sha256_text(text)
            path = fleet.write("converge-%d.json" % run, text)
            # The rollout from its first write: the command's own preflight, before it, is
            # no part of the fleet's convergence.
            argv = [e2e.PLUGBOARD, "fleet", "rollout", path, "--fleet", fleet.url, "--waves", "100%", "--bake", "0", "--no-preflight"]
            started = time.time()
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wave_at = None
            for line in proc.stdout:
                if wave_at is None and "wave 1/1:" in line:
                    wave_at = time.time()
            code = proc.wait(600)
            exited = time.time() - started
            e2e.check(code == 0, "fleet rollout exited %d: %s" % (code, proc.stderr.read()[-800:]))
            last = max(applied_times(fleet, digest))
            totals.append(last - started)
            targets_written.append((wave_at or started) - started)
            exits.append(exited)
            print("  run %d: every host applied %.3f s after the start (targets written at %.3f s); the command exited at %.3f s" % (
                run, last - started, (wave_at or started) - started, exited), flush=True)
    finally:
        fleet.stop()
        shutil.rmtree(fleet.work, ignore_errors=True)
    print("converge %d hosts: start -> every host applied: %s" % (hosts, describe(totals)))
    print("converge %d hosts: start -> targets written: %s" % (hosts, describe(targets_written)))
    print("converge %d hosts: start -> the command exits 0: %s" % (hosts, describe(exits)), flush=True)


def etcd_put(endpoint, key, value):
    body = json.dumps({"key": base64.b64encode(key.encode()).decode(), "value": base64.b64encode(value).decode()}).encode()
    req = urllib.request.Request("http://%s/v3/kv/put" % endpoint, data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def etcd_key_ending(endpoint, suffix):
    """The fleet's key that ends with `suffix` (the prefix as the hosts' URL gave it)."""
    body = json.dumps({"key": base64.b64encode(b"\0").decode(), "range_end": base64.b64encode(b"\0").decode(), "keys_only": True}).encode()
    req = urllib.request.Request("http://%s/v3/kv/range" % endpoint, data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        keys = [base64.b64decode(kv["key"]).decode() for kv in json.loads(r.read()).get("kvs", [])]
    found = [k for k in keys if k.endswith(suffix)]
    e2e.check(len(found) == 1, "etcd: expected one key ending in %s, found %s" % (suffix, found))
    return found[0]


def watch(hosts, writes):
    print("watch: %d hosts, %d writes; %s" % (hosts, writes, machine()), flush=True)
    fleet = fleet_of(hosts, lambda f: memory_storage(0))
    samples = []
    try:
        endpoint = fleet.etcd.endpoints.split(",")[0]
        stable_key = etcd_key_ending(endpoint, "/stable")
        prefix = stable_key[:-len("stable")]
        for n in range(1, writes + 1):
            text = memory_storage(1000 + n)
            digest = e2e.sha256_text(text)
            etcd_put(endpoint, prefix + "manifests/" + digest, text.encode())
            record = json.dumps({"digest": digest, "setAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": "fleet-convergence.py"},
                                separators=(",", ":")).encode()
            written = time.time()
            etcd_put(endpoint, stable_key, record)
            fleet.wait_converged(digest, "write %d" % n, timeout=300)
            for host in fleet.hosts:
                started = e2e.log_times(host.log(), "fleet: reloading to manifest %s" % digest)
                e2e.check(started, "%s did not log reloading to %s" % (host.id, digest[:12]))
                samples.append(started[0] - written)
            print("  write %d: reload started on every host within %.0f ms (p50 so far %.0f ms)" % (
                n, max(samples[-hosts:]) * 1000, statistics.median(samples) * 1000), flush=True)
    finally:
        fleet.stop()
        shutil.rmtree(fleet.work, ignore_errors=True)
    print("watch %d hosts: put -> reload start: p50 %.0f ms, p99 %.0f ms, max %.0f ms (n=%d; the log's times have millisecond resolution)" % (
        hosts, percentile(samples, 50) * 1000, percentile(samples, 99) * 1000, max(samples) * 1000, len(samples)), flush=True)


WRK_LINE = re.compile(r"Requests/sec:\s+([\d.]+)")


def wrk(url, seconds):
    out = subprocess.run(["wrk", "-t2", "-c16", "-d%ds" % seconds, url], capture_output=True, text=True, timeout=seconds + 60).stdout
    rate = float(WRK_LINE.search(out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    failed = (sum(int(g) for g in errors.groups()) if errors else 0) + (int(non2xx.group(1)) if non2xx else 0)
    return rate, total, failed


def load(seconds, rounds):
    print("load: 4 hosts behind HAProxy, wrk -t2 -c16 for %d s, %d rounds; %s" % (seconds, rounds, machine()), flush=True)
    fleet = fleet_of(e2e.HOSTS, None, balanced=True)
    fleet.load.stop()   # wrk is the load here
    alone, during, rollouts, failures = [], [], [], []
    try:
        status, _, _ = request(fleet.haproxy.port, "PUT", "/v1/objects/bench/one-kib", body=b"x" * 1024)
        e2e.check(status in (200, 201, 204), "PUT of the benchmark's object answered %d" % status)
        url = "%s/v1/objects/bench/one-kib" % fleet.haproxy.endpoint
        for r in range(1, rounds + 1):
            rate, total, failed = wrk(url, seconds)
            alone.append(rate)
            failures.append(failed)
            print("  round %d alone: %.0f requests/s, %d requests, %d failed" % (r, rate, total, failed), flush=True)
            stop = threading.Event()
            done = []

            def roll():
                while not stop.is_set():
                    text = fleet.next_file_storage()
                    code, out, err = fleet.cli("rollout", fleet.write("load-%d.json" % fleet.variant, text), "--waves", "1,50%,100%", "--bake", "1")
                    e2e.check(code == 0, "a rollout under load exited %d: %s" % (code, err[-500:]))
                    fleet.stable = e2e.sha256_text(text)
                    done.append(time.time())
            thread = threading.Thread(target=roll)
            thread.start()
            rate, total, failed = wrk(url, seconds)
            stop.set()
            thread.join(300)
            during.append(rate)
            failures.append(failed)
            rollouts.append(len(done))
            print("  round %d with rollouts: %.0f requests/s, %d requests, %d failed, %d three-wave rollouts finished" % (
                r, rate, total, failed, len(done)), flush=True)
    finally:
        fleet.stop()
        shutil.rmtree(fleet.work, ignore_errors=True)
    ratio = statistics.median(during) / statistics.median(alone)
    print("load: alone median %.0f requests/s, with rollouts median %.0f requests/s: %.2fx; %d failed requests in all; %d rollouts" % (
        statistics.median(alone), statistics.median(during), ratio, sum(failures), sum(rollouts)), flush=True)


def main():
    what = sys.argv[2] if len(sys.argv) > 2 else "converge"
    args = [int(a) for a in sys.argv[3:]]
    if what == "converge":
        converge(*(args + [4, 5][len(args):]))
    elif what == "watch":
        watch(*(args + [50, 10][len(args):]))
    elif what == "load":
        load(*(args + [20, 3][len(args):]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
