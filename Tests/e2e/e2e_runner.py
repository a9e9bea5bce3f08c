"""Shared by the e2e drivers (hot_swap.py, attacks.py): the scenario runner (each scenario
runs in a fresh temporary folder and prints one PASS or FAIL line; the exit status is the
number of failed scenarios), the step runner of the drivers whose steps share one fleet
(gateway_fleet.py, fleet_e2e.py), a free port, a request, stopping a child process."""
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def run_scenarios(scenarios, wanted, prefix, width=20, discard=()):
    """Runs the scenarios named in `wanted` (all when empty) of `scenarios`, a list of
    (name, function(work) -> summary) where a failure raises; a failed scenario's folder
    is kept (its serve.err tail is printed), except the subfolders named in `discard`.
    Exits with the number of failures, or 2 for an unknown name."""
    check_wanted(scenarios, wanted, "scenario")
    # SIGTERM (a CI timeout) unwinds like an exception, so servers and folders are cleaned up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failed = 0
    for name, run in scenarios:
        if wanted and name not in wanted:
            continue
        work = tempfile.mkdtemp(prefix="%s%s-" % (prefix, name))
        started = time.time()
        try:
            summary = run(work)
            print("PASS %-*s %5.1f s  %s" % (width, name, time.time() - started, summary), flush=True)
            shutil.rmtree(work, ignore_errors=True)
        except Exception as e:
            failed += 1
            print("FAIL %-*s %5.1f s  %s (files kept in %s)" % (width, name, time.time() - started, e, work), flush=True)
            err = os.path.join(work, "serve.err")
            if os.path.exists(err):
                with open(err) as f:
                    tail = f.readlines()[-25:]
                if tail:
                    print("---- serve.err (last lines)\n" + "".join(tail), flush=True)
        finally:
            for folder in discard:
                shutil.rmtree(os.path.join(work, folder), ignore_errors=True)
    sys.exit(failed)


def check_wanted(runs, wanted, what):
    """Exits 2 naming any name in `wanted` that is not one of `runs` (name, function) pairs."""
    known = [name for name, _ in runs]
    unknown = [w for w in wanted if w not in known]
    if unknown:
        print("unknown %s %s; known: %s" % (what, ", ".join(unknown), ", ".join(known)), file=sys.stderr)
        sys.exit(2)


def run_steps(label, steps, wanted, make_fleet, prefix, width=12):
    """Runs `steps` (name, function(fleet) -> summary), those named in `wanted` or all, in
    order on one fleet: `make_fleet(work)` in a fresh temporary folder, whose `start()`
    returns a line to print, `stop()` fails naming what did not stop cleanly, and `tails()`
    prints the last lines of its logs. One PASS or FAIL line a step; the first failure
    ends the run and keeps the folder. Exits with the number of failures."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = tempfile.mkdtemp(prefix=prefix)
    started = time.time()
    failed, fleet, ran = 0, None, 0
    try:
        try:
            fleet = make_fleet(work)
            print("fleet: %s (%.1f s to start)" % (fleet.start(), time.time() - started), flush=True)
            for name, step in steps:
                if wanted and name not in wanted:
                    continue
                ran += 1
                step_started = time.time()
                try:
                    said = step(fleet)
                    print("PASS %-*s %5.1f s  %s" % (width, name, time.time() - step_started, said), flush=True)
                except Exception as e:
                    failed += 1
                    print("FAIL %-*s %5.1f s  %s" % (width, name, time.time() - step_started, e), flush=True)
                    break
        except Exception as e:
            failed += 1
            print("FAIL %-*s %5.1f s  %s" % (width, "fleet", time.time() - started, e), flush=True)
        finally:
            if fleet:
                try:
                    fleet.stop()
                except Exception as e:
                    failed += 1
                    print("FAIL %-*s stopping the fleet: %s" % (width, "stop", e), flush=True)
    finally:
        if failed:
            if fleet:
                fleet.tails()
            print("%s: FAILED after %.1f s; files kept in %s" % (label, time.time() - started, work), flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
            print("%s: %d steps passed in %.1f s" % (label, ran, time.time() - started), flush=True)
    sys.exit(failed)


def stop_each(stops):
    """Runs every (what, action) of `stops` whatever the others do (an action of None is
    left out), then fails naming each one that raised: a fleet is stopped in full even
    when one of its processes does not stop cleanly."""
    failures = []
    for what, action in stops:
        if action is None:
            continue
        try:
            action()
        except Exception as e:
            failures.append("%s: %s" % (what, e))
    if failures:
        raise RuntimeError("; ".join(failures))


def stop_process(proc, timeout=20, sig=signal.SIGTERM):
    """Sends `sig` to a child still running, waits up to `timeout` s, then kills it;
    returns its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def free_port():
    """A TCP port on 127.0.0.1 free a moment ago (bind port 0, read it, close)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def request(port, method, path, body=None, headers=None, timeout=30, source=None):
    """One request to 127.0.0.1:port on a new connection (from `source` when given):
    (status, headers with lower-case names, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0) if source else None)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        c.close()
