"""Shared by the e2e drivers (hot_swap.py, attacks.py): the scenario runner (each scenario
runs in a fresh temporary folder and prints one PASS or FAIL line; the exit status is the
number of failed scenarios), a free port, a request, stopping a child process."""
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
    known = [name for name, _ in scenarios]
    unknown = [w for w in wanted if w not in known]
    if unknown:
        print("unknown scenario %s; known: %s" % (", ".join(unknown), ", ".join(known)), file=sys.stderr)
        sys.exit(2)
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
