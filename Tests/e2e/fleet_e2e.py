#!/usr/bin/env python3
"""A fleet of hosts on etcd end to end: a real three-member etcd (Tests/e2e/etcd.sh), four
`plugboard serve --fleet` hosts, HAProxy in front of them (docs/examples/haproxy-fleet.cfg
as it is) and a load through HAProxy the whole time. At the start `fleet set` gives the
fleet its first manifest (FileStorage over one folder all hosts share) and every host
converges on it; then:

  rollout      a new FileStorage configuration in three waves (1, 50%, 100%): exit 0,
               every host on the candidate's digest in `fleet status --json`, each one
               reloaded (its generation went up), 0 failed requests
  crash        MisbehavingPlugin, which crashes in its preflight: refused by fleet rollout's
               own preflight (fleet.preflight_refused, no rollout); with --no-preflight it
               stops at the first wave
               (host1), exit 1 with a reason naming host1 and the preflight's failure;
               host2..host4 never touched (same generation), every host on stable
  error-rate   MemoryStorage failing a fifth of its operations, --max-error-rate 0.05 and
               a bake: rolled back by the error-rate gate, exit 1 naming the rate and
               host1; the load's failures are only 5xx answers from host1 while it ran
               the candidate (counted and printed)
  leader-kill  the etcd leader killed with SIGKILL once the rollout's first wave applies:
               the rollout finishes, exit 0 (the member is started again afterwards)
  etcd-down    every etcd member stopped: the load keeps succeeding; host4 restarted
               meanwhile starts from its local copy and logs so; etcd started again: every
               host reports again, host4 with startedFrom "local copy", all on stable
  signatures   a key from `plugboard keygen`, FileStorage signed by `plugboard sign`, the
               manifest's trust with requireSignatures: the signed build rolls out (exit 0);
               the same plugin unsigned, and a copy changed after it was signed, are each
               `fleet set --no-preflight` and refused by every host before dlopen
               (loader.signature_missing, loader.signature_invalid in each host's status)
               while every host keeps serving stable
  remote       FileStorage put in moto by `plugboard publish` and rolled out as a `source`
               with its sha256 (exit 0, in every host's cache); the same source pinned to
               another file's digest (--no-preflight): exit 1, host1 refused it, loader.checksum_mismatch
               naming the source

Usage: fleet_e2e.py BUILD_FOLDER [STEP ...]   (BUILD_FOLDER: .build/release or .build/debug)

The steps share one fleet and run in the order above, each runnable alone after the
start; each prints one PASS or FAIL line, and the run stops at the first failure, keeping
its folder and printing the last lines of every log. A failed request is a connection
error or a 5xx the step does not expect; every step checks the load's failures over its
own span. The exit status is the number of failed steps. Needs etcd, curl and haproxy,
and moto_server in the package's .venv for the remote step (Tests/e2e/fleet.sh checks).
"""
import calendar
import hashlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from e2e_runner import check_wanted, free_port, request, run_steps, stop_each, stop_process
from haproxy import HAProxy
from s3_tools import BUILD, PLUGBOARD, REPO, Failure, check, sha256_file

ETCD_SH = os.path.join(REPO, "Tests", "e2e", "etcd.sh")
HAPROXY_CONFIG = os.path.join(REPO, "docs", "examples", "haproxy-fleet.cfg")
HOSTS = 4
# The plugins' store for remote sources: moto accepts any key pair.
STORE_BUCKET = "plugins"
STORE_KEYS = {"AWS_ACCESS_KEY_ID": "moto-key", "AWS_SECRET_ACCESS_KEY": "moto-secret"}
PREFIX = "e2e"
# Bounds that say "this hung", with room for a loaded 2-core machine and a debug build.
CONVERGE_SECONDS = 120
ROLLOUT_SECONDS = 240


def lib(name):
    return os.path.join(BUILD, "lib%s.so" % name)


def manifest(plugin):
    """A fleet manifest with one storage plugin, named Store. The hot-swap settings are the
    manifest's own (hot swap itself is on in fleet mode); preflight has room for a debug build."""
    return json.dumps({"schemaVersion": 1, "environment": "testing",
                       "hotSwap": {"preflightTimeoutSeconds": 60, "drainTimeoutSeconds": 10},
                       "plugins": [dict({"name": "Store", "environments": ["testing"], "required": True}, **plugin)]},
                      indent=1) + "\n"


def file_storage(root, variant):
    """FileStorage over `root`; `variant` changes its configuration (fsync) and the
    manifest's bytes, so each variant is a new digest every host really reloads."""
    text = manifest({"product": "FileStorage", "config": {"root": root, "fsync": variant % 2 == 0}})
    return text.replace('"hotSwap": {', '"hotSwap": {"debounceMilliseconds": %d, ' % variant, 1)


def sha256_text(text):
    return hashlib.sha256(text.encode()).hexdigest()


def log_times(text, message):
    """The times (seconds since the epoch) of the log lines with `message`: each line starts
    with its UTC time, RFC 3339 with milliseconds."""
    times = []
    for line in text.splitlines():
        if message in line:
            stamp = line.split(" ", 1)[0].rstrip("Z")
            whole, _, fraction = stamp.partition(".")
            times.append(calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float("0." + (fraction or "0")))
    return times


def tail(path, lines=15):
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


class Etcd:
    """Tests/e2e/etcd.sh's three members, with what it takes to stop one and start it
    again as it was (its command line from /proc, its data folder kept)."""

    def __init__(self, folder):
        self.folder = folder
        out = subprocess.run([ETCD_SH, "start", folder], capture_output=True, text=True, timeout=180)
        check(out.returncode == 0, "etcd.sh start exited %d: %s" % (out.returncode, (out.stdout + out.stderr)[-1500:]))
        env = dict(line.split("=", 1) for line in open(os.path.join(folder, "env")).read().split())
        self.endpoints = env["PLUGBOARD_ETCD_ENDPOINTS"]
        self.members = []   # [name, pid, client port, argv]
        with open(os.path.join(folder, "pids")) as f:
            for i, line in enumerate(f.read().split("\n")):
                if not line.strip():
                    continue
                name, pid = line.split()
                with open("/proc/%s/cmdline" % pid, "rb") as c:
                    argv = [a.decode() for a in c.read().split(b"\0") if a]
                self.members.append([name, int(pid), int(env["ETCD_MEMBER_%d_CLIENT_PORT" % i]), argv])
        self.restarted = []   # processes this driver started again

    def status(self, port):
        """The member's view: (its id, the leader's id)."""
        req = urllib.request.Request("http://127.0.0.1:%d/v3/maintenance/status" % port, data=b"{}", method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            answer = json.loads(r.read())
        return answer["header"]["member_id"], answer.get("leader")

    def leader(self):
        for member in self.members:
            try:
                me, leader = self.status(member[2])
            except OSError:
                continue
            if me == leader:
                return member
        raise Failure("no etcd member says it is the leader")

    def kill(self, member, sig):
        os.kill(member[1], sig)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                pid, _ = os.waitpid(member[1], os.WNOHANG)   # our own child once restarted
            except ChildProcessError:
                pid = 0
            if not os.path.exists("/proc/%d" % member[1]) or open("/proc/%d/stat" % member[1]).read().split(") ")[1][0] == "Z":
                return
            time.sleep(0.05)
        raise Failure("etcd member %s (pid %d) still running 60 s after signal %d" % (member[0], member[1], sig))

    def start_again(self, member):
        """The member with its own command line and data: same ports, same cluster."""
        log = open(os.path.join(self.folder, "%s.log" % member[0]), "a")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        proc = subprocess.Popen(member[3], stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        self.restarted.append(proc)
        member[1] = proc.pid
        with open(os.path.join(self.folder, "pids"), "a") as f:
            f.write("%s %d\n" % (member[0], proc.pid))

    def wait_healthy(self, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            healthy = 0
            for member in self.members:
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/health" % member[2], timeout=2) as r:
                        healthy += json.loads(r.read()).get("health") == "true"
                except (OSError, ValueError):
                    pass
            if healthy == len(self.members):
                return
            time.sleep(0.1)
        raise Failure("etcd: not every member healthy within %d s" % timeout)

    def stop(self):
        for proc in self.restarted:
            stop_process(proc, 30)
        out = subprocess.run([ETCD_SH, "stop", self.folder], capture_output=True, text=True, timeout=120)
        check(out.returncode == 0, "etcd.sh stop exited %d: %s" % (out.returncode, out.stderr[-500:]))


class Host:
    """One `plugboard serve --fleet` on a port of its own; a restart keeps the port, the id
    and the cache (the local copy), and logs to a new file."""

    def __init__(self, work, number, fleet_url, env=None):
        self.id = "host%d" % number
        self.env = env or {}
        self.folder = os.path.join(work, self.id)
        os.makedirs(self.folder, exist_ok=True)
        self.port = free_port()
        self.fleet_url = fleet_url
        self.starts = 0
        self.proc = None
        self.start()

    def start(self):
        self.starts += 1
        self.err_path = os.path.join(self.folder, "serve.err" if self.starts == 1 else "serve-%d.err" % self.starts)
        env = dict(os.environ, SWIFT_BACKTRACE="enable=no", **self.env)
        self.proc = subprocess.Popen(
            [PLUGBOARD, "serve", "--fleet", self.fleet_url, "--host-id", self.id, "--listen", "127.0.0.1:%d" % self.port,
             "--cache-dir", os.path.join(self.folder, "cache"), "--env", "testing", "--log-level", "info"],
            cwd=self.folder, env=env, stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(self.folder, "serve.out"), "a"), stderr=open(self.err_path, "w"))

    def wait_listening(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            check(self.proc.poll() is None, "%s exited with %s: %s" % (self.id, self.proc.returncode, tail(self.err_path)))
            try:
                status, _, _ = request(self.port, "GET", "/healthz", timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Failure("%s: /healthz did not answer 200 within %d s" % (self.id, timeout))

    def log(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def stop(self):
        return stop_process(self.proc, 30)


class Load:
    """Requests through HAProxy from a few threads, each on its own keep-alive connection,
    paced so that the hosts' preflight children keep most of the machine: a PUT of the
    thread's own key, then a GET of it. Every answer is kept as (time, method, status,
    host); a connection error as status -1."""

    def __init__(self, port, threads=4, pause=0.02):
        self.port, self.pause = port, pause
        self.results = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(threads)]
        for t in self.threads:
            t.start()

    def run(self, n):
        conn = None
        body = ("load %d\n" % n).encode() * 64
        count = 0
        while not self.stopping.is_set():
            count += 1
            for method, data in (("PUT", body), ("GET", None)):
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                    conn.request(method, "/v1/objects/load/%d" % n, body=data,
                                 headers={"Content-Type": "application/octet-stream"} if data else {})
                    r = conn.getresponse()
                    r.read()
                    entry = (time.time(), method, r.status, r.getheader("X-Plugboard-Host", "?"))
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                except (OSError, http.client.HTTPException) as e:
                    entry = (time.time(), method, -1, type(e).__name__)
                    if conn is not None:
                        conn.close()
                    conn = None
                with self.lock:
                    self.results.append(entry)
            self.stopping.wait(self.pause)
        if conn is not None:
            conn.close()

    def mark(self):
        with self.lock:
            return len(self.results)

    def since(self, mark):
        with self.lock:
            return self.results[mark:]

    def wait_answers(self, count, timeout=60):
        """Waits until `count` more answers came (the load is really running)."""
        start = self.mark()
        deadline = time.time() + timeout
        while self.mark() - start < count:
            check(time.time() < deadline, "the load got fewer than %d answers in %d s" % (count, timeout))
            time.sleep(0.05)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)


def failed(entry):
    return entry[2] < 0 or entry[2] >= 500


def summary(entries):
    bad = [e for e in entries if failed(e)]
    return "%d requests, %d failed" % (len(entries), len(bad))


class Fleet:
    """etcd, the hosts, HAProxy and the load; `stop` stops whatever `start` got to start."""

    def __init__(self, work, hosts=HOSTS, first=None, balanced=True, store=False):
        """`hosts` hosts; `first(fleet)` is the manifest `fleet set` gives them (FileStorage
        over the shared folder by default); without `balanced`, no HAProxy and no load;
        with `store`, moto_server as the plugins' S3 store, in the hosts' environment."""
        self.work = work
        self.count, self.first, self.balanced, self.with_store = hosts, first, balanced, store
        self.etcd, self.hosts, self.haproxy, self.load, self.moto = None, [], None, None, None
        self.store_env = {}
        self.variant = 0

    def cli(self, *args, timeout=ROLLOUT_SECONDS, name=None):
        """`plugboard fleet ARGS --fleet URL`: (exit status, standard output, standard error),
        both kept in the folder as NAME.out/.err."""
        argv = [PLUGBOARD, "fleet"] + list(args) + ["--fleet", self.url]
        if args[0] in ("set", "rollout") and "--abort" not in args:
            # Their preflight stages plugins here (not in the runner's ~/.cache), and
            # fetches remote sources from the store as the hosts do.
            argv += ["--cache-dir", os.path.join(self.work, "cli-cache")]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=self.work,
                              env=dict(os.environ, **self.store_env))
        if name:
            for suffix, text in (("out", proc.stdout), ("err", proc.stderr)):
                with open(os.path.join(self.work, "%s.%s" % (name, suffix)), "w") as f:
                    f.write(text)
        return proc.returncode, proc.stdout, proc.stderr

    def cli_async(self, *args, name):
        argv = [PLUGBOARD, "fleet"] + list(args) + ["--fleet", self.url]
        return subprocess.Popen(argv, cwd=self.work, text=True, stdout=open(os.path.join(self.work, name + ".out"), "w"),
                                stderr=open(os.path.join(self.work, name + ".err"), "w"))

    def write(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def status(self):
        code, out, err = self.cli("status", "--json", timeout=60)
        check(code == 0, "fleet status --json exited %d: %s" % (code, err[-800:]))
        return json.loads(out)

    def hosts_by_id(self, status=None):
        return {h["id"]: h for h in (status or self.status())["hosts"]}

    def wait_converged(self, digest, what, timeout=CONVERGE_SECONDS, ids=None):
        """Waits until every host (or those of `ids`) reports `digest`, ready; the status."""
        ids = ids or [h.id for h in self.hosts]
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                last = self.status()
                hosts = self.hosts_by_id(last)
                if all(i in hosts and hosts[i]["manifestDigest"] == digest and hosts[i]["ready"] for i in ids):
                    return last
            except Failure:
                pass
            time.sleep(0.2)
        raise Failure("%s: not every host on %s and ready within %d s; fleet status: %s" % (
            what, digest[:12], timeout, json.dumps(last and [(h["id"], h["manifestDigest"][:12], h["ready"]) for h in last["hosts"]])))

    def next_file_storage(self):
        self.variant += 1
        return file_storage(self.root, self.variant)

    def start(self):
        work = self.work
        self.etcd = Etcd(os.path.join(work, "etcd"))
        self.url = "etcd://%s/%s" % (self.etcd.endpoints, PREFIX)
        self.root = os.path.join(work, "objects")   # every host's FileStorage root: one store
        os.mkdir(self.root)
        if self.with_store:
            from hot_swap import start_moto
            self.moto, endpoint = start_moto(work)
            self.store_env = dict(STORE_KEYS, AWS_ENDPOINT_URL_S3=endpoint, AWS_REGION="us-east-1")
            status, _, _ = request(int(endpoint.rsplit(":", 1)[1]), "PUT", "/" + STORE_BUCKET)
            check(status == 200, "moto: creating bucket %s answered %d" % (STORE_BUCKET, status))
        self.hosts = [Host(work, i, self.url, self.store_env) for i in range(1, self.count + 1)]
        for host in self.hosts:
            host.wait_listening()
        # The first manifest, set once the hosts run (with nothing: not ready).
        text = self.first(self) if self.first else self.next_file_storage()
        code, out, err = self.cli("set", self.write("first.json", text), timeout=60, name="set")
        check(code == 0, "fleet set exited %d: %s" % (code, err[-800:]))
        self.stable = sha256_text(text)
        self.wait_converged(self.stable, "fleet set")
        if not self.balanced:
            return "etcd %s, %d hosts; fleet set: every host on %s" % (self.etcd.endpoints, self.count, self.stable[:12])

        def environment(port):
            env = {"FLEET_BIND": "127.0.0.1:%d" % port}
            for i, host in enumerate(self.hosts, 1):
                env["FLEET_HOST%d" % i] = "127.0.0.1:%d" % host.port
            return env
        self.haproxy = HAProxy(work, HAPROXY_CONFIG, "plugboard_fleet", environment, "FLEET_STATS_SOCKET")
        self.load = Load(self.haproxy.port)
        self.load.wait_answers(20)
        return "etcd %s, hosts on ports %s, HAProxy on %d; fleet set: every host on %s" % (
            self.etcd.endpoints, ", ".join(str(h.port) for h in self.hosts), self.haproxy.port, self.stable[:12])

    def generations(self):
        return {i: h["generation"] for i, h in self.hosts_by_id().items()}

    def stop(self):
        """Stops everything, then fails naming what did not stop cleanly (a host that did
        not exit 0 on SIGTERM)."""
        stop_each([("load", self.load and self.load.stop), ("haproxy", self.haproxy and self.haproxy.stop)]
                  + [(host.id, lambda h=host: check(h.stop() == 0, "exit %s on SIGTERM" % h.proc.returncode)) for host in self.hosts]
                  + [("etcd", self.etcd and self.etcd.stop), ("moto", self.moto and (lambda: stop_process(self.moto, 10)))])

    def tails(self):
        names = []
        for host in self.hosts:
            names += [os.path.relpath(os.path.join(host.folder, n), self.work) for n in sorted(os.listdir(host.folder)) if n.startswith("serve")]
        names += ["etcd/m%d.log" % i for i in range(3)] + ["haproxy.log", "haproxy.err"]
        names += sorted(n for n in os.listdir(self.work) if n.endswith((".out", ".err")) and not n.startswith("haproxy"))
        for name in names:
            text = tail(os.path.join(self.work, name))
            if text:
                print("---- %s (last lines)\n%s" % (name, text), flush=True)


def no_failures(fleet, mark, what):
    entries = fleet.load.since(mark)
    bad = [e for e in entries if failed(e)]
    check(entries, "%s: the load got no answer" % what)
    check(not bad, "%s: %d of %d requests through HAProxy failed: %s" % (what, len(bad), len(entries), bad[:5]))
    return entries


# ---------------------------------------------------------------------------- steps

def step_rollout(fleet):
    mark = fleet.load.mark()
    before = fleet.generations()
    text = fleet.next_file_storage()
    candidate = sha256_text(text)
    started = time.time()
    code, out, err = fleet.cli("rollout", fleet.write("rollout-%d.json" % fleet.variant, text), "--waves", "1,50%,100%",
                               "--bake", "2", "--json", name="rollout")
    took = time.time() - started
    check(code == 0, "fleet rollout exited %d, expected 0: %s" % (code, (out + err)[-1500:]))
    record = json.loads(out)["rollout"]
    waves = [w["hosts"] for w in record["waves"]]
    check(waves == [["host1"], ["host2"], ["host3", "host4"]] and record["state"] == "succeeded",
          "the rollout's record: expected waves [host1], [host2], [host3, host4] and succeeded, found %s, %s" % (waves, record["state"]))
    status = fleet.status()
    hosts = fleet.hosts_by_id(status)
    check(status["stable"]["digest"] == candidate, "fleet status: stable is %s, expected the candidate %s" % (status["stable"]["digest"], candidate))
    wrong = [(i, h["manifestDigest"][:12]) for i, h in hosts.items() if h["manifestDigest"] != candidate or h["lagging"]]
    check(not wrong and len(hosts) == HOSTS, "fleet status --json: expected %d hosts on %s, found %s" % (HOSTS, candidate[:12], wrong or list(hosts)))
    stale = [i for i, h in hosts.items() if h["generation"] <= before[i]]
    check(not stale, "hosts that did not reload (generation unchanged): %s" % stale)
    fleet.stable = candidate
    entries = no_failures(fleet, mark, "rollout")
    return "3 waves (host1; host2; host3, host4) in %.1f s, exit 0; every host on %s with a new generation (%s); load: %s" % (
        took, candidate[:12], ", ".join("%s %d->%d" % (i, before[i], hosts[i]["generation"]) for i in sorted(hosts)), summary(entries))


def step_crash(fleet):
    mark = fleet.load.mark()
    before = fleet.hosts_by_id()
    text = manifest({"path": lib("MisbehavingPlugin"), "config": {"fault": "segfault", "faultIn": "register"}})
    candidate = sha256_text(text)
    # Its own preflight refuses it first, starting nothing; past it, the hosts' do.
    code, out, err = fleet.cli("rollout", fleet.write("crash.json", text), "--json", name="crash-preflight")
    check(code == 1 and json.loads(out)["error"]["code"] == "fleet.preflight_refused",
          "fleet rollout of a plugin that crashes in its preflight, without --no-preflight: expected exit 1 and fleet.preflight_refused, found %d: %s" % (code, (out + err)[-800:]))
    check(fleet.status()["rollout"] is None or fleet.status()["rollout"]["candidate"] != candidate,
          "fleet rollout refused by its preflight started a rollout anyway")
    code, out, err = fleet.cli("rollout", fleet.write("crash.json", text), "--waves", "1,50%,100%", "--bake", "2",
                               "--json", "--no-preflight", name="crash")
    check(code == 1, "fleet rollout of a plugin that crashes in its preflight exited %d, expected 1: %s" % (code, (out + err)[-1500:]))
    record = json.loads(out)["rollout"]
    reason = record.get("reason") or ""
    check(record["state"] == "rolled back" and "host1" in reason and "preflight" in reason,
          "the record: expected rolled back with a reason naming host1 and the preflight, found %s: %s" % (record["state"], reason))
    states = [w["state"] for w in record["waves"]]
    check(states[1:] == ["pending"] * (len(states) - 1), "later waves: expected pending (never started), found %s" % states)
    hosts = fleet.hosts_by_id()
    check(hosts["host1"]["lastReload"]["outcome"] == "refused" and hosts["host1"]["lastReload"]["digest"] == candidate,
          "host1's last reload: expected refused for %s, found %s" % (candidate[:12], hosts["host1"]["lastReload"]))
    touched = [i for i in ("host2", "host3", "host4") if hosts[i]["generation"] != before[i]["generation"]
               or hosts[i]["lastReload"] != before[i]["lastReload"]]
    check(not touched, "hosts of later waves were touched: %s" % touched)
    off = [i for i, h in hosts.items() if h["manifestDigest"] != fleet.stable]
    check(not off, "hosts not on stable %s: %s" % (fleet.stable[:12], off))
    entries = no_failures(fleet, mark, "crash")
    return "exit 1, %s; host2..host4 untouched, every host on stable; load: %s" % (reason[:160], summary(entries))


def step_error_rate(fleet):
    mark = fleet.load.mark()
    text = manifest({"product": "MemoryStorage", "config": {"failureRate": 0.2, "seed": 23}})
    candidate = sha256_text(text)
    code, out, err = fleet.cli("rollout", fleet.write("error-rate.json", text), "--waves", "1,100%", "--bake", "20",
                               "--max-error-rate", "0.05", "--json", name="error-rate")
    check(code == 1, "fleet rollout of a plugin failing a fifth of its requests exited %d, expected 1: %s" % (code, (out + err)[-1500:]))
    record = json.loads(out)["rollout"]
    reason = record.get("reason") or ""
    check(record["state"] == "rolled back" and "host1" in reason and "error rate" in reason and "0.05" in reason,
          "the record: expected rolled back by the error-rate gate naming host1 and 0.05, found %s: %s" % (record["state"], reason))
    fleet.wait_converged(fleet.stable, "after the error-rate rollback", timeout=60)
    # host1's window on the candidate, from its own log: from the reload that applied it
    # to the one that applied stable again. A second either side: the log line follows
    # the commit, and requests begun before the rollback's commit finish after it.
    applied = log_times(fleet.hosts[0].log(), "fleet: applied manifest %s" % candidate)
    back = [t for t in log_times(fleet.hosts[0].log(), "fleet: applied manifest %s" % fleet.stable) if applied and t > applied[0]]
    check(applied and back, "host1's log: expected \"fleet: applied manifest\" lines for the candidate %s, then stable %s" % (
        candidate[:12], fleet.stable[:12]))
    entries = fleet.load.since(mark)
    bad = [e for e in entries if failed(e)]
    others = [e for e in bad if e[3] != "host1" or e[2] != 503 or not applied[0] - 1 <= e[0] <= back[0] + 1]
    check(not others, "failed requests other than host1's 503 answers while it ran the candidate: %s" % others[:5])
    host1 = [e for e in entries if e[3] == "host1"]
    return "exit 1, %s; the load's only failures: %d answers 503 from host1 during its %.1f s on the candidate (of %d answers from host1 in the step, %d in all)" % (
        reason[:200], len(bad), back[0] - applied[0], len(host1), len(entries))


def step_leader_kill(fleet):
    mark = fleet.load.mark()
    text = fleet.next_file_storage()
    candidate = sha256_text(text)
    proc = fleet.cli_async("rollout", fleet.write("leader-kill-%d.json" % fleet.variant, text), "--waves", "1,50%,100%",
                           "--bake", "2", name="leader-kill")
    try:
        # Once the first wave applied (host1 on the candidate), mid-rollout.
        fleet.wait_converged(candidate, "the first wave", ids=["host1"])
        leader = fleet.etcd.leader()
        fleet.etcd.kill(leader, signal.SIGKILL)
        killed_at = time.time()
        code = proc.wait(ROLLOUT_SECONDS)
    finally:
        stop_process(proc, 10)
    with open(os.path.join(fleet.work, "leader-kill.out")) as f, open(os.path.join(fleet.work, "leader-kill.err")) as g:
        output = f.read() + g.read()
    check(code == 0, "fleet rollout with the etcd leader killed exited %d, expected 0: %s" % (code, output[-1500:]))
    took = time.time() - killed_at
    fleet.etcd.start_again(leader)
    fleet.etcd.wait_healthy()
    fleet.wait_converged(candidate, "after the leader kill")
    fleet.stable = candidate
    entries = no_failures(fleet, mark, "leader-kill")
    return "etcd leader %s killed once host1 applied; the rollout finished %.1f s later, exit 0; %s started again; load: %s" % (
        leader[0], took, leader[0], summary(entries))


def step_etcd_down(fleet):
    mark = fleet.load.mark()
    for member in fleet.etcd.members:
        fleet.etcd.kill(member, signal.SIGTERM)
    # The hosts serve on: a few hundred answers with etcd gone.
    fleet.load.wait_answers(200)
    restarted = fleet.hosts[3]
    fleet.haproxy.command("disable server plugboard_fleet/%s" % restarted.id)   # drained, as an operator would
    check(restarted.stop() == 0, "%s exited %s on SIGTERM with etcd down" % (restarted.id, restarted.proc.returncode))
    restarted.start()
    restarted.wait_listening()
    deadline = time.time() + 60
    line = "fleet: starting from the local copy of manifest %s" % fleet.stable
    while line not in restarted.log():
        check(time.time() < deadline, "%s started again with etcd down: no \"%s\" in its log: %s" % (restarted.id, line, tail(restarted.err_path)))
        time.sleep(0.1)
    status, _, _ = request(restarted.port, "GET", "/readyz", timeout=10)
    check(status == 200, "%s started from its local copy: /readyz answered %d" % (restarted.id, status))
    fleet.haproxy.command("enable server plugboard_fleet/%s" % restarted.id)
    fleet.haproxy.wait(lambda: fleet.haproxy.servers()[restarted.id]["status"] == "UP", "%s UP again" % restarted.id, 30)
    fleet.load.wait_answers(100)
    down = fleet.load.since(mark)
    served = [e for e in down if e[3] == restarted.id and e[2] < 300]
    for member in fleet.etcd.members:
        fleet.etcd.start_again(member)
    fleet.etcd.wait_healthy()
    status = fleet.wait_converged(fleet.stable, "etcd started again", timeout=60)
    # The record the first process of host4 wrote can outlive it for a lease's TTL (it
    # could not revoke its lease with etcd down, and etcd's restart renews leases): until
    # the new process, retrying with its backoff, writes over it.
    deadline = time.time() + 60
    while True:
        mine = fleet.hosts_by_id(status)[restarted.id]
        if mine["startedFrom"] == "local copy":
            break
        check(time.time() < deadline, "%s's status 60 s after etcd is back: startedFrom %r, expected \"local copy\"" % (restarted.id, mine["startedFrom"]))
        time.sleep(0.2)
        status = fleet.status()
    entries = no_failures(fleet, mark, "etcd-down")
    return "every member stopped: %d requests answered meanwhile, %d of them by %s restarted from its local copy; etcd back: %d hosts on stable, %s startedFrom \"local copy\"; load: %s" % (
        len(down), len(served), restarted.id, len(status["hosts"]), restarted.id, summary(entries))


def refused_everywhere(fleet, text, name, code):
    """`fleet set` of a manifest every host must refuse: each one's last reload is refused
    with `code` and it still runs stable; then stable is set again. The hosts' refusals."""
    digest = sha256_text(text)
    exit_code, out, err = fleet.cli("set", fleet.write(name + ".json", text), "--no-preflight", timeout=60, name=name)
    check(exit_code == 0, "fleet set %s exited %d: %s" % (name, exit_code, err[-800:]))
    deadline = time.time() + CONVERGE_SECONDS
    while True:
        hosts = fleet.hosts_by_id()
        tried = {i: h["lastReload"] for i, h in hosts.items() if h["lastReload"] and h["lastReload"]["digest"] == digest}
        if len(tried) == HOSTS:
            break
        check(time.time() < deadline, "%s: not every host tried %s within %d s: %s" % (name, digest[:12], CONVERGE_SECONDS, sorted(tried)))
        time.sleep(0.2)
    wrong = {i: r for i, r in tried.items() if r["outcome"] != "refused" or (r.get("error") or {}).get("code") != code}
    check(not wrong, "%s: expected every host to refuse it with %s, found %s" % (name, code, wrong))
    off = [i for i, h in hosts.items() if h["manifestDigest"] != fleet.stable or not h["ready"]]
    check(not off, "%s: hosts no longer serving stable %s: %s" % (name, fleet.stable[:12], off))
    exit_code, _, err = fleet.cli("set", os.path.join(fleet.work, "stable.json"), timeout=60, name=name + "-back")
    check(exit_code == 0, "fleet set of stable again exited %d: %s" % (exit_code, err[-800:]))
    return tried["host1"]["error"]["message"]


def step_signatures(fleet):
    mark = fleet.load.mark()
    keys = os.path.join(fleet.work, "keys")
    os.mkdir(keys, 0o700)
    key = os.path.join(keys, "release.key")
    proc = subprocess.run([PLUGBOARD, "keygen", "--out", key, "--json"], capture_output=True, text=True, timeout=60)
    check(proc.returncode == 0, "plugboard keygen exited %d: %s" % (proc.returncode, proc.stderr[-500:]))
    trust = {"requireSignatures": True, "keys": [json.loads(proc.stdout)["trustKey"]]}

    def signed(path):
        proc = subprocess.run([PLUGBOARD, "sign", path, "--key", key, "--name", "Store", "--json"], capture_output=True, text=True, timeout=60)
        check(proc.returncode == 0, "plugboard sign %s exited %d: %s" % (path, proc.returncode, proc.stderr[-500:]))
        return json.loads(proc.stdout)["signature"]

    def with_trust(plugin, variant):
        text = file_storage(fleet.root, variant)
        data = json.loads(text)
        data["trust"] = trust
        data["plugins"][0].pop("product")
        data["plugins"][0].update(plugin)
        return json.dumps(data, indent=1) + "\n"
    # A copy of FileStorage signed as it is; the same copy with bytes appended after its
    # signature was made (its ELF still loads: a tampered file, not a broken one).
    folder = os.path.join(fleet.work, "plugins")
    os.mkdir(folder)
    good, bad = os.path.join(folder, "libFileStorage.so"), os.path.join(folder, "tampered", "libFileStorage.so")
    os.mkdir(os.path.dirname(bad))
    shutil.copyfile(lib("FileStorage"), good)
    shutil.copyfile(lib("FileStorage"), bad)
    os.chmod(good, 0o755)
    signature = signed(bad)
    with open(bad, "ab") as f:
        f.write(b"\0tampered after signing\0")
    os.chmod(bad, 0o755)
    fleet.variant += 1
    text = with_trust({"path": good, "signature": signed(good)}, fleet.variant)
    code, out, err = fleet.cli("rollout", fleet.write("signed.json", text), "--waves", "1,100%", "--bake", "1", "--json", name="signed")
    check(code == 0, "fleet rollout of the signed plugin under requireSignatures exited %d: %s" % (code, (out + err)[-1500:]))
    fleet.stable = sha256_text(text)
    fleet.write("stable.json", text)
    unsigned = refused_everywhere(fleet, with_trust({"path": good}, fleet.variant + 100), "unsigned", "loader.signature_missing")
    tampered = refused_everywhere(fleet, with_trust({"path": bad, "signature": signature}, fleet.variant + 200), "tampered", "loader.signature_invalid")
    entries = no_failures(fleet, mark, "signatures")
    return "signed FileStorage under requireSignatures rolled out (exit 0); unsigned refused on all 4 hosts (loader.signature_missing: %s); tampered refused on all 4 (loader.signature_invalid: %s); every host kept serving stable; load: %s" % (
        unsigned, tampered, summary(entries))


def step_remote(fleet):
    mark = fleet.load.mark()
    env = dict(os.environ, **fleet.store_env)
    proc = subprocess.run([PLUGBOARD, "publish", lib("FileStorage"), "s3://%s/builds/" % STORE_BUCKET, "--name", "Store", "--json"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=fleet.work)
    check(proc.returncode == 0, "plugboard publish exited %d: %s" % (proc.returncode, (proc.stdout + proc.stderr)[-800:]))
    entry = json.loads(proc.stdout)["entry"]

    def remote(sha256, variant):
        data = json.loads(file_storage(fleet.root, variant))
        data["plugins"][0].pop("product")
        data["plugins"][0].update({"source": entry["source"], "sha256": sha256})
        return json.dumps(data, indent=1) + "\n"
    fleet.variant += 1
    text = remote(entry["sha256"], fleet.variant)
    code, out, err = fleet.cli("rollout", fleet.write("remote.json", text), "--waves", "1,100%", "--bake", "1", "--json", name="remote")
    check(code == 0, "fleet rollout of FileStorage from %s exited %d: %s" % (entry["source"], code, (out + err)[-1500:]))
    fleet.stable = sha256_text(text)
    cached = [h.id for h in fleet.hosts if any(entry["sha256"] + ".so" in files for _, _, files in os.walk(os.path.join(h.folder, "cache")))]
    check(len(cached) == HOSTS, "the fetched plugin (%s.so) in the cache of %d hosts, expected all %d: %s" % (entry["sha256"][:12], len(cached), HOSTS, cached))
    # Another file: a build no host has seen, so that no cache holds it (a cache that holds
    # the pinned bytes loads them without asking the store, whatever the source says).
    another = os.path.join(fleet.work, "another-build.so")
    with open(lib("FileStorage"), "rb") as f, open(another, "wb") as g:
        g.write(f.read() + b"\0another build\0")
    other = sha256_file(another)
    wrong = remote(other, fleet.variant + 100)
    code, out, err = fleet.cli("rollout", fleet.write("remote-wrong.json", wrong), "--waves", "1,100%", "--bake", "1", "--json",
                               "--no-preflight", name="remote-wrong")
    check(code == 1, "fleet rollout of the same source pinned to another file's digest exited %d, expected 1: %s" % (code, (out + err)[-1500:]))
    reason = json.loads(out)["rollout"]["reason"] or ""
    check("host1" in reason and "loader.checksum_mismatch" in reason and entry["source"] in reason,
          "the rollback's reason: expected host1, loader.checksum_mismatch and the source %s, found %s" % (entry["source"], reason))
    fleet.wait_converged(fleet.stable, "after the refused digest", timeout=60)
    entries = no_failures(fleet, mark, "remote")
    return "published to moto as %s; rolled out by digest (exit 0, in the cache of %s); pinned to another build's digest: exit 1, %s; load: %s" % (
        entry["source"], ", ".join(cached), reason, summary(entries))


STEPS = [
    ("rollout", step_rollout),
    ("crash", step_crash),
    ("error-rate", step_error_rate),
    ("leader-kill", step_leader_kill),
    ("etcd-down", step_etcd_down),
    ("signatures", step_signatures),
    ("remote", step_remote),
]


def main():
    wanted = sys.argv[2:]
    check_wanted(STEPS, wanted, "step")
    run_steps("fleet_e2e", STEPS, wanted, lambda work: Fleet(work, store=not wanted or "remote" in wanted), "plugboard-fleet-")

if __name__ == "__main__":
    main()
