#!/usr/bin/env python3
"""The S3 endpoint beside the native API, in one run (issue 12's benchmark).

One release `plugboard serve --listen ... --s3-listen ...` over the shipped plugins.json
(FileStorage), GET and PUT of a 1 KiB and a 1 MiB object with `wrk -t2 -c64`, through
`/v1/objects/...` and through S3 with every request's SigV4 signature verified by the
server. wrk replays one request signed by botocore at the start (a signature holds for 15
minutes of clock skew, and the server checks each one in full, so the verification cost
is paid per request as with any client); every request carries its body's SHA-256 in
`x-amz-content-sha256`, as boto3 and the AWS CLI send it over http (a GET the empty
body's), which the server checks against the body as it streams.
Rounds alternate which API goes first; the best round of each is compared (goal: the S3
endpoint >= 0.8x the native API's requests/s).

Then boto3 (8 threads, 64 KiB objects, put then get) against the S3 endpoint and against
moto_server in the same run, as a reference point for what an S3 client sees.

Usage: Benchmarks/s3-vs-native.py [SECONDS] [ROUNDS]     (default 8 3, about 4 minutes)
Needs: wrk, .venv with boto3 and moto[server], a release build of plugboard and FileStorage.
"""
import concurrent.futures
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, ".build", "release")
KEY_ID, SECRET = "AKIDPLUGBOARDBENCH", "plugboard-bench-secret"


def fail(message):
    print(f"s3-vs-native.py: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.1)
    fail(f"{url} never answered 200")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def signed_headers(method, url, body, key_id=KEY_ID, secret=SECRET):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    request = AWSRequest(method=method, url=url, data=body)
    # What boto3 and the AWS CLI send over http: the body's SHA-256, the empty body's for a GET.
    request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    S3SigV4Auth(Credentials(key_id, secret), "s3", "us-east-1").add_auth(request)
    return {k: v for k, v in request.headers.items() if k.lower() in ("authorization", "x-amz-date", "x-amz-content-sha256")}


def wrk(url, method, headers, body_file, seconds, work, connections=64):
    script = os.path.join(work, f"wrk-{abs(hash((url, method)))}.lua")
    with open(script, "w") as f:
        f.write(f'wrk.method = "{method}"\n')
        for name, value in headers.items():
            f.write(f'wrk.headers["{name}"] = "{value}"\n')
        if body_file:
            f.write(f'local f = io.open("{body_file}", "rb"); wrk.body = f:read("*all"); f:close()\n')
            f.write('wrk.headers["Content-Type"] = "application/octet-stream"\n')
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script, url],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    answers = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", out)) else 0
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    return rps, p99ms, non2xx, answers


def boto3_round(endpoint, bucket, data, threads=8, count=400, key_id=KEY_ID, secret=SECRET):
    import boto3
    from botocore.config import Config
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                          region_name="us-east-1",
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                        max_pool_connections=threads, retries={"max_attempts": 1}))
    try:
        client.create_bucket(Bucket=bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    results = {}
    for op in ("put", "get"):
        def one(i):
            if op == "put":
                client.put_object(Bucket=bucket, Key=f"obj-{i}", Body=data)
            else:
                got = client.get_object(Bucket=bucket, Key=f"obj-{i}")["Body"].read()
                if got != data:
                    raise RuntimeError(f"obj-{i}: read back {len(got)} bytes that differ from the {len(data)} written")
        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(count)))
        results[op] = count / (time.time() - start)
    return results



def stop_all(procs):
    """SIGTERM to every server started, then SIGKILL to any still there after 20 s."""
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()

def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    for tool in ("wrk",):
        if not shutil.which(tool):
            fail(f"{tool} not found; apt-get install -y {tool}")
    for name in ("plugboard", "libFileStorage.so"):
        if not os.path.exists(os.path.join(BIN, name)):
            fail(f"{BIN}/{name} not found; run swift build -c release")
    python_bin = os.path.join(REPO, ".venv", "bin")
    work = tempfile.mkdtemp(prefix="plugboard-s3-bench-")
    procs = []
    try:
        os.makedirs(os.path.join(work, "serve"))
        shutil.copy(os.path.join(REPO, "plugins.json"), os.path.join(work, "serve"))
        env = dict(os.environ, PLUGBOARD_S3_ACCESS_KEY_ID=KEY_ID, PLUGBOARD_S3_SECRET_ACCESS_KEY=SECRET)
        serve = subprocess.Popen([os.path.join(BIN, "plugboard"), "serve", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                                  "--manifest", "plugins.json", "--cache-dir", os.path.join(work, "cache")],
                                 cwd=os.path.join(work, "serve"), env=env, stdout=subprocess.PIPE,
                                 stderr=open(os.path.join(work, "serve.err"), "w"), text=True)
        procs.append(serve)
        native = serve.stdout.readline().strip().rsplit(" ", 1)[-1]
        s3 = serve.stdout.readline().strip().rsplit(" ", 1)[-1]
        if not native.startswith("http") or not s3.startswith("http"):
            fail("plugboard serve did not print its two addresses")
        wait_for(native + "/readyz")
        moto_port = free_port()
        moto = subprocess.Popen([os.path.join(python_bin, "moto_server"), "-H", "127.0.0.1", "-p", str(moto_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(moto)

        sizes = {"1KiB": 1024, "1MiB": 1 << 20}
        files = {}
        for label, size in sizes.items():
            files[label] = os.path.join(work, f"object-{label}")
            with open(files[label], "wb") as f:
                f.write(os.urandom(size))
            body = open(files[label], "rb").read()
            urllib.request.urlopen(urllib.request.Request(f"{native}/v1/objects/bench/get-{label}", data=body, method="PUT")).read()
        # The bucket `bench` through S3, and the same objects as S3 objects of it.
        import boto3
        from botocore.config import Config
        client = boto3.client("s3", endpoint_url=s3, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET, region_name="us-east-1",
                              config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        client.create_bucket(Bucket="bench")
        for label in sizes:
            client.put_object(Bucket="bench", Key=f"get-{label}", Body=open(files[label], "rb").read())

        load = open("/proc/loadavg").read().split()[:3]
        model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        print(f"machine: {os.cpu_count()} cores ({model}), {os.uname().sysname} {os.uname().release}, load average {' '.join(load)} at the start")
        print(f"plugboard serve: commit {commit}, the shipped plugins.json (FileStorage), --s3-listen; wrk -t2 -c64 -d{seconds}s, {rounds} rounds")
        results = {}
        for rnd in range(1, rounds + 1):
            for label in sizes:
                for op in ("GET", "PUT"):
                    order = ("native", "s3") if rnd % 2 else ("s3", "native")
                    for api in order:
                        body_file = files[label] if op == "PUT" else None
                        body = open(body_file, "rb").read() if body_file else b""
                        if api == "native":
                            url = f"{native}/v1/objects/bench/{op.lower()}-{label}"
                            headers = {}
                        else:
                            url = f"{s3}/bench/{op.lower()}-{label}"
                            headers = signed_headers(op, url, body)
                        before = cpu_seconds(serve.pid)
                        rps, p99, non2xx, answers = wrk(url, op, headers, body_file, seconds, work)
                        cpu = (cpu_seconds(serve.pid) - before) / max(answers, 1) * 1e6
                        results.setdefault((label, op, api), []).append((rps, p99, non2xx, cpu))
                        print(f"round {rnd}  {op:<4} {label:<5} {api:<7} {rps:9.0f} req/s   p99 {p99:8.2f} ms   non-2xx {non2xx:6d}   server CPU {cpu:7.1f} us/answer")
        if serve.poll() is not None:
            fail("plugboard serve died during the run: " + open(os.path.join(work, "serve.err")).read()[-2000:])
        print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])} at the end")
        print()
        print(f"best of {rounds} (the round with the most requests/s); goal: S3 >= 0.8x native")
        for label in sizes:
            for op in ("GET", "PUT"):
                n = max(results[(label, op, "native")], key=lambda r: r[0])
                s = max(results[(label, op, "s3")], key=lambda r: r[0])
                ratio = s[0] / n[0] if n[0] else 0
                cn = min(r[3] for r in results[(label, op, "native")])
                cs = min(r[3] for r in results[(label, op, "s3")])
                print(f"{op:<4} {label:<5} native {n[0]:9.0f} req/s p99 {n[1]:7.2f} ms non-2xx {n[2]} | S3 {s[0]:9.0f} req/s p99 {s[1]:7.2f} ms non-2xx {s[2]}"
                      f" | ratio {ratio:.2f}x ({'met' if ratio >= 0.8 else 'NOT met'}); server CPU per answer {cn:.1f} / {cs:.1f} us")

        # moto answers its root with an S3 listing (or an error status): either means it listens.
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{moto_port}/", timeout=2)
                break
            except urllib.error.HTTPError:
                break
            except Exception:
                time.sleep(0.2)
        data = os.urandom(64 << 10)
        print()
        print("boto3, 8 threads, 400 objects of 64 KiB, put then get (objects/s):")
        for name, endpoint in (("plugboard S3", s3), ("moto_server", f"http://127.0.0.1:{moto_port}")):
            r = boto3_round(endpoint, "boto3-bench", data)
            print(f"{name:<13} put {r['put']:7.0f}/s   get {r['get']:7.0f}/s")
    finally:
        stop_all(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
