#!/usr/bin/env python3
"""Plugboard's S3 endpoint beside Ceph's RADOS Gateway, and in front of it (issue 21's benchmarks).

Three S3 servers, measured in one run with the same clients:

- `plugboard serve --env testing --s3-listen` over MemoryStorage ("plugboard-mem");
- radosgw itself (Tests/e2e/ceph.sh: one OSD on memstore, beast), asked directly ("rgw");
- `plugboard serve --s3-listen` with S3Storage bound to an RGW bucket ("gateway"): every
  client request goes S3 endpoint -> S3Storage -> radosgw.

GET and PUT of a 1 KiB object with wrk (`-t2`, 64 connections, then 4), each request
signed once by botocore with the server's own key pair and replayed (the signed-request
replay of Benchmarks/s3-vs-native.py: every request's SigV4 is verified in full by each
server, and each PUT's body hashed against `x-amz-content-sha256`). Rounds rotate which
server goes first. For each run the script also records, from radosgw's admin socket
(`perf dump`, section `rgw`), how many requests RGW served per client answer (a GET
through the gateway is the object's GET and the bucket marker's HEAD), the CPU that
radosgw and the OSD spent per client answer, and how many TCP connections were opened
during the run beyond wrk's own (/proc/net/snmp ActiveOpens: the gateway's new
connections to RGW, since S3Storage keeps at most 4 idle per host).

Then boto3 (8 threads, 400 objects of 64 KiB, put then get) against the three.

Usage: Benchmarks/s3-gateway-rgw.py [SECONDS] [ROUNDS] [CONNECTIONS,...]   (default 8 3 64,4)
Uses the RGW of PLUGBOARD_RGW_ENDPOINT, PLUGBOARD_RGW_ACCESS_KEY_ID,
PLUGBOARD_RGW_SECRET_ACCESS_KEY, CEPH_CONF, CEPH_RGW_PID and CEPH_OSD_PID (the env file of
`Tests/e2e/ceph.sh start DIR`, loaded with `set -a; . DIR/env; set +a`) when they are set;
otherwise starts a cluster with ceph.sh in a scratch folder and stops it at the end.
Needs: wrk, .venv with boto3, Ceph 16.2 (ceph.sh), a release build of plugboard,
MemoryStorage and S3Storage.
"""
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, ".build", "release")
_spec = importlib.util.spec_from_file_location("s3_vs_native", os.path.join(REPO, "Benchmarks", "s3-vs-native.py"))
native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native)
KEY_ID, SECRET = native.KEY_ID, native.SECRET


def fail(message):
    print(f"s3-gateway-rgw.py: {message}", file=sys.stderr)
    sys.exit(1)


def start_serve(work, name, args, env):
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    serve = subprocess.Popen([os.path.join(BIN, "plugboard"), "serve", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                              "--cache-dir", os.path.join(folder, "cache")] + args,
                             cwd=folder, env=env, stdout=subprocess.PIPE,
                             stderr=open(os.path.join(folder, "serve.err"), "w"), text=True)
    api = serve.stdout.readline().strip().rsplit(" ", 1)[-1]
    s3 = serve.stdout.readline().strip().rsplit(" ", 1)[-1]
    if not api.startswith("http") or not s3.startswith("http"):
        serve.kill()
        fail(f"plugboard serve ({name}) did not print its two addresses; see {folder}/serve.err")
    native.wait_for(api + "/readyz", 60)
    return serve, s3


def client(endpoint, key_id, secret):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                        region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                                               retries={"max_attempts": 1}))


def rgw_counters(asok):
    out = subprocess.run(["ceph", "--admin-daemon", asok, "perf", "dump", "rgw"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return None
    rgw = json.loads(out.stdout)["rgw"]
    return {"req": rgw["req"], "get": rgw["get"], "put": rgw["put"], "failed": rgw["failed_req"]}


def active_opens():
    with open("/proc/net/snmp") as f:
        lines = [l.split() for l in f if l.startswith("Tcp:")]
    return int(lines[1][lines[0].index("ActiveOpens")])


def median(values):
    return statistics.median(values) if values else 0.0


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    connection_counts = [int(c) for c in (sys.argv[3] if len(sys.argv) > 3 else "64,4").split(",")]
    if not shutil.which("wrk"):
        fail("wrk not found; apt-get install -y wrk")
    for name in ("plugboard", "libMemoryStorage.so", "libS3Storage.so"):
        if not os.path.exists(os.path.join(BIN, name)):
            fail(f"{BIN}/{name} not found; run swift build -c release")
    work = tempfile.mkdtemp(prefix="plugboard-s3-rgw-bench-")
    procs = []
    cluster = None
    try:
        if not os.environ.get("PLUGBOARD_RGW_ENDPOINT"):
            cluster = os.path.join(work, "ceph")
            subprocess.run([os.path.join(REPO, "Tests", "e2e", "ceph.sh"), "start", cluster], check=True)
            for line in open(os.path.join(cluster, "env")):
                name, value = line.strip().split("=", 1)
                os.environ[name] = value
        for name in ("PLUGBOARD_RGW_ACCESS_KEY_ID", "PLUGBOARD_RGW_SECRET_ACCESS_KEY", "CEPH_CONF", "CEPH_RGW_PID", "CEPH_OSD_PID"):
            if not os.environ.get(name):
                fail(f"{name} is not set, but PLUGBOARD_RGW_ENDPOINT is: load all of ceph.sh's env file (set -a; . DIR/env; set +a)")
        rgw = os.environ["PLUGBOARD_RGW_ENDPOINT"]
        rgw_key, rgw_secret = os.environ["PLUGBOARD_RGW_ACCESS_KEY_ID"], os.environ["PLUGBOARD_RGW_SECRET_ACCESS_KEY"]
        rgw_pid, osd_pid = int(os.environ["CEPH_RGW_PID"]), int(os.environ["CEPH_OSD_PID"])
        asok = os.path.join(os.path.dirname(os.environ["CEPH_CONF"]), "run", "client.rgw.a.asok")
        if rgw_counters(asok) is None:
            fail(f"radosgw's admin socket {asok} did not answer `perf dump`")

        suffix = f"{os.getpid()}-{int(time.time())}"
        backing = f"plugboard-gateway-{suffix}"
        direct = f"rgw-bench-{suffix}"
        rgw_client = client(rgw, rgw_key, rgw_secret)
        rgw_client.create_bucket(Bucket=backing)
        rgw_client.create_bucket(Bucket=direct)

        env = dict(os.environ, PLUGBOARD_S3_ACCESS_KEY_ID=KEY_ID, PLUGBOARD_S3_SECRET_ACCESS_KEY=SECRET, SWIFT_BACKTRACE="enable=no")
        os.makedirs(os.path.join(work, "mem"))
        shutil.copy(os.path.join(REPO, "plugins.json"), os.path.join(work, "mem"))
        mem, mem_s3 = start_serve(work, "mem", ["--manifest", "plugins.json", "--env", "testing"], env)
        procs.append(mem)
        os.makedirs(os.path.join(work, "gateway"))
        with open(os.path.join(work, "gateway", "plugins.json"), "w") as f:
            json.dump({"schemaVersion": 1, "environment": "staging", "plugins": [{
                "name": "S3Storage", "product": "S3Storage",
                "config": {"bucket": backing, "endpoint": "${PLUGBOARD_RGW_ENDPOINT}", "region": "us-east-1",
                           "accessKeyId": "${PLUGBOARD_RGW_ACCESS_KEY_ID}",
                           "secretAccessKey": {"secret": "${PLUGBOARD_RGW_SECRET_ACCESS_KEY}"}}}]}, f, indent=2)
        gateway, gateway_s3 = start_serve(work, "gateway", ["--manifest", "plugins.json"], env)
        procs.append(gateway)

        body_file = os.path.join(work, "object-1KiB")
        with open(body_file, "wb") as f:
            f.write(os.urandom(1024))
        body = open(body_file, "rb").read()
        # name: (S3 endpoint, bucket, key pair, the Plugboard process or None)
        targets = {
            "plugboard-mem": (mem_s3, "bench", (KEY_ID, SECRET), mem),
            "rgw": (rgw, direct, (rgw_key, rgw_secret), None),
            "gateway": (gateway_s3, "bench", (KEY_ID, SECRET), gateway),
        }
        for name, (endpoint, bucket, (key_id, secret), _) in targets.items():
            c = client(endpoint, key_id, secret)
            if name != "rgw":
                c.create_bucket(Bucket=bucket)
            c.put_object(Bucket=bucket, Key="get-1KiB", Body=body)
            if c.get_object(Bucket=bucket, Key="get-1KiB")["Body"].read() != body:
                fail(f"{name}: get-1KiB read back differs from what was written")

        load = open("/proc/loadavg").read().split()[:3]
        model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        rgw_version = subprocess.run(["radosgw", "--version"], capture_output=True, text=True).stdout.strip()
        print(f"machine: {os.cpu_count()} cores ({model}), {os.uname().sysname} {os.uname().release}, "
              f"load average {' '.join(load)} at the start, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        frontends = next((l.split("=", 1)[1].strip() for l in open(os.environ["CEPH_CONF"]) if l.startswith("rgw frontends")), "?")
        print(f"plugboard: commit {commit}; {rgw_version.splitlines()[0] if rgw_version else 'radosgw'} (memstore, {frontends}); "
              f"wrk -t2 -d{seconds}s, connections {connection_counts}, {rounds} rounds")
        results = {}
        for connections in connection_counts:
            names = list(targets) if connections == connection_counts[0] else ["rgw", "gateway"]
            for rnd in range(1, rounds + 1):
                for op in ("GET", "PUT"):
                    order = names[(rnd - 1) % len(names):] + names[:(rnd - 1) % len(names)]
                    for name in order:
                        endpoint, bucket, (key_id, secret), proc = targets[name]
                        url = f"{endpoint}/{bucket}/{op.lower()}-1KiB"
                        headers = native.signed_headers(op, url, body if op == "PUT" else b"", key_id, secret)
                        before_cpu = native.cpu_seconds(proc.pid) if proc else 0.0
                        before_rgw = native.cpu_seconds(rgw_pid) + native.cpu_seconds(osd_pid)
                        before_req = rgw_counters(asok)
                        before_opens = active_opens()
                        rps, p99, non2xx, answers = native.wrk(url, op, headers, body_file if op == "PUT" else None, seconds, work,
                                                               connections=connections)
                        opens = active_opens() - before_opens - connections
                        after_req = rgw_counters(asok)
                        n = max(answers, 1)
                        row = {
                            "rps": rps, "p99": p99, "non2xx": non2xx,
                            "cpu": ((native.cpu_seconds(proc.pid) - before_cpu) / n * 1e6) if proc else None,
                            "rgw_cpu": (native.cpu_seconds(rgw_pid) + native.cpu_seconds(osd_pid) - before_rgw) / n * 1e6,
                            "rgw_req": (after_req["req"] - before_req["req"]) / n,
                            "rgw_get": (after_req["get"] - before_req["get"]) / n,
                            "rgw_put": (after_req["put"] - before_req["put"]) / n,
                            "rgw_failed": after_req["failed"] - before_req["failed"],
                            "opens": max(opens, 0) / n,
                        }
                        results.setdefault((connections, op, name), []).append(row)
                        own = f"{row['cpu']:7.1f}" if row["cpu"] is not None else "      -"
                        print(f"-c{connections:<3} round {rnd}  {op:<4} {name:<13} {rps:8.0f} req/s  p99 {p99:8.2f} ms  non-2xx {non2xx:5d}  "
                              f"plugboard CPU {own} us/answer  radosgw+OSD CPU {row['rgw_cpu']:7.1f} us/answer  "
                              f"RGW requests/answer {row['rgw_req']:.2f} (GET {row['rgw_get']:.2f}, PUT {row['rgw_put']:.2f}, failed {row['rgw_failed']})  "
                              f"new TCP connections/answer {row['opens']:.3f}", flush=True)
        for proc, name in ((mem, "plugboard-mem"), (gateway, "gateway")):
            if proc.poll() is not None:
                fail(f"plugboard serve ({name}) died during the run: " + open(os.path.join(work, name.split('-')[-1], "serve.err")).read()[-2000:])
        print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])} at the end")

        print()
        print(f"best round (most requests/s) and the median of {rounds} rounds; 'vs rgw' compares with radosgw measured in the same rounds")
        for connections in connection_counts:
            names = list(targets) if connections == connection_counts[0] else ["rgw", "gateway"]
            for op in ("GET", "PUT"):
                base = results[(connections, op, "rgw")]
                base_best = max(base, key=lambda r: r["rps"])
                for name in names:
                    rows = results[(connections, op, name)]
                    best = max(rows, key=lambda r: r["rps"])
                    med_rps, med_p99 = median([r["rps"] for r in rows]), median([r["p99"] for r in rows])
                    line = (f"-c{connections:<3} {op:<4} {name:<13} best {best['rps']:8.0f} req/s p99 {best['p99']:8.2f} ms | "
                            f"median {med_rps:8.0f} req/s p99 {med_p99:8.2f} ms | non-2xx {sum(r['non2xx'] for r in rows)}")
                    if name != "rgw":
                        ratio = best["rps"] / base_best["rps"]
                        p99_ratio = med_p99 / median([r["p99"] for r in base])
                        line += f" | vs rgw: {ratio:.2f}x req/s (best), {p99_ratio:.2f}x p99 (median)"
                        if name == "gateway":
                            line += f" [goal >= 0.9x and <= 1.2x: {'met' if ratio >= 0.9 and p99_ratio <= 1.2 else 'NOT met'}]"
                    line += (f" | RGW requests/answer {median([r['rgw_req'] for r in rows]):.2f}, radosgw+OSD CPU "
                             f"{median([r['rgw_cpu'] for r in rows]):.0f} us/answer")
                    if best["cpu"] is not None:
                        line += f", plugboard CPU {median([r['cpu'] for r in rows]):.0f} us/answer"
                    if name == "gateway":
                        line += f", new TCP connections/answer {median([r['opens'] for r in rows]):.3f}"
                    print(line)

        data = os.urandom(64 << 10)
        print()
        print(f"boto3, 8 threads, 400 objects of 64 KiB, put then get (objects/s), {rounds} rounds, best:")
        boto = {}
        for rnd in range(rounds):
            names = list(targets)
            for name in names[rnd % 3:] + names[:rnd % 3]:
                endpoint, _, (key_id, secret), _ = targets[name]
                before_req = rgw_counters(asok)
                r = native.boto3_round(endpoint, f"boto3-{suffix}" if name == "rgw" else "boto3-bench", data,
                                       key_id=key_id, secret=secret)
                after_req = rgw_counters(asok)
                r["rgw_req"] = (after_req["req"] - before_req["req"]) / 800
                boto.setdefault(name, []).append(r)
                print(f"round {rnd + 1}  {name:<13} put {r['put']:7.0f}/s   get {r['get']:7.0f}/s   RGW requests per object operation {r['rgw_req']:.2f}", flush=True)
        for name, rows in boto.items():
            print(f"{name:<13} put {max(r['put'] for r in rows):7.0f}/s   get {max(r['get'] for r in rows):7.0f}/s")
    finally:
        native.stop_all(procs)
        if cluster:
            subprocess.run([os.path.join(REPO, "Tests", "e2e", "ceph.sh"), "stop", cluster])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
