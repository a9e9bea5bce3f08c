#!/usr/bin/env python3
"""A large object through plugboard serve beside nginx (issue 11, docs/BENCHMARKS.md
"Server core").

  Benchmarks/large-object.py [SIZE_MIB] [--s3] [--rest]      (default 1024: 1 GiB)

Writes a file of SIZE_MIB random MiB in a temporary folder, then with `curl` PUTs it to and
GETs it from (1) a release `plugboard serve` on the shipped plugins.json (FileStorage
under the same folder), (2) with --s3 also `plugboard serve --env staging` on S3Storage
against moto_server from the package's .venv, (3) with --rest also a `plugboard serve` on
RESTStorage (the front, measured) whose storage is a second `plugboard serve` on FileStorage
(the back), so the body streams through RESTStorage's plain-HTTP client both ways, and (4)
nginx (its WebDAV PUT and a static
GET of the same file from the same folder). `--max-body-bytes` is set to the size (the
thread-per-connection server's default is 64 MiB); PLUGBOARD_SERVE_ARGS adds options.
Prints one JSON object per server and direction: MiB/s (size / curl's total time), the
HTTP status, the bytes curl moved, and for plugboard the server's peak RSS during that
transfer (VmHWM reset before it). Goal (issue 11): plugboard's RSS <= 64 MiB. Python 3
stdlib, curl and nginx.
"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
ARGS = sys.argv[1:]
sys.argv = [sys.argv[0], os.path.join(REPO, ".build", "release")]
import attacks as e2e  # noqa: E402  (the attacks driver's Server, PeakRss and free ports)
import hot_swap  # noqa: E402  (its moto_server, with the bucket "hotswap")

MIB = 1 << 20
CURL_TIMEOUT = 900   # seconds for one transfer: a slow server is measured, not waited for forever


def need(tool, how):
    if shutil.which(tool) is None:
        sys.exit("large-object.py: %s not found; %s" % (tool, how))


def write_random(path, size):
    chunk = os.urandom(MIB)
    with open(path, "wb") as f:
        for i in range(size // MIB):
            f.write(chunk[i % 251:] + chunk[:i % 251])   # a distinct MiB each time, cheaply
        f.write(os.urandom(size % MIB))


def nginx_folder(work, size):
    """WORK/html, the folder nginx serves (a probe file, upload/ for its PUTs), with
    large.bin of `size` random bytes in it: the folder and the file's paths."""
    html = os.path.join(work, "html")
    os.makedirs(os.path.join(html, "upload"))
    with open(os.path.join(html, "probe"), "w") as f:
        f.write("ok")
    path = os.path.join(html, "large.bin")
    write_random(path, size)
    # nginx's workers (nobody, or this user) must reach the files.
    os.chmod(work, 0o755)
    for folder in (html, os.path.join(html, "upload")):
        os.chmod(folder, 0o777)
    return html, path


def curl(method, url, path, size):
    """One transfer with curl; returns its figures."""
    args = ["curl", "-s", "-S", "--max-time", str(CURL_TIMEOUT), "-o", os.devnull,
            "-w", "%{http_code} %{size_upload} %{size_download} %{time_total}"]
    if method == "PUT":
        args += ["-T", path, "-H", "Content-Type: application/octet-stream", "-H", "Expect:"]
    out = subprocess.run(args + [url], capture_output=True, text=True, timeout=CURL_TIMEOUT + 30)
    status, up, down, seconds = out.stdout.split()
    moved = int(float(up if method == "PUT" else down))
    return {"method": method, "status": int(status), "bytes": moved, "seconds": round(float(seconds), 3),
            "mib_per_s": round(moved / MIB / float(seconds), 1) if float(seconds) > 0 else None,
            "complete": moved == size, "curl_error": out.stderr.strip()[:200] or None}


def through_plugboard(server, name, path, size):
    url = server.url("/v1/objects/bench%2Flarge")
    for method in ("PUT", "GET"):
        peak = e2e.PeakRss(server)
        rss_before = server.status_kib("VmRSS")
        result = curl(method, url, path, size)
        result.update(server=name, server_rss_mib_before=round(rss_before / 1024, 1),
                      server_peak_rss_mib=round(peak.stop(), 1), serve_args=e2e.SERVE_ARGS)
        print(json.dumps(result), flush=True)


def start_nginx(work, root):
    port = e2e.free_port()
    prefix = os.path.join(work, "nginx")
    os.makedirs(os.path.join(prefix, "logs"))
    user = "user %s;" % pwd.getpwuid(os.geteuid()).pw_name if os.geteuid() == 0 else ""
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""%s
worker_processes %d;
daemon off;
pid %s/nginx.pid;
error_log %s/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %s/body;
    client_max_body_size 0;
    sendfile on;
    server {
        listen 127.0.0.1:%d;
        root %s;
        location /upload/ { dav_methods PUT; create_full_put_path on; }
    }
}
""" % (user, os.cpu_count() or 1, prefix, prefix, root, port, root))
    err = open(os.path.join(prefix, "logs", "stderr"), "w")
    proc = subprocess.Popen(["nginx", "-p", prefix, "-c", conf], stderr=err)
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if subprocess.run(["curl", "-sf", "-o", os.devnull, url + "/probe"], timeout=10).returncode == 0:
            return proc, url
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    with open(os.path.join(prefix, "logs", "error.log")) as f:
        sys.exit("large-object.py: nginx did not start: %s" % f.read()[-1000:])


def main():
    size = int(ARGS[0]) * MIB if ARGS and ARGS[0].isdigit() else 1024 * MIB
    s3 = "--s3" in ARGS
    rest = "--rest" in ARGS
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # unwind: stop the servers, remove the folder
    need("curl", "apt-get install -y curl")
    need("nginx", "apt-get install -y nginx")
    work = tempfile.mkdtemp(prefix="plugboard-bench-large-")
    processes = []
    servers = []
    try:
        html, path = nginx_folder(work, size)
        print(json.dumps({"size_mib": size // MIB, "nproc": os.cpu_count(), "load_average": os.getloadavg()}), flush=True)
        limit = ["--max-body-bytes", str(size)]

        folder = os.path.join(work, "file")
        os.mkdir(folder)
        servers.append(e2e.Server(folder, args=limit))
        through_plugboard(servers[-1], "plugboard FileStorage", path, size)
        servers.pop().stop()

        if s3:
            moto, endpoint = hot_swap.start_moto(work)
            processes.append(moto)
            folder = os.path.join(work, "s3")
            os.mkdir(folder)
            env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                   "PLUGBOARD_S3_BUCKET": "hotswap", "PLUGBOARD_S3_ENDPOINT": endpoint}
            servers.append(e2e.Server(folder, args=limit + ["--env", "staging"], env=env))
            through_plugboard(servers[-1], "plugboard S3Storage (moto)", path, size)
            servers.pop().stop()

        if rest:
            folder = os.path.join(work, "rest-back")
            os.mkdir(folder)
            servers.append(e2e.Server(folder, args=limit))
            back = servers[-1]
            folder = os.path.join(work, "rest-front")
            os.mkdir(folder)
            manifest = json.dumps({"schemaVersion": 1, "plugins": [
                {"name": "Remote", "product": "RESTStorage", "config": {"baseURL": back.url(), "timeoutSeconds": 600}}]})
            servers.append(e2e.Server(folder, args=limit, manifest=manifest))
            through_plugboard(servers[-1], "plugboard RESTStorage (to plugboard FileStorage)", path, size)
            servers.pop().stop()
            servers.pop().stop()

        nginx, url = start_nginx(work, html)
        processes.append(nginx)
        for method, target in (("PUT", "/upload/large.bin"), ("GET", "/large.bin")):
            result = curl(method, url + target, path, size)
            result.update(server="nginx")
            print(json.dumps(result), flush=True)
    finally:
        for server in servers:
            server.stop()
        for proc in processes:
            e2e.stop_process(proc, 10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
