#!/usr/bin/env python3
"""Third-party S3 tools end to end, against a real `plugboard serve --s3-listen` and the
real plugin .so files: rclone and s3cmd (each over FileStorage and over MemoryStorage,
`-file` and `-memory`; rclone with `v2_auth` and s3cmd with `--signature-v2` against
s3.signatureV2, `rclone-v2-file` and `s3cmd-v2-file`), boto3 over https through nginx (aws-chunked bodies
with a CRC32 trailer), and an AWS CLI sync across hot swaps between two FileStorage
plugins over one root folder.

Usage: s3_tools.py BUILD_FOLDER [SCENARIO ...]   (BUILD_FOLDER: .build/release or .build/debug)

Every scenario starts its own server on free ports with its own manifest, plugin cache
and data folder, and prints one PASS or FAIL line; the exit status is the number of
failed scenarios. Needs rclone and nginx on the PATH (or /usr/sbin), openssl, and
boto3, awscli and s3cmd in the package's .venv (Tests/e2e/s3-tools.sh says how to
install them).

Boto3 over plain http is Tests/e2e/s3_clients.py's; this file is for the other tools.
"""
import base64
import calendar
import filecmp
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zlib

from e2e_runner import free_port, request, run_scenarios, stop_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".build", "release"))
PLUGBOARD = os.path.join(BUILD, "plugboard")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
ADMIN = "adm1n-t0ken"
AUTH = {"Authorization": "Bearer " + ADMIN}
ACCESS_KEY = "AKIDPLUGBOARDTEST"
SECRET_KEY = "s3-tools-" + "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(31))
REGION = "us-east-1"
MIB = 1024 * 1024

# The tools read AWS_* settings (profiles, a CA bundle, which rclone's S3 backend refuses
# with an http transport); none of the caller's may reach them.
for _name in [n for n in os.environ if n.startswith("AWS_")]:
    del os.environ[_name]


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def tool(name):
    """The path of a tool: the .venv's, then the PATH's, then /usr/sbin's (nginx)."""
    for candidate in (os.path.join(VENV_BIN, name), shutil.which(name) or "", os.path.join("/usr/sbin", name)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise Failure("%s not found in %s, on the PATH or in /usr/sbin (see Tests/e2e/s3-tools.sh)" % (name, VENV_BIN))


def run(argv, timeout=120, env=None, cwd=None, expect=0):
    """Runs a tool to its end; fails naming the command, the exit status expected and found,
    and the tail of its output. Returns (stdout, stderr)."""
    environment = dict(os.environ)
    environment.update(env or {})
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=environment, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failure("%s did not finish in %d s" % (" ".join(argv[:4]), timeout))
    if expect is not None and r.returncode != expect:
        raise Failure("%s exited %d, expected %d: %s %s" % (
            " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:6])),
            r.returncode, expect, r.stdout[-1200:], r.stderr[-1500:]))
    return r.stdout, r.stderr


def write_tree(root, count, seed, sizes=(1, 40000)):
    """`count` small files of random bytes under `root`, some in subfolders; returns their
    relative paths."""
    rnd = random.Random(seed)
    names = []
    for i in range(count):
        rel = os.path.join("sub%d" % (i % 3), "file-%03d.bin" % i) if i % 4 == 0 else "file-%03d.txt" % i
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(rnd.randbytes(rnd.randrange(*sizes)))
        names.append(rel)
    return sorted(names)


def write_big(path, size, seed):
    rnd = random.Random(seed)
    with open(path, "wb") as f:
        f.write(rnd.randbytes(size))


def files_under(root):
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def same_trees(expected_root, found_root, what):
    """Every file of `expected_root` is in `found_root` with the same bytes, and no other."""
    expected, found = files_under(expected_root), files_under(found_root)
    check(expected == found, "%s: expected files %s, found %s (missing %s, extra %s)" % (
        what, len(expected), len(found), sorted(set(expected) - set(found))[:5], sorted(set(found) - set(expected))[:5]))
    differ = [rel for rel in expected if not filecmp.cmp(os.path.join(expected_root, rel), os.path.join(found_root, rel), shallow=False)]
    check(not differ, "%s: %d files differ byte for byte, e.g. %s (%d bytes expected, %d found)" % (
        what, len(differ), differ[:3], os.path.getsize(os.path.join(expected_root, differ[0])) if differ else 0,
        os.path.getsize(os.path.join(found_root, differ[0])) if differ else 0))
    return len(expected)


def same_file(expected, found, what):
    check(os.path.exists(found), "%s: %s was not written" % (what, found))
    a, b = os.path.getsize(expected), os.path.getsize(found)
    check(a == b and filecmp.cmp(expected, found, shallow=False),
          "%s: expected %d bytes (sha256 %s), found %d (sha256 %s)" % (what, a, sha256_file(expected)[:16], b, sha256_file(found)[:16]))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


def aws_env():
    return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION, "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true"}


def boto3_client(endpoint, verify=None):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, verify=verify,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"}))


def write_atomic(path, text):
    """As an editor saves: a new file renamed over the old one."""
    tmp = path + ".tmp-%d" % random.randrange(1 << 30)
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


class Server:
    """`plugboard serve` with the S3 API: `port` (native API) and `s3_port`; ready once
    /readyz answers 200. `listen` is the (native, S3) pair of addresses, free ports by
    default."""

    def __init__(self, work, manifest_text=None, args=(), env=None, listen=("127.0.0.1:0", "127.0.0.1:0")):
        self.work = work
        self.manifest = os.path.join(work, "plugins.json")
        if manifest_text is None:
            shutil.copy(os.path.join(REPO, "plugins.json"), self.manifest)
        else:
            write_atomic(self.manifest, manifest_text)
        environment = dict(os.environ, PLUGBOARD_ADMIN_TOKEN=ADMIN, SWIFT_BACKTRACE="enable=no",
                           PLUGBOARD_S3_ACCESS_KEY_ID=ACCESS_KEY, PLUGBOARD_S3_SECRET_ACCESS_KEY=SECRET_KEY)
        environment.update(env or {})
        self.out = open(os.path.join(work, "serve.out"), "w+")
        self.err = open(os.path.join(work, "serve.err"), "w+")
        self.proc = subprocess.Popen(
            [PLUGBOARD, "serve", "--listen", listen[0], "--s3-listen", listen[1], "--manifest", self.manifest,
             "--cache-dir", os.path.join(work, "cache"), "--log-level", "info"] + list(args),
            cwd=work, env=environment, stdout=self.out, stderr=self.err)
        try:
            self.wait_ready()
        except BaseException:
            stop_process(self.proc, 5)
            raise
        self.endpoint = "http://127.0.0.1:%d" % self.s3_port

    def wait_ready(self):
        self.port = self.s3_port = None
        deadline = time.time() + 60
        while time.time() < deadline and self.s3_port is None:
            self.out.seek(0)
            for line in self.out.read().splitlines():
                if line.startswith("plugboard serve: listening on http://"):
                    self.port = int(line.rsplit(":", 1)[1])
                elif line.startswith("plugboard serve: S3 API listening on http://"):
                    self.s3_port = int(line.rsplit(":", 1)[1])
            if self.proc.poll() is not None:
                raise Failure("serve exited with %s: %s" % (self.proc.returncode, self.stderr()[-2000:]))
            time.sleep(0.05)
        check(self.port and self.s3_port, "serve did not print both listening lines: %r" % self.stdout())
        while time.time() < deadline:
            try:
                if request(self.port, "GET", "/readyz", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise Failure("/readyz never answered 200")

    def stdout(self):
        self.out.seek(0)
        return self.out.read()

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def s3_log(self):
        """The S3 endpoint's access log lines: (operation, method, target, status, time
        logged as seconds since the epoch)."""
        found = []
        for line in self.stderr().splitlines():
            m = re.match(r"^(\S+) [A-Z]+ plugboard: (\w+) ([A-Z]+) (\S+) (\d{3}) .*component=s3", line)
            if m:
                logged = calendar.timegm(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + m.group(1)[19:-1])
                found.append((m.group(2), m.group(3), m.group(4), int(m.group(5)), logged))
        return found

    def admin(self, path):
        status, _, body = request(self.port, "GET", path, headers=AUTH)
        check(status == 200, "GET %s answered %d, expected 200" % (path, status))
        return json.loads(body)

    def generation(self):
        return self.admin("/v1/admin/plugins")["generation"]

    def wait_generation(self, above, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            g = self.generation()
            if g > above:
                return g
            time.sleep(0.02)
        raise Failure("generation stayed at %d for %d s; events: %s" % (above, timeout, self.admin("/v1/admin/events")["events"][-3:]))

    def stop(self):
        code = stop_process(self.proc, 20)
        self.out.close()
        self.err.close()
        return code


def stopped_cleanly(server):
    """Stops serve (from a finally block); fails when it did not exit 0 on SIGTERM, unless
    the scenario is already failing (whose message then stays the one reported)."""
    failing = sys.exc_info()[0] is not None
    err = server.stderr()
    code = server.stop()
    check(failing or code == 0, "serve exited %s on SIGTERM, expected 0: %s" % (code, err[-1500:]))


# ---------------------------------------------------------------------------- scenarios

# The shipped plugins.json binds FileStorage by default and MemoryStorage in `testing`.
BACKEND_ARGS = {"file": (), "memory": ("--env", "testing")}


def signature_v2_manifest():
    """The shipped manifest with the S3 API serving Signature Version 2 as well (the key
    pair comes from the environment)."""
    with open(os.path.join(REPO, "plugins.json")) as f:
        m = json.load(f)
    m["s3"] = {"signatureV2": True}
    return json.dumps(m, indent=1)


def scenario_rclone(work, backend="file", signature_v2=False):
    """rclone (provider Other, path style; `v2_auth` against s3.signatureV2 with
    `signature_v2`): mkdir, copy 20 small files and a 20 MiB one (multipart: cutoff 8M,
    chunks 5M), lsf, check both ways, copy down, delete, rmdir."""
    rclone = tool("rclone")
    src = os.path.join(work, "src")
    names = write_tree(src, 20, seed=1)
    write_big(os.path.join(src, "big.bin"), 20 * MIB, seed=2)
    names = sorted(names + ["big.bin"])
    server = Server(work, manifest_text=signature_v2_manifest() if signature_v2 else None, args=BACKEND_ARGS[backend])
    try:
        conf = os.path.join(work, "rclone.conf")
        with open(conf, "w") as f:
            f.write("[pb]\ntype = s3\nprovider = Other\nenv_auth = false\naccess_key_id = %s\nsecret_access_key = %s\n"
                    "endpoint = %s\nregion = %s\nforce_path_style = true\n%s" % (
                        ACCESS_KEY, SECRET_KEY, server.endpoint, REGION, "v2_auth = true\n" if signature_v2 else ""))
        base = [rclone, "--config", conf, "--retries", "1", "--low-level-retries", "1", "--contimeout", "10s", "--timeout", "60s"]
        remote = "pb:rclone-bucket"
        run(base + ["mkdir", remote])
        out, _ = run(base + ["lsd", "pb:"])
        check("rclone-bucket" in out, "rclone lsd pb: after mkdir: expected rclone-bucket, found %r" % out)
        run(base + ["copy", src, remote + "/tree", "--s3-upload-cutoff", "8M", "--s3-chunk-size", "5M"], timeout=180)
        out, _ = run(base + ["lsf", "-R", "--files-only", remote + "/tree"])
        listed = sorted(out.split())
        check(listed == names, "rclone lsf -R: expected %d files %s..., found %d %s..." % (len(names), names[:3], len(listed), listed[:3]))
        out, _ = run(base + ["lsf", "--format", "ps", remote + "/tree/big.bin"])
        check(out.strip() == "big.bin;%d" % (20 * MIB), "rclone lsf big.bin: expected big.bin;%d, found %r" % (20 * MIB, out.strip()))
        # The 20 MiB file went up in parts: its ETag is the multipart one, md5-of-md5s "-4".
        head = boto3_client(server.endpoint).head_object(Bucket="rclone-bucket", Key="tree/big.bin")
        check(head["ETag"].strip('"').endswith("-4"), "big.bin's ETag %s: expected a 4-part multipart ETag (…-4)" % head["ETag"])
        run(base + ["check", src, remote + "/tree"], timeout=120)
        run(base + ["check", remote + "/tree", src], timeout=120)
        run(base + ["check", "--download", src, remote + "/tree"], timeout=120)
        down = os.path.join(work, "down")
        run(base + ["copy", remote + "/tree", down], timeout=180)
        same_trees(src, down, "rclone copy down")
        run(base + ["delete", remote])
        out, _ = run(base + ["lsf", "-R", remote])
        check(out.strip() == "", "rclone lsf after delete: expected nothing, found %r" % out[:300])
        run(base + ["rmdir", remote])
        out, _ = run(base + ["lsd", "pb:"])
        check("rclone-bucket" not in out, "rclone lsd pb: after rmdir: expected no rclone-bucket, found %r" % out)
        return "mkdir, copy of %d files (big.bin in 4 parts), lsf, check both ways and --download, copy down byte for byte, delete, rmdir" % len(names)
    finally:
        stopped_cleanly(server)


def scenario_s3cmd(work, backend="file", signature_v2=False):
    """s3cmd (signature v4, or v2 with `--signature-v2` against a manifest with
    s3.signatureV2; path style): mb, put of a small file and a 20 MiB one in 5 MiB parts,
    ls, get, sync a folder up and down, del, rb. Without s3.signatureV2, s3cmd
    --signature-v2 is refused (400 InvalidRequest)."""
    s3cmd = tool("s3cmd")
    server = Server(work, manifest_text=signature_v2_manifest() if signature_v2 else None, args=BACKEND_ARGS[backend])
    try:
        conf = os.path.join(work, "s3cmd.cfg")
        with open(conf, "w") as f:
            f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = 127.0.0.1:%d\nhost_bucket = 127.0.0.1:%d\n"
                    "bucket_location = %s\nuse_https = False\nsignature_v2 = False\ncheck_ssl_certificate = False\n"
                    "max_retries = 1\nprogress_meter = False\n" % (ACCESS_KEY, SECRET_KEY, server.s3_port, server.s3_port, REGION))
        base = [s3cmd, "-c", conf, "--no-progress"] + (["--signature-v2"] if signature_v2 else [])
        if not signature_v2:
            out, err = run(base + ["--signature-v2", "ls"], expect=None)
            check("InvalidRequest" in out + err and "Signature Version 2" in out + err,
                  "s3cmd --signature-v2 ls without s3.signatureV2: expected 400 InvalidRequest naming Signature Version 2, found %r" % (out + err)[-600:])
        bucket = "s3://s3cmd-bucket"
        run(base + ["mb", bucket])
        out, _ = run(base + ["ls"])
        check(bucket in out, "s3cmd ls after mb: expected %s, found %r" % (bucket, out))
        small = os.path.join(work, "small.txt")
        with open(small, "wb") as f:
            f.write(b"hello from s3cmd\n" * 100)
        big = os.path.join(work, "big.bin")
        write_big(big, 20 * MIB, seed=3)
        run(base + ["put", small, bucket + "/small.txt"])
        run(base + ["put", "--multipart-chunk-size-mb=5", big, bucket + "/big.bin"], timeout=180)
        parts = [r for r in server.s3_log() if r[0] == "UploadPart" and r[2].startswith("/s3cmd-bucket/big.bin?") and r[3] == 200]
        check(len(parts) == 4, "s3cmd put big.bin: expected 4 UploadPart requests answered 200 in the server's log, found %d" % len(parts))
        out, _ = run(base + ["ls", bucket + "/"])
        sizes = {}
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[-1].startswith(bucket + "/"):
                sizes[fields[-1][len(bucket) + 1:]] = fields[2]
        check(sizes == {"small.txt": str(os.path.getsize(small)), "big.bin": str(20 * MIB)},
              "s3cmd ls: expected small.txt %d and big.bin %d bytes, found %s (%r)" % (os.path.getsize(small), 20 * MIB, sizes, out))
        got = os.path.join(work, "got")
        os.mkdir(got)
        run(base + ["get", bucket + "/small.txt", os.path.join(got, "small.txt")])
        run(base + ["get", bucket + "/big.bin", os.path.join(got, "big.bin")], timeout=180)
        same_file(small, os.path.join(got, "small.txt"), "s3cmd get small.txt")
        same_file(big, os.path.join(got, "big.bin"), "s3cmd get big.bin")
        tree = os.path.join(work, "tree")
        count = len(write_tree(tree, 30, seed=4))
        run(base + ["sync", tree + "/", bucket + "/tree/"], timeout=180)
        out, _ = run(base + ["ls", "--recursive", bucket + "/tree/"])
        check(len(out.splitlines()) == count, "s3cmd ls --recursive after sync up: expected %d objects, found %d" % (count, len(out.splitlines())))
        # A second sync up has nothing to send (sizes and MD5s match the ETags).
        out, _ = run(base + ["sync", "--no-preserve", tree + "/", bucket + "/tree/"], timeout=120)
        check("upload:" not in out, "a second s3cmd sync up sent files again: %r" % out[:500])
        down = os.path.join(work, "down")
        os.mkdir(down)
        run(base + ["sync", bucket + "/tree/", down + "/"], timeout=180)
        same_trees(tree, down, "s3cmd sync down")
        run(base + ["del", bucket + "/small.txt"])
        run(base + ["del", "--recursive", "--force", bucket + "/"], timeout=120)
        out, _ = run(base + ["ls", "--recursive", bucket + "/"])
        check(out.strip() == "", "s3cmd ls after del: expected nothing, found %r" % out[:300])
        run(base + ["rb", bucket])
        out, _ = run(base + ["ls"])
        check(bucket not in out, "s3cmd ls after rb: expected no %s, found %r" % (bucket, out))
        if signature_v2:
            v2 = [r for r in server.s3_log() if r[3] == 200]
            check(len(v2) > 40, "s3cmd --signature-v2: expected its requests answered 200 in the server's log, found %d" % len(v2))
        return "%smb, put small and 20 MiB (4 parts), ls, get byte for byte, sync %d files up (again: nothing sent) and down, del, rb" % (
            "signature V2: " if signature_v2 else "", count)
    finally:
        stopped_cleanly(server)


NGINX_CONF = """
worker_processes 1;
%(user)s
pid %(work)s/nginx.pid;
error_log %(work)s/nginx-error.log info;
daemon off;
events { worker_connections 256; }
http {
    log_format s3 '$request_method $request_uri $status sha256=$http_x_amz_content_sha256 encoding=$http_content_encoding trailer=$http_x_amz_trailer decoded=$http_x_amz_decoded_content_length length=$request_length';
    access_log %(work)s/nginx-access.log s3;
    client_body_temp_path %(work)s/nginx-tmp/body;
    proxy_temp_path %(work)s/nginx-tmp/proxy;
    fastcgi_temp_path %(work)s/nginx-tmp/fastcgi;
    uwsgi_temp_path %(work)s/nginx-tmp/uwsgi;
    scgi_temp_path %(work)s/nginx-tmp/scgi;
    server {
        listen 127.0.0.1:%(port)d ssl;
        server_name 127.0.0.1 localhost;
        ssl_certificate %(work)s/cert.pem;
        ssl_certificate_key %(work)s/key.pem;
        location / {
            proxy_pass http://127.0.0.1:%(upstream)d;
            proxy_set_header Host $http_host;
            proxy_request_buffering off;
            proxy_buffering off;
            client_max_body_size 0;
            proxy_http_version 1.1;
            proxy_read_timeout 120s;
        }
    }
}
"""


def start_nginx(work, upstream):
    nginx = tool("nginx")
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", os.path.join(work, "key.pem"), "-out", os.path.join(work, "cert.pem")])
    os.makedirs(os.path.join(work, "nginx-tmp"))
    for attempt in range(3):
        port = free_port()
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF % {"work": work, "port": port, "upstream": upstream,
                                  "user": "user root;" if os.geteuid() == 0 else ""})
        proc = subprocess.Popen([nginx, "-p", work, "-e", os.path.join(work, "nginx-error.log"), "-c", conf], stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(work, "nginx.stderr"), "w"))
        deadline = time.time() + 10
        while time.time() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, port
            except OSError:
                time.sleep(0.1)
        stop_process(proc, 5, signal.SIGQUIT)
    with open(os.path.join(work, "nginx-error.log")) as f:
        raise Failure("nginx did not start: %s" % f.read()[-1000:])


def scenario_boto3_https_nginx(work):
    """boto3 over https through nginx: PutObject and UploadPart bodies go aws-chunked with
    STREAMING-UNSIGNED-PAYLOAD-TRAILER and a CRC32 trailer; every object reads back byte
    for byte (not with the chunk framing stored as its bytes)."""
    import boto3.s3.transfer
    import botocore
    version = tuple(int(x) for x in botocore.__version__.split(".")[:2])
    check(version >= (1, 36), "botocore %s: expected 1.36 or later (the first to send aws-chunked trailers by default)" % botocore.__version__)
    server = Server(work)
    nginx, port = None, None
    try:
        nginx, port = start_nginx(work, server.s3_port)
        s3 = boto3_client("https://127.0.0.1:%d" % port, verify=os.path.join(work, "cert.pem"))
        s3.create_bucket(Bucket="tls-bucket")
        rnd = random.Random(5)
        small = b"small object over https\n" * 40
        medium = rnd.randbytes(12 * MIB)
        big_path = os.path.join(work, "big.bin")
        write_big(big_path, 20 * MIB, seed=6)
        r = s3.put_object(Bucket="tls-bucket", Key="small.txt", Body=small)
        # S3 answers the trailer's checksum as x-amz-checksum-crc32, and boto3 shows it.
        crc = base64.b64encode(zlib.crc32(small).to_bytes(4, "big")).decode()
        check(r.get("ChecksumCRC32") == crc, "put_object's answer: expected ChecksumCRC32 %s (the trailer's, repeated), found %r"
              % (crc, r.get("ChecksumCRC32")))
        s3.put_object(Bucket="tls-bucket", Key="medium.bin", Body=medium)
        transfer = boto3.s3.transfer.TransferConfig(multipart_threshold=8 * MIB, multipart_chunksize=5 * MIB, max_concurrency=2)
        s3.upload_file(big_path, "tls-bucket", "big.bin", Config=transfer)
        for key, data in (("small.txt", small), ("medium.bin", medium)):
            body = s3.get_object(Bucket="tls-bucket", Key=key)["Body"].read()
            check(body == data, "get_object %s: expected %d bytes (sha256 %s), found %d (sha256 %s), starting %r" % (
                key, len(data), hashlib.sha256(data).hexdigest()[:16], len(body), hashlib.sha256(body).hexdigest()[:16], body[:40]))
        head = s3.head_object(Bucket="tls-bucket", Key="big.bin")
        check(head["ContentLength"] == 20 * MIB and head["ETag"].strip('"').endswith("-4"),
              "head_object big.bin: expected %d bytes and a 4-part ETag, found %s and %s" % (20 * MIB, head["ContentLength"], head["ETag"]))
        with open(big_path, "rb") as f:
            big = f.read()
        body = s3.get_object(Bucket="tls-bucket", Key="big.bin")["Body"].read()
        check(body == big, "get_object big.bin: expected %d bytes (sha256 %s), found %d (sha256 %s), starting %r" % (
            len(big), hashlib.sha256(big).hexdigest()[:16], len(body), hashlib.sha256(body).hexdigest()[:16], body[:40]))
        down = os.path.join(work, "big.down")
        s3.download_file("tls-bucket", "big.bin", down, Config=transfer)
        same_file(big_path, down, "download_file big.bin (ranged GETs)")
        # What went over the wire, from nginx's access log.
        with open(os.path.join(work, "nginx-access.log")) as f:
            lines = f.read().splitlines()
        puts = [line for line in lines if line.startswith("PUT ") and "tls-bucket/" in line.split()[1]]
        chunked = [line for line in puts if "sha256=STREAMING-UNSIGNED-PAYLOAD-TRAILER" in line and "aws-chunked" in line
                   and "trailer=x-amz-checksum-crc32" in line]
        parts = [line for line in chunked if "partNumber=" in line]
        check(len(puts) == 6, "nginx saw %d object PUTs, expected 6 (2 put_object + 4 parts): %s" % (len(puts), puts))
        check(len(chunked) == len(puts), "%d of %d PUTs were aws-chunked with a CRC32 trailer: %s" % (len(chunked), len(puts), puts))
        check(len(parts) == 4, "aws-chunked UploadPart requests: expected 4, found %d" % len(parts))
        failed = [line for line in lines if not re.match(r"^\S+ \S+ [23]\d\d ", line)]
        check(not failed, "requests through nginx that failed: %s" % failed[:5])
        return "botocore %s: 6 PUTs aws-chunked (STREAMING-UNSIGNED-PAYLOAD-TRAILER, x-amz-checksum-crc32), 4 of them parts; small, 12 MiB, 20 MiB read back byte for byte; PutObject answered the trailer's CRC32" % (
            botocore.__version__)
    finally:
        if nginx:
            stop_process(nginx, 10, signal.SIGQUIT)
        stopped_cleanly(server)


def hot_swap_manifest(name):
    """One FileStorage plugin named `name` over ./data in the testing environment, hot
    swap on. Swapping names stops one plugin instance and starts another over the same
    root folder, so the objects (and the bucket markers) live on."""
    return json.dumps({
        "schemaVersion": 1, "environment": "testing",
        "hotSwap": {"enabled": True, "debounceMilliseconds": 0, "preflightTimeoutSeconds": 20, "drainTimeoutSeconds": 30},
        "plugins": [{"name": name, "product": "FileStorage", "environments": ["testing"], "config": {"root": "data"}}],
    }, indent=1)


def scenario_sync_across_swaps(work):
    """aws s3 sync of 300 small files while the storage is swapped 4 times between two
    FileStorage plugins over one root folder (admin reload and SIGHUP by turns): exit 0,
    no retried or failed request, every file back byte for byte, the generation moved."""
    aws = tool("aws")
    server = Server(work, hot_swap_manifest("FilesA"), args=["--no-watch"])
    try:
        status, headers, _ = request(server.port, "PUT", "/v1/objects/before-swaps", body=b"x", headers={"Content-Type": "text/plain"})
        check(status == 200, "native PUT answered %d, expected 200" % status)
        first_generation = int(headers.get("x-plugboard-generation", "-1"))
        s3 = boto3_client(server.endpoint)
        s3.create_bucket(Bucket="sync-bucket")
        tree = os.path.join(work, "tree")
        count = len(write_tree(tree, 300, seed=7, sizes=(1, 20000)))
        env = aws_env()
        env["AWS_MAX_ATTEMPTS"] = "1"  # no retries: a failed request fails the sync
        env["AWS_RETRY_MODE"] = "standard"
        log_offset = len(server.s3_log())
        sync = subprocess.Popen([aws, "--endpoint-url", server.endpoint, "s3", "sync", "--no-progress", tree, "s3://sync-bucket/tree/"],
                                stdout=open(os.path.join(work, "sync.out"), "w"), stderr=open(os.path.join(work, "sync.err"), "w"),
                                env=dict(os.environ, **env))
        sync_started = time.time()
        swaps = []
        try:
            # Wait for the sync's first PUTs to land, then swap while it runs.
            objects = os.path.join(work, "data", "objects")
            deadline = time.time() + 60
            while len(os.listdir(objects)) < 2 + 5:  # the bucket marker, before-swaps, 5 of the sync's
                check(sync.poll() is None, "aws s3 sync ended (exit %s) before the first swap" % sync.returncode)
                check(time.time() < deadline, "aws s3 sync wrote no object in 60 s")
                time.sleep(0.05)
            for i in range(4):
                name = "FilesB" if i % 2 == 0 else "FilesA"
                g = server.generation()
                write_atomic(server.manifest, hot_swap_manifest(name))
                if i % 2 == 0:
                    status, _, body = request(server.port, "POST", "/v1/admin/reload", headers=AUTH, timeout=120)
                    outcome = json.loads(body)
                    check(status == 200 and outcome.get("result") == "applied", "admin reload to %s: expected 200 applied, found %d %s" % (name, status, outcome))
                    trigger = "admin"
                else:
                    server.proc.send_signal(signal.SIGHUP)
                    trigger = "SIGHUP"
                g = server.wait_generation(g)
                swaps.append((trigger, name, g, sync.poll() is None, time.time() - sync_started, time.time()))
                time.sleep(0.15)
            code = sync.wait(240)
            sync_seconds = time.time() - sync_started
        finally:
            stop_process(sync, 5)
        with open(os.path.join(work, "sync.err")) as f:
            sync_err = f.read()
        with open(os.path.join(work, "sync.out")) as f:
            sync_out = f.read()
        check(code == 0, "aws s3 sync exited %d, expected 0: %s" % (code, sync_err[-1500:]))
        check(sync_out.count("upload: ") == count, "aws s3 sync: expected %d uploads, found %d" % (count, sync_out.count("upload: ")))
        during = [s for s in swaps if s[3]]
        check(len(during) >= 3, "only %d of the %d swaps happened while the sync ran: %s" % (len(during), len(swaps), swaps))
        # The server's access log: no 4xx/5xx answer on the S3 port during the sync.
        log = server.s3_log()[log_offset:]
        bad = [r for r in log if r[3] >= 400]
        check(not bad, "the server logged %d failed S3 requests during the sync: %s" % (len(bad), bad[:3]))
        puts = [r for r in log if r[0] == "PutObject" and r[3] == 200]
        check(len(puts) == count, "the server logged %d PutObject answered 200 during the sync, expected %d" % (len(puts), count))
        amid = [r for r in puts if swaps[0][5] - 0.5 <= r[4] <= swaps[-1][5]]
        check(len(amid) >= 10, "only %d PutObject were answered while the swaps ran (%.1f s to %.1f s of the sync)" % (
            len(amid), swaps[0][4], swaps[-1][4]))
        # Every file reads back byte for byte, from the plugin instance of the last swap.
        listed = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="sync-bucket", Prefix="tree/"):
            listed += [o["Key"][len("tree/"):] for o in page.get("Contents", [])]
        expected = files_under(tree)
        check(sorted(listed) == expected, "list_objects_v2 after the sync: expected %d keys, found %d (missing %s)" % (
            len(expected), len(listed), sorted(set(expected) - set(listed))[:5]))
        differ = []
        for rel in expected:
            with open(os.path.join(tree, rel), "rb") as f:
                data = f.read()
            body = s3.get_object(Bucket="sync-bucket", Key="tree/" + rel)["Body"].read()
            if body != data:
                differ.append("%s (%d bytes expected, %d found)" % (rel, len(data), len(body)))
        check(not differ, "%d objects differ byte for byte after the swaps: %s" % (len(differ), differ[:3]))
        status, headers, body = request(server.port, "GET", "/v1/objects/before-swaps")
        last_generation = int(headers.get("x-plugboard-generation", "-1"))
        check(status == 200 and body == b"x", "the native object put before the swaps: expected 200 b'x', found %d %r" % (status, body[:50]))
        check(last_generation >= first_generation + 4, "X-Plugboard-Generation: expected at least %d after 4 swaps, found %d (first %d)" % (
            first_generation + 4, last_generation, first_generation))
        kinds = [e["kind"] for e in server.admin("/v1/admin/events")["events"]]
        check(kinds.count("reload_applied") == 4 and "reload_refused" not in kinds and "drain_forced" not in kinds,
              "events: expected 4 reload_applied, no reload_refused or drain_forced, found %s" % kinds)
        plugins = server.admin("/v1/admin/plugins")
        names = [p.get("name") for p in plugins.get("plugins", [])]
        check("FilesA" in names and "FilesB" not in names, "/v1/admin/plugins after the last swap: expected FilesA only, found %s" % names)
        return "%d files synced in %.1f s (exit 0, no retries, %d PutObject 200, %d of them while the swaps ran, no failed request) across %d swaps (%s), generation %d -> %d; all read back byte for byte" % (
            count, sync_seconds, len(puts), len(amid), len(swaps), ", ".join("%s->%s at %.1f s" % (t, n, at) for t, n, _, _, at, _ in swaps),
            first_generation, last_generation)
    finally:
        stopped_cleanly(server)


SCENARIOS = [
    ("rclone-file", scenario_rclone),
    ("rclone-memory", lambda work: scenario_rclone(work, "memory")),
    ("rclone-v2-file", lambda work: scenario_rclone(work, "file", signature_v2=True)),
    ("s3cmd-file", scenario_s3cmd),
    ("s3cmd-memory", lambda work: scenario_s3cmd(work, "memory")),
    ("s3cmd-v2-file", lambda work: scenario_s3cmd(work, "file", signature_v2=True)),
    ("boto3-https-nginx", scenario_boto3_https_nginx),
    ("sync-across-swaps", scenario_sync_across_swaps),
]


def main():
    wanted = sys.argv[2:]
    selected = [name for name, _ in SCENARIOS if not wanted or name in wanted]
    try:
        run_scenarios(SCENARIOS, wanted, "plugboard-s3tools-")
    except SystemExit as e:
        failed = e.code if isinstance(e.code, int) else 1
        if failed != 2 or set(wanted) <= set(selected):
            print("s3_tools: %d of %d scenarios passed, %d failed" % (len(selected) - failed, len(selected), failed), flush=True)
        raise


if __name__ == "__main__":
    main()
