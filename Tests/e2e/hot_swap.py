#!/usr/bin/env python3
"""Hot swap end to end, against a real `plugboard serve` and the real plugin .so files.

Usage: hot_swap.py BUILD_FOLDER [SCENARIO ...]   (BUILD_FOLDER: .build/release or .build/debug)

Every scenario starts its own server on a free port with its own manifest, plugin cache
and data folder, checks what the issue asks for, and prints one PASS or FAIL line. The
exit status is the number of failed scenarios. Needs moto_server (the S3 scenario) from
the package's .venv, which .ci/run installs.
"""
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from e2e_runner import free_port, request, run_scenarios, stop_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".build", "release"))
PLUGBOARD = os.path.join(BUILD, "plugboard")
ADMIN = "adm1n-t0ken"
AUTH = {"Authorization": "Bearer " + ADMIN}


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def lib(name):
    return os.path.join(BUILD, "lib%s.so" % name)


def write_atomic(path, text):
    """As an editor saves: a new file renamed over the old one."""
    tmp = path + ".tmp-%d" % random.randrange(1 << 30)
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def manifest(plugins, **hot):
    settings = {"enabled": True, "debounceMilliseconds": 0, "preflightTimeoutSeconds": 5, "drainTimeoutSeconds": 5}
    settings.update(hot)
    return json.dumps({"schemaVersion": 1, "environment": "testing", "hotSwap": settings, "plugins": plugins}, indent=1)


def store(product=None, path=None, **extra):
    p = {"name": "Store", "environments": ["testing"]}
    if product:
        p["product"] = product
    if path:
        p["path"] = path
    p.update(extra)
    return p


class Server:
    def __init__(self, work, text, env=None, args=(), manifest_path=None):
        self.work = work
        self.manifest = manifest_path or os.path.join(work, "plugins.json")
        if text is not None:
            write_atomic(self.manifest, text)
        environment = dict(os.environ, PLUGBOARD_ADMIN_TOKEN=ADMIN, SWIFT_BACKTRACE="enable=no")
        environment.update(env or {})
        self.out = open(os.path.join(work, "serve.out"), "w+")
        self.err = open(os.path.join(work, "serve.err"), "w+")
        self.proc = subprocess.Popen(
            [PLUGBOARD, "serve", "--listen", "127.0.0.1:0", "--manifest", self.manifest,
             "--cache-dir", os.path.join(work, "cache"), "--log-level", "info"] + list(args),
            cwd=work, env=environment, stdout=self.out, stderr=self.err)
        deadline = time.time() + 30
        self.port = None
        while time.time() < deadline and self.port is None:
            self.out.seek(0)
            for line in self.out.read().splitlines():
                if "listening on http://" in line:
                    self.port = int(line.rsplit(":", 1)[1])
            if self.proc.poll() is not None:
                raise Failure("serve exited with %s: %s" % (self.proc.returncode, self.stderr()[-2000:]))
            time.sleep(0.05)
        check(self.port, "serve did not start listening")

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def request(self, method, path, body=None, headers=None, timeout=30):
        return request(self.port, method, path, body, headers, timeout)

    def admin(self, path):
        status, _, body = self.request("GET", path, headers=AUTH)
        check(status == 200, "GET %s answered %d" % (path, status))
        return json.loads(body)

    def generation(self):
        return self.admin("/v1/admin/plugins")["generation"]

    def reload(self):
        status, headers, body = self.request("POST", "/v1/admin/reload", headers=AUTH, timeout=120)
        return status, json.loads(body)

    def metric(self, name):
        _, _, body = self.request("GET", "/metrics")
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        raise Failure("metric %s missing" % name)

    def wait_generation(self, above, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            g = self.generation()
            if g > above:
                return g
            time.sleep(0.02)
        raise Failure("generation stayed at %d for %d s; events: %s" % (above, timeout, self.admin("/v1/admin/events")["events"][-3:]))

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        stop_process(self.proc, 20)
        return self.proc.returncode


class Load:
    """PUT then GET of fresh keys, on keep-alive connections and on new ones, checking that
    every answer is whole: a PUT is 200; a GET gives the bytes put, or 404 only from a newer
    generation than the PUT's (objects live in the backend the PUT reached)."""

    def __init__(self, server, workers=2):
        self.server = server
        self.stop_flag = threading.Event()
        self.errors = []
        self.count = 0
        self.generations = set()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i, i % 2 == 0), daemon=True) for i in range(workers * 2)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        for t in self.threads:
            t.join(30)

    def run(self, worker, keep_alive):
        rnd = random.Random(worker)
        conn = None
        n = 0
        while not self.stop_flag.is_set():
            n += 1
            key = "load/w%d/%d" % (worker, n)
            data = rnd.randbytes(rnd.randrange(1, 32768))
            try:
                if conn is None or not keep_alive:
                    if conn:
                        conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
                conn.request("PUT", "/v1/objects/" + key.replace("/", "%2F"), body=data,
                             headers={"Content-Type": "application/octet-stream"})
                r = conn.getresponse()
                body = r.read()
                put_gen = int(r.getheader("X-Plugboard-Generation", "-1"))
                if r.status != 200:
                    self.fail("PUT %s: %d %s" % (key, r.status, body[:300]))
                    continue
                if not keep_alive:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
                conn.request("GET", "/v1/objects/" + key.replace("/", "%2F"))
                r = conn.getresponse()
                body = r.read()
                get_gen = int(r.getheader("X-Plugboard-Generation", "-1"))
                with self.lock:
                    self.count += 2
                    self.generations.update([put_gen, get_gen])
                if r.status == 200:
                    if body != data:
                        self.fail("GET %s: %d bytes, not the %d put" % (key, len(body), len(data)))
                elif r.status == 404 and get_gen > put_gen:
                    pass
                else:
                    self.fail("GET %s: %d (put in generation %d, got in %d) %s" % (key, r.status, put_gen, get_gen, body[:300]))
            except Exception as e:  # a reset connection or a timeout is a failed request too
                self.fail("%s on %s: %r" % ("keep-alive" if keep_alive else "new connection", key, e))
                conn = None
        if conn:
            conn.close()

    def fail(self, text):
        with self.lock:
            self.errors.append(text)


def start_moto(work):
    moto = os.path.join(REPO, ".venv", "bin", "moto_server")
    check(os.access(moto, os.X_OK), "moto_server not found at %s (python3 -m venv .venv && .venv/bin/pip install -r Tests/e2e/requirements.txt)" % moto)
    port = free_port()
    proc = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "moto.err"), "w"))
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("PUT", "/hotswap")
            c.getresponse().read()
            return proc, "http://127.0.0.1:%d" % port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise Failure("moto_server did not start")


def variant(source, target, tag):
    """Another build of the same plugin: the same code with bytes appended after the ELF
    data (the loader reads the section table, not the file's end), so a new sha256."""
    with open(source, "rb") as f:
        data = f.read()
    tmp = target + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data + b"\0plugboard-build-" + tag.encode() + b"\0")
    os.chmod(tmp, 0o644)
    os.rename(tmp, target)


def patched_abi(source, target):
    """A copy whose plugin header claims plugin ABI 99."""
    with open(source, "rb") as f:
        data = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    str_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        base = shoff + i * shentsize
        name_off, = struct.unpack_from("<I", data, base)
        name = data[str_off + name_off:data.index(0, str_off + name_off)]
        if name == b"plugboard_header":
            off, = struct.unpack_from("<Q", data, base + 0x18)
            struct.pack_into("<I", data, off + 8, 99)
    with open(target, "wb") as f:
        f.write(data)
    os.chmod(target, 0o644)


# ---------------------------------------------------------------------------- scenarios

def scenario_swap_under_load(work):
    """MemoryStorage -> FileStorage -> S3Storage (moto) -> MemoryStorage, one swap a second,
    twice over, under load on keep-alive and new connections: 0 failed requests."""
    moto, endpoint = start_moto(work)
    try:
        backends = [
            store("MemoryStorage"),
            store("FileStorage", config={"root": "data"}),
            store("S3Storage", config={"bucket": "hotswap", "endpoint": endpoint, "region": "us-east-1"}),
        ]
        env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
        server = Server(work, manifest([backends[0]]), env=env)
        idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        idle.request("PUT", "/v1/objects/idle", body=b"before", headers={"Content-Type": "text/plain"})
        check(idle.getresponse().read() and True, "idle PUT")
        try:
            with Load(server) as load:
                time.sleep(1)
                for backend in (backends[1:] + backends[:1]) * 2:
                    g = server.generation()
                    write_atomic(server.manifest, manifest([backend]))
                    server.wait_generation(g)
                    time.sleep(1)
                time.sleep(0.5)
            idle.request("GET", "/v1/objects/idle")
            r = idle.getresponse()
            r.read()
            check(r.status in (200, 404), "the idle keep-alive connection answered %d after the swaps" % r.status)
            check(not load.errors, "%d failed of %d requests: %s" % (len(load.errors), load.count, load.errors[:5]))
            check(load.count > 100, "only %d requests ran" % load.count)
            check(len(load.generations) >= 6, "answers came from generations %s only" % sorted(load.generations))
            check(server.metric('plugboard_reloads_total{result="applied"}') >= 6, "reloads_total")
            return "%d requests, 0 failed, generations %d..%d" % (load.count, min(load.generations), max(load.generations))
        finally:
            check(server.stop() == 0, "serve did not exit 0 on SIGTERM: %s" % server.stderr()[-1500:])
    finally:
        moto.kill()
        moto.wait()


def scenario_rebuilt_plugin(work):
    """A rebuilt plugin at the same path: renamed into place, then copied over in place with
    cp (which truncates the file the host must not have mapped)."""
    os.mkdir(os.path.join(work, "plugins"))
    target = os.path.join(work, "plugins", "libStore.so")
    variant(lib("MemoryStorage"), target, "one")
    server = Server(work, manifest([store(path="plugins/libStore.so")], debounceMilliseconds=100))
    try:
        g = server.generation()
        variant(lib("MemoryStorage"), target, "two")
        g = server.wait_generation(g)
        second = os.path.join(work, "libStore-three.so")
        variant(lib("MemoryStorage"), second, "three")
        subprocess.check_call(["cp", second, target])
        g = server.wait_generation(g)
        status, _, _ = server.request("PUT", "/v1/objects/x", body=b"1", headers={"Content-Type": "text/plain"})
        check(status == 200, "PUT after the cp answered %d" % status)
        check(server.proc.poll() is None, "serve died")
        loaded = [e for e in server.admin("/v1/admin/events")["events"] if e["kind"] == "plugin_loaded"]
        check(len(loaded) >= 2, "expected two plugin_loaded events, got %s" % loaded)
        return "rename and cp each gave a new generation (now %d)" % g
    finally:
        server.stop()


def scenario_refusals(work):
    """Each bad change is refused, with the cause in the answer, admin and metrics, and the
    old generation serving on."""
    misbehaving = lib("MisbehavingPlugin")
    abi = os.path.join(work, "libAbi99.so")
    patched_abi(misbehaving, abi)
    doomed = os.path.join(work, "libDoomed.so")
    shutil.copy(lib("MemoryStorage"), doomed)
    base = [store(path=doomed)]
    server = Server(work, manifest(base, preflightTimeoutSeconds=3))
    results = []
    try:
        status, _, _ = server.request("PUT", "/v1/objects/keep", body=b"kept", headers={"Content-Type": "text/plain"})
        check(status == 200, "setup PUT")
        cases = [
            ("fatalError", manifest([store(path=misbehaving, config={"fault": "fatalError"})]), "reload.preflight_crashed", "SIGILL"),
            ("segfault", manifest([store(path=misbehaving, config={"fault": "segfault"})]), "reload.preflight_crashed", "SIGSEGV"),
            ("hang", manifest([store(path=misbehaving, config={"fault": "hang"})], preflightTimeoutSeconds=2), "reload.preflight_timeout", "within 2 s"),
            ("exit", manifest([store(path=misbehaving, config={"fault": "exit"})]), "reload.preflight_exited", "exit status 0"),
            ("crash in start", manifest([store(path=misbehaving, config={"fault": "segfault", "faultIn": "start"})]), "reload.preflight_crashed", "SIGSEGV"),
            ("another ABI", manifest([store(path=abi)]), "plugin.abi_mismatch", "99"),
            ("syntax error", manifest(base)[:-3] + ",,", "manifest.", ""),
            ("unhealthy required", manifest([store(path=misbehaving, required=True, config={"healthy": False})]), "container.health_check_failed", "unhealthy"),
        ]
        for name, text, code, words in cases:
            g = server.generation()
            refused_before = server.metric('plugboard_reloads_total{result="refused"}')
            write_atomic(server.manifest, text)
            status, outcome = server.reload()
            error = outcome.get("error") or {}
            check(status == 422, "%s: reload answered %d %s" % (name, status, outcome))
            check(error.get("code", "").startswith(code), "%s: code %s, expected %s: %s" % (name, error.get("code"), code, error))
            check(words in error.get("message", "") + (error.get("detail") or ""), "%s: %r not in %s" % (name, words, error))
            check(server.generation() == g, "%s: the generation moved" % name)
            status, headers, body = server.request("GET", "/v1/objects/keep")
            check(status == 200 and body == b"kept", "%s: the old generation does not serve (%d)" % (name, status))
            last = server.admin("/v1/admin/plugins")["reload"]["lastAttempt"]
            check(last["result"] == "refused" and last["error"]["code"] == error["code"], "%s: admin lastAttempt %s" % (name, last))
            check(server.metric('plugboard_reloads_total{result="refused"}') >= refused_before + 1, "%s: refused counter" % name)
            check(server.metric("plugboard_config_last_reload_successful") == 0, "%s: last_reload_successful" % name)
            check(server.proc.poll() is None, "%s: serve died" % name)
            results.append(name)
        # The running plugin's file deleted: the watcher's reload and a manual one are refused.
        write_atomic(server.manifest, manifest(base))
        status, outcome = server.reload()
        check(status == 200, "back to the base manifest: %d %s" % (status, outcome))
        g = server.generation()
        os.unlink(doomed)
        status, outcome = server.reload()
        check(status == 422, "deleted plugin file: reload answered %d %s" % (status, outcome))
        check(server.generation() == g, "deleted plugin file: the generation moved")
        status, _, body = server.request("GET", "/v1/objects/keep")
        check(status == 200 and body == b"kept", "deleted plugin file: old generation gone (%d)" % status)
        results.append("deleted file")
        return "refused: " + ", ".join(results)
    finally:
        server.stop()


def scenario_debounce_and_links(work):
    """Ten writes within 100 ms give one reload, of the last state; a ConfigMap-style
    ..data link swap is picked up; an unchanged rewrite is `unchanged`."""
    folder = os.path.join(work, "config")
    os.mkdir(folder)
    v1 = os.path.join(folder, "..v1")
    os.mkdir(v1)
    with open(os.path.join(v1, "plugins.json"), "w") as f:
        f.write(manifest([store("MemoryStorage")], debounceMilliseconds=300))
    os.symlink("..v1", os.path.join(folder, "..data"))
    os.symlink("..data/plugins.json", os.path.join(folder, "plugins.json"))
    server = Server(work, None, manifest_path=os.path.join(folder, "plugins.json"))
    try:
        # A ConfigMap update: a new version folder, then the ..data link swapped by rename.
        v2 = os.path.join(folder, "..v2")
        os.mkdir(v2)
        with open(os.path.join(v2, "plugins.json"), "w") as f:
            f.write(manifest([store("MemoryStorage", config={"latencyMilliseconds": 1})], debounceMilliseconds=300))
        applied = server.metric('plugboard_reloads_total{result="applied"}')
        g = server.generation()
        os.symlink("..v2", os.path.join(folder, "..data_tmp"))
        os.rename(os.path.join(folder, "..data_tmp"), os.path.join(folder, "..data"))
        g = server.wait_generation(g)
        check(server.metric('plugboard_reloads_total{result="applied"}') == applied + 1, "the link swap gave more than one reload")
        # A burst of ten writes within 100 ms, each an editor's save (the first replaces
        # the link with a plain file).
        target = server.manifest
        applied = server.metric('plugboard_reloads_total{result="applied"}')
        for i in range(10):
            write_atomic(target, manifest([store("MemoryStorage", config={"latencyMilliseconds": i + 2})], debounceMilliseconds=300))
            time.sleep(0.01)
        g = server.wait_generation(g)
        time.sleep(1.0)
        check(server.metric('plugboard_reloads_total{result="applied"}') == applied + 1,
              "ten writes gave %d reloads" % (server.metric('plugboard_reloads_total{result="applied"}') - applied))
        check(server.generation() == g, "a second reload followed the burst")
        # The final state is the last write's: latency 11 ms on every request.
        started = time.time()
        server.request("GET", "/v1/objects/none")
        check(time.time() - started >= 0.011, "the last write's config is not the one running")
        # The same bytes again: unchanged.
        unchanged = server.metric('plugboard_reloads_total{result="unchanged"}')
        with open(target) as f:
            same = f.read()
        write_atomic(target, same)
        deadline = time.time() + 5
        while time.time() < deadline and server.metric('plugboard_reloads_total{result="unchanged"}') == unchanged:
            time.sleep(0.05)
        check(server.metric('plugboard_reloads_total{result="unchanged"}') == unchanged + 1, "an unchanged rewrite was not `unchanged`")
        # A syntax error is refused, and the watch goes on: the fix is picked up.
        refused = server.metric('plugboard_reloads_total{result="refused"}')
        write_atomic(target, same[:-5])
        deadline = time.time() + 5
        while time.time() < deadline and server.metric('plugboard_reloads_total{result="refused"}') == refused:
            time.sleep(0.05)
        check(server.metric('plugboard_reloads_total{result="refused"}') == refused + 1, "a syntax error was not refused")
        last = server.admin("/v1/admin/plugins")["reload"]["lastAttempt"]
        check(last["trigger"] == "watch" and last["error"]["code"].startswith("manifest."), "after the syntax error: %s" % last)
        write_atomic(target, manifest([store("MemoryStorage", config={"latencyMilliseconds": 0})], debounceMilliseconds=300))
        server.wait_generation(g)
        return "link swap: 1 reload; 10 writes in ~100 ms: 1 reload to the last state; rewrite: unchanged; syntax error refused, then the fix applied"
    finally:
        server.stop()


def scenario_triggers(work):
    """SIGHUP, POST /v1/admin/reload (401 without the token) and `plugboard reload` each
    apply a change (with --no-watch, so that only they reload); with hot swap off, SIGHUP
    is logged, the server lives on and the admin endpoint answers 409."""
    server = Server(work, manifest([store("MemoryStorage")]), args=["--no-watch"])
    try:
        status, _, _ = server.request("POST", "/v1/admin/reload")
        check(status == 401, "POST /v1/admin/reload without the token answered %d" % status)
        g = server.generation()
        write_atomic(server.manifest, manifest([store("MemoryStorage", config={"seed": 7})]))
        time.sleep(1)
        check(server.generation() == g, "--no-watch: a file change reloaded")
        for i, trigger in enumerate(("signal", "admin", "cli")):
            write_atomic(server.manifest, manifest([store("MemoryStorage", config={"seed": 100 + i})]))
            if trigger == "signal":
                server.proc.send_signal(signal.SIGHUP)
                server.wait_generation(g)
                last = server.admin("/v1/admin/plugins")["reload"]["lastAttempt"]
                check(last["trigger"] == "signal" and last["result"] == "applied", "SIGHUP: %s" % last)
            elif trigger == "admin":
                status, outcome = server.reload()
                check(status == 200 and outcome["result"] == "applied", "admin: %d %s" % (status, outcome))
            else:
                r = subprocess.run([PLUGBOARD, "reload", "--url", "http://127.0.0.1:%d" % server.port],
                                   env=dict(os.environ, PLUGBOARD_ADMIN_TOKEN=ADMIN), capture_output=True, text=True, timeout=60)
                check(r.returncode == 0 and "reload applied" in r.stdout, "plugboard reload: %d %s %s" % (r.returncode, r.stdout, r.stderr))
                r = subprocess.run([PLUGBOARD, "reload", "--url", "http://127.0.0.1:%d" % server.port],
                                   env=dict(os.environ, PLUGBOARD_ADMIN_TOKEN="wrong"), capture_output=True, text=True, timeout=60)
                check(r.returncode == 1 and "wrong bearer token" in r.stderr, "plugboard reload, wrong token: %d %s" % (r.returncode, r.stderr))
            check(server.generation() > g, "%s did not apply the change" % trigger)
            g = server.generation()
        everything = server.admin("/v1/admin/events")
        later = server.admin("/v1/admin/events?since=%d" % (everything["next"] - 2))
        check([e["sequence"] for e in later["events"]] == [everything["next"] - 1], "events?since: %s" % later)
        status, _, _ = server.request("GET", "/v1/admin/events?since=x", headers=AUTH)
        check(status == 400, "events?since=x answered %d" % status)
        r = subprocess.run([PLUGBOARD, "reload", "--url", "ftp://nowhere"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "--url" in r.stderr, "plugboard reload --url ftp://: %d %s" % (r.returncode, r.stderr))
        r = subprocess.run([PLUGBOARD, "reload", "--url", "http://127.0.0.1:%d" % free_port()], capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and "cli.reload_unreachable" not in r.stdout and "could not reach" in r.stderr, "no server: %d %s" % (r.returncode, r.stderr))
    finally:
        server.stop()
    r = subprocess.run([PLUGBOARD, "serve", "--env", "production", "--watch", "--listen", "127.0.0.1:0", "--manifest", server.manifest],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "allowInProduction" in r.stderr, "serve --watch in production: %d %s" % (r.returncode, r.stderr))
    off_dir = os.path.join(work, "off")
    os.mkdir(off_dir)
    off = Server(off_dir, manifest([store("MemoryStorage")], enabled=False))
    try:
        off.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        check(off.proc.poll() is None, "SIGHUP ended serve with hot swap off")
        check("hot swap is off" in off.stderr(), "SIGHUP with hot swap off was not logged")
        status, outcome = off.reload()
        check(status == 409 and outcome["error"]["code"] == "reload.hot_swap_off", "admin reload, hot swap off: %d %s" % (status, outcome))
    finally:
        off.stop()
    return "SIGHUP, admin (401 without token) and plugboard reload each applied a change; events?since; off: SIGHUP logged, 409; --watch in production: exit 2"


def scenario_drain(work):
    """A managed service of the old generation stops only after its in-flight request has
    answered, and at the latest after the drain timeout."""
    log = os.path.join(work, "stops.log")
    open(log, "w").close()
    misbehaving = lib("MisbehavingPlugin")

    def config(label, delay):
        return {"label": label, "stopLog": log, "getDelayMilliseconds": delay}

    def stopped(label):
        # The preflight child starts and stops its own copy of each new build too; the
        # host's stop of a label is the second line for a preflighted label, the first
        # for the one loaded at start.
        with open(log) as f:
            return [line for line in f.read().splitlines() if line == "stopped " + label]

    server = Server(work, manifest([store(path=misbehaving, config=config("alpha", 1500))], drainTimeoutSeconds=10),
                    args=["--no-watch"])
    try:
        server.request("PUT", "/v1/objects/k", body=b"v", headers={"Content-Type": "text/plain"})
        answered = {}

        def slow_get():
            answered["status"], answered["headers"], _ = server.request("GET", "/v1/objects/k")
            answered["at"] = time.time()

        t = threading.Thread(target=slow_get)
        t.start()
        time.sleep(0.3)
        write_atomic(server.manifest, manifest([store(path=misbehaving, config=config("beta", 4000))], drainTimeoutSeconds=10))
        status, outcome = server.reload()
        check(status == 200 and outcome["result"] == "applied", "swap: %d %s" % (status, outcome))
        check(not stopped("alpha"), "the old service stopped while its request was in flight")
        t.join(10)
        check(answered.get("status") == 200, "the in-flight GET answered %s" % answered.get("status"))
        deadline = time.time() + 5
        while time.time() < deadline and not stopped("alpha"):
            time.sleep(0.01)
        check(stopped("alpha"), "the old service was never stopped")
        stop_delay = time.time() - answered["at"]
        check(stop_delay < 1.0, "the old service stopped %.2f s after its last request" % stop_delay)
        # Now a request that outlives the drain timeout (1 s): a forced stop.
        t = threading.Thread(target=slow_get)
        t.start()
        time.sleep(0.3)
        write_atomic(server.manifest, manifest([store(path=misbehaving, config=config("gamma", 0))], drainTimeoutSeconds=1))
        swapped = time.time()
        status, outcome = server.reload()
        check(status == 200 and outcome["result"] == "applied", "second swap: %d %s" % (status, outcome))
        deadline = time.time() + 5
        while time.time() < deadline and len(stopped("beta")) < 2:
            time.sleep(0.01)
        forced_after = time.time() - swapped
        check(len(stopped("beta")) == 2, "the drain timeout did not stop the old service")
        check(0.9 <= forced_after < 3.0 and t.is_alive(), "forced stop %.2f s after the swap, request alive: %s" % (forced_after, t.is_alive()))
        t.join(10)
        kinds = [e["kind"] for e in server.admin("/v1/admin/events")["events"]]
        check("drain_forced" in kinds and "drained" in kinds, "events: %s" % kinds)
        return "stopped %.2f s after its in-flight request answered; forced %.1f s after the swap (timeout 1 s) with a request open" % (stop_delay, forced_after)
    finally:
        server.stop()


def scenario_images(work):
    """100 reloads alternating between two builds map 2 images, not 100, and RSS grows by
    no more than 4 MiB after the first two."""
    os.mkdir(os.path.join(work, "plugins"))
    a = os.path.join(work, "libA.so")
    b = os.path.join(work, "libB.so")
    variant(lib("MemoryStorage"), a, "A")
    variant(lib("MemoryStorage"), b, "B")
    target = os.path.join(work, "plugins", "libStore.so")
    shutil.copy(a, target)
    server = Server(work, manifest([store(path="plugins/libStore.so")], maxRetainedImages=1), args=["--no-watch"])
    try:
        rss = []
        for i in range(100):
            shutil.copy(b if i % 2 == 0 else a, target + ".new")
            os.rename(target + ".new", target)
            status, outcome = server.reload()
            check(status == 200 and outcome["result"] == "applied", "reload %d: %d %s" % (i, status, outcome))
            if i == 1:
                rss.append(server.rss_kib())
        rss.append(server.rss_kib())
        images = server.admin("/v1/admin/plugins")["mappedImages"]
        check(images["count"] == 2, "%d images mapped after 100 reloads" % images["count"])
        check(server.metric("plugboard_mapped_images") == 2, "plugboard_mapped_images")
        check(server.metric("plugboard_generation") == server.generation(), "plugboard_generation")
        check(server.metric("plugboard_reload_duration_seconds_count") == 100, "plugboard_reload_duration_seconds_count")
        check("more than hotSwap.maxRetainedImages (1)" in server.stderr(), "no warning past maxRetainedImages")
        growth = rss[-1] - rss[0]
        check(growth <= 4096, "RSS grew by %d KiB over 98 reloads" % growth)
        return "2 images mapped; RSS %d -> %d KiB (%+d KiB over 98 reloads, %.1f KiB a reload)" % (rss[0], rss[-1], growth, growth / 98)
    finally:
        server.stop()


def scenario_crash_names_plugin(work):
    """A plugin that crashes inside get takes serve down (plugin code is trusted code), but
    stderr names the plugin whose code was running."""
    server = Server(work, manifest([store(path=lib("MisbehavingPlugin"), config={"fault": "segfault", "faultIn": "get"})]))
    try:
        server.request("PUT", "/v1/objects/k", body=b"v", headers={"Content-Type": "text/plain"})
        try:
            server.request("GET", "/v1/objects/k", timeout=10)
        except Exception:
            pass
        server.proc.wait(20)
        check(server.proc.returncode == -signal.SIGSEGV, "serve exited %s" % server.proc.returncode)
        check('while running code of plugin Store' in server.stderr(), "stderr does not name the plugin: %s" % server.stderr()[-800:])
        return "SIGSEGV in get: stderr names plugin Store"
    finally:
        server.stop()


def scenario_check_preflight(work):
    """`plugboard check` runs each plugin in a preflight child: one that exits, hangs or
    crashes is reported by name and check exits 1; the others are still checked."""
    misbehaving = lib("MisbehavingPlugin")
    plugins = [
        {"name": "Good", "product": "MemoryStorage", "environments": ["testing"]},
        {"name": "Quitter", "path": misbehaving, "environments": ["testing"], "config": {"fault": "exit"}},
        {"name": "Sleeper", "path": misbehaving, "environments": ["testing"], "config": {"fault": "hang"}},
        {"name": "Crasher", "path": misbehaving, "environments": ["testing"], "config": {"fault": "segfault"}},
        {"name": "AlsoGood", "path": misbehaving, "environments": ["testing"]},
    ]
    path = os.path.join(work, "plugins.json")
    write_atomic(path, manifest(plugins, preflightTimeoutSeconds=2))
    r = subprocess.run([PLUGBOARD, "check", "--json", "--manifest", path, "--cache-dir", os.path.join(work, "cache")],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, SWIFT_BACKTRACE="enable=no"))
    check(r.returncode == 1, "check exited %d: %s %s" % (r.returncode, r.stdout, r.stderr))
    states = {p["name"]: p for p in json.loads(r.stdout)}
    check(states["Good"]["state"] == "active" and states["AlsoGood"]["state"] == "active", "good plugins: %s" % states)
    check(states["Quitter"]["error"]["code"] == "reload.preflight_exited", "Quitter: %s" % states["Quitter"])
    check(states["Sleeper"]["error"]["code"] == "reload.preflight_timeout", "Sleeper: %s" % states["Sleeper"])
    check("SIGSEGV" in states["Crasher"]["error"]["message"], "Crasher: %s" % states["Crasher"])
    return "exit, hang and SIGSEGV reported by name; the two good plugins active; exit 1"


def scenario_required(work):
    """The one rule for `required`: without hot swap, serve exits 1 at start; with it,
    serve runs not-ready (503 on /readyz and object routes) until a reload fixes it."""
    broken = {"name": "Needed", "path": os.path.join(work, "missing.so"), "environments": ["testing"], "required": True}
    text = manifest([store("MemoryStorage"), broken], enabled=False)
    path = os.path.join(work, "plugins.json")
    write_atomic(path, text)
    r = subprocess.run([PLUGBOARD, "serve", "--listen", "127.0.0.1:0", "--manifest", path, "--cache-dir", os.path.join(work, "cache")],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "host.required_plugin_failed" not in r.stdout and 'required plugin "Needed"' in r.stderr,
          "serve without hot swap: exit %d, stderr %s" % (r.returncode, r.stderr[-500:]))
    server = Server(work, manifest([store("MemoryStorage"), broken]))
    try:
        status, _, body = server.request("GET", "/readyz")
        check(status == 503 and b"Needed" in body, "/readyz answered %d %s" % (status, body))
        status, headers, body = server.request("GET", "/v1/objects/x")
        check(status == 503 and headers.get("x-plugboard-error-code") == "http.unavailable", "object route answered %d %s" % (status, body))
        fixed = dict(broken, path=None, product="MemoryStorage")
        del fixed["path"]
        g = server.generation()
        write_atomic(server.manifest, manifest([store("MemoryStorage"), fixed]))
        server.wait_generation(g)
        status, _, _ = server.request("GET", "/readyz")
        check(status == 200, "/readyz after the fix answered %d" % status)
        status, _, _ = server.request("PUT", "/v1/objects/x", body=b"1", headers={"Content-Type": "text/plain"})
        check(status == 200, "PUT after the fix answered %d" % status)
        return "off: exit 1 at start; on: 503 until the reload that fixed it, then ready"
    finally:
        server.stop()


def scenario_child_dies_with_host(work):
    """A preflight child hanging in plugin code dies with the host (PR_SET_PDEATHSIG)."""
    server = Server(work, manifest([store("MemoryStorage")], preflightTimeoutSeconds=600), args=["--no-watch"])
    try:
        write_atomic(server.manifest, manifest([store(path=lib("MisbehavingPlugin"), config={"fault": "hang"})], preflightTimeoutSeconds=600))
        def ask():
            try:
                server.request("POST", "/v1/admin/reload", headers=AUTH, timeout=5)
            except OSError:
                pass  # the server is killed while it waits for the preflight

        threading.Thread(target=ask, daemon=True).start()

        def children():
            out = subprocess.run(["ps", "-eo", "pid,ppid,pgid,args"], capture_output=True, text=True).stdout
            return [line for line in out.splitlines() if "plugboard preflight --parent-pid %d" % server.proc.pid in line]

        deadline = time.time() + 10
        while time.time() < deadline and not children():
            time.sleep(0.05)
        found = children()
        check(found, "no preflight child appeared")
        pid = int(found[0].split()[0])
        server.proc.kill()
        server.proc.wait()
        def running():
            # Gone, or a zombie waiting for whoever adopted it: either way not running.
            try:
                with open("/proc/%d/stat" % pid) as f:
                    return ") Z " not in f.read()
            except OSError:
                return False

        deadline = time.time() + 5
        while time.time() < deadline and running():
            time.sleep(0.05)
        check(not running(), "the preflight child %d outlived the host killed with SIGKILL" % pid)
        return "SIGKILL of serve during a hanging preflight took the child %d with it" % pid
    finally:
        server.stop()


def scenario_secrets_in_answers(work):
    """An error a plugin throws while serving quotes a secret of the manifest: the answer
    and the log show <redacted>, never the secret or a piece of it."""
    secret = "S3cr3t-" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(60))
    plugin = store(path=lib("MisbehavingPlugin"), config={"label": {"secret": "${FIXTURE_LABEL}"}, "fault": "error", "faultIn": "get"})
    server = Server(work, manifest([plugin]), env={"FIXTURE_LABEL": secret})
    try:
        status, headers, body = server.request("GET", "/v1/objects/k")
        check(status == 503, "GET answered %d %s" % (status, body[:300]))
        pieces = [secret[i:i + 8] for i in range(0, len(secret) - 8)]
        text = body.decode() + server.stderr()
        leaked = [p for p in pieces if p in text]
        check(not leaked, "pieces of the secret leaked: %s" % leaked[:3])
        check("<redacted>" in body.decode(), "the answer does not say <redacted>: %s" % body[:300])
        return "a plugin's error quoting a 67-character secret: answered and logged as <redacted>"
    finally:
        server.stop()


SCENARIOS = [
    ("swap-under-load", scenario_swap_under_load),
    ("rebuilt-plugin", scenario_rebuilt_plugin),
    ("refusals", scenario_refusals),
    ("debounce-and-links", scenario_debounce_and_links),
    ("triggers", scenario_triggers),
    ("drain", scenario_drain),
    ("images", scenario_images),
    ("crash-names-plugin", scenario_crash_names_plugin),
    ("check-preflight", scenario_check_preflight),
    ("required", scenario_required),
    ("child-dies-with-host", scenario_child_dies_with_host),
    ("secrets-in-answers", scenario_secrets_in_answers),
]


def main():
    run_scenarios(SCENARIOS, sys.argv[2:], "plugboard-hotswap-")


if __name__ == "__main__":
    main()
