"""Debian's HAProxy in front of plugboard hosts, for the e2e drivers (gateway_fleet.py,
fleet_e2e.py): started in the foreground with one of docs/examples/haproxy-*.cfg as it
is, the addresses in its environment; its runtime API (`show stat`, a server's state) and
its `option httplog` lines read back."""
import csv
import io
import os
import re
import signal
import socket
import subprocess
import time

from e2e_runner import free_port, stop_process
from s3_tools import Failure, check, tool

# HAProxy's `option httplog` line: client [accept date] frontend backend/server
# TR/Tw/Tc/Tr/Ta status bytes cookies termination-state act/fe/be/srv/retries queues "request".
HTTPLOG = re.compile(r'^\S+ \[[^\]]+\] \S+ \S+/(\S+) [-+\d/]+ (-?\d+) \+?\d+ \S+ \S+ (\S{4}) [+\d/]+ \d+/\d+ "(\S+) (\S+)[^"]*"$')


class LogLine:
    def __init__(self, m):
        self.server, self.status, self.termination = m.group(1), int(m.group(2)), m.group(3)
        self.method, self.target = m.group(4), m.group(5)

    def failed(self):
        """An answer the client saw as an error: none (-1), or a 5xx."""
        return self.status < 0 or self.status >= 500


class HAProxy:
    """`haproxy -db -f CONFIG` with `environment(port)` added to its environment (the
    addresses the configuration reads; `port` is the free one picked for its frontend),
    the runtime API on a socket in `work` (STATS_SOCKET_VARIABLE), its log (standard
    output) in haproxy.log. Returns once every server of `backend` is UP after an L7OK
    health check."""

    def __init__(self, work, config, backend, environment, socket_variable):
        self.work = work
        self.backend = backend
        self.socket_path = os.path.join(work, "haproxy.sock")
        self.log_path = os.path.join(work, "haproxy.log")
        haproxy = tool("haproxy")
        for _ in range(3):
            self.port = free_port()
            env = dict(os.environ, **environment(self.port))
            env[socket_variable] = self.socket_path
            self.proc = subprocess.Popen([haproxy, "-db", "-f", config], env=env, cwd=work,
                                         stdout=open(self.log_path, "w"), stderr=open(os.path.join(work, "haproxy.err"), "w"))
            try:
                self.wait(lambda: all(s["status"] == "UP" and s["check_status"] == "L7OK" for s in self.servers().values()),
                          "every host UP after an L7OK health check", 30)
                self.endpoint = "http://127.0.0.1:%d" % self.port
                return
            except Failure:
                if self.proc.poll() is None:
                    raise
                stop_process(self.proc, 5)   # most likely the port was taken meanwhile: another one
        with open(os.path.join(work, "haproxy.err")) as f:
            raise Failure("haproxy did not start: %s" % f.read()[-1500:])

    def wait(self, condition, what, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            check(self.proc.poll() is None, "haproxy exited with %s while waiting for %s" % (self.proc.returncode, what))
            try:
                if condition():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Failure("haproxy: no %s within %d s" % (what, timeout))

    def command(self, text):
        """One command on the runtime API socket; its answer."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(self.socket_path)
            s.sendall(text.encode() + b"\n")
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def _stat_rows(self):
        text = self.command("show stat").lstrip("# ")
        return [row for row in csv.DictReader(io.StringIO(text)) if row["pxname"] == self.backend]

    def servers(self):
        """`show stat` of the backend's servers: name -> row."""
        return {row["svname"]: row for row in self._stat_rows() if row["svname"] != "BACKEND"}

    def counters(self):
        """The backend's retries, redispatches and errors so far (`show stat`, row BACKEND)."""
        row = [r for r in self._stat_rows() if r["svname"] == "BACKEND"][0]
        return {name: int(row[name] or 0) for name in ("stot", "wretr", "wredis", "eresp", "srv_abrt", "cli_abrt", "econ")}

    def log(self):
        with open(self.log_path) as f:
            return [LogLine(m) for m in map(HTTPLOG.match, f.read().splitlines()) if m]

    def stop(self):
        return stop_process(self.proc, 10, signal.SIGUSR1)   # SIGUSR1: a soft stop
