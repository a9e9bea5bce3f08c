#!/usr/bin/env python3
"""A stateless gateway fleet end to end: three `plugboard serve --s3-listen` hosts over one
shared backend (S3Storage bound to one moto_server bucket), behind HAProxy configured by
docs/examples/haproxy-gateway.cfg (round robin, /readyz health checks, retries with
redispatch). Checks that nothing of an upload lives in one host's memory:

  multipart   CreateMultipartUpload on host 1, UploadPart 1 on host 2, UploadPart 2 on
              host 3, ListParts on host 3 (both listed), ListMultipartUploads on host 2,
              CompleteMultipartUpload on host 2 and again on host 1 (the same answer, as a
              client whose answer was lost with its host gets); GET through HAProxy gives
              exactly the bytes (SHA-256); the object is in moto under the bucket's prefix
              and nothing of the upload is left there
  abort       an upload created on host 1, a part on host 2, aborted on host 3: gone from
              every host (ListMultipartUploads, ListParts, UploadPart answer NoSuchUpload)
              and from moto
  presigned   a presigned GET for the HAProxy endpoint answers 200 from each of the three
              hosts (HAProxy's log names them): any host with the same key pair verifies it
  sync-kill   `aws s3 sync` of 200 small files and three 12 MiB ones (multipart, 5 MiB
              parts) through HAProxy, host 2 killed with SIGKILL while it runs: the sync
              finishes (a second sync when the first reports failed files, which must then
              exit 0), and every object is listed and read back byte for byte; the
              output says how many retries the CLI made and what HAProxy saw
  rejoin      host2 started again on its ports: UP in HAProxy again, and it lists and reads
              what was written while it was down, and answers its share through HAProxy

Usage: gateway_fleet.py BUILD_FOLDER [STEP ...]   (BUILD_FOLDER: .build/release or .build/debug)

The steps share one fleet and run in the order above (a later one needs the bucket the
first makes); each prints one PASS or FAIL line, and the run stops at the first failure,
keeping its folder and printing the last lines of every log. The exit status is the
number of failed steps. Needs haproxy (Debian's, on the PATH or in /usr/sbin), and
moto[server], boto3 and awscli in the package's .venv (Tests/e2e/gateway-fleet.sh checks).
"""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from e2e_runner import check_wanted, run_steps, stop_each, stop_process
from haproxy import HAProxy
from hot_swap import start_moto
from s3_tools import (ACCESS_KEY, MIB, REGION, REPO, SECRET_KEY, Failure, Server, aws_env, boto3_client, check, files_under,
                      stopped_cleanly, tool, write_big, write_tree)

HAPROXY_CONFIG = os.path.join(REPO, "docs", "examples", "haproxy-gateway.cfg")
BACKING = "gateway-fleet"   # the moto bucket every host's S3Storage is bound to
BUCKET = "fleet"            # the bucket S3 clients see through the hosts
HOSTS = 3
# moto accepts any key pair; S3Storage reads it from the environment.
MOTO_ENV = {"AWS_ACCESS_KEY_ID": "moto-key", "AWS_SECRET_ACCESS_KEY": "moto-secret"}


def fleet_manifest(moto_endpoint):
    return json.dumps({
        "schemaVersion": 1, "environment": "staging",
        "plugins": [{"name": "S3Storage", "product": "S3Storage", "environments": ["staging"], "required": True,
                     "config": {"bucket": BACKING, "endpoint": moto_endpoint, "region": REGION, "pathStyle": True,
                                "timeoutSeconds": 30, "maxRetries": 3}}],
    }, indent=1)


def moto_client(endpoint):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=MOTO_ENV["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=MOTO_ENV["AWS_SECRET_ACCESS_KEY"], config=Config(s3={"addressing_style": "path"}))


def moto_keys(moto, prefix):
    keys = []
    for page in moto.get_paginator("list_objects_v2").paginate(Bucket=BACKING, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def error_code(call):
    """The S3 error code `call` fails with; fails itself when the call succeeds."""
    import botocore.exceptions
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    raise Failure("expected an S3 error, the request succeeded")


def gateway_haproxy(work, hosts):
    """HAProxy with docs/examples/haproxy-gateway.cfg, each host's S3 and check port given."""
    def environment(port):
        env = {"GATEWAY_BIND": "127.0.0.1:%d" % port}
        for i, host in enumerate(hosts, 1):
            env["GATEWAY_HOST%d_S3" % i] = "127.0.0.1:%d" % host.s3_port
            env["GATEWAY_HOST%d_CHECK_PORT" % i] = str(host.port)
        return env
    return HAProxy(work, HAPROXY_CONFIG, "plugboard_s3", environment, "GATEWAY_STATS_SOCKET")


class Fleet:
    """moto, the hosts and HAProxy; `stop` stops whatever `start` got to start."""

    def __init__(self, work):
        self.work = work
        self.moto_proc, self.hosts, self.haproxy = None, [], None
        self.killed = set()

    def start(self):
        work = self.work
        self.moto_proc, self.moto_endpoint = start_moto(work)
        self.moto = moto_client(self.moto_endpoint)
        self.moto.create_bucket(Bucket=BACKING)
        manifest = fleet_manifest(self.moto_endpoint)
        for i in range(1, HOSTS + 1):
            folder = os.path.join(work, "host%d" % i)
            os.mkdir(folder)
            self.hosts.append(Server(folder, manifest, args=["--no-watch"], env=MOTO_ENV))
        self.haproxy = gateway_haproxy(work, self.hosts)
        self.clients = [boto3_client(h.endpoint) for h in self.hosts]
        self.via = boto3_client(self.haproxy.endpoint)
        return "moto at %s, hosts on S3 ports %s, HAProxy at %s" % (
            self.moto_endpoint, ", ".join(str(h.s3_port) for h in self.hosts), self.haproxy.endpoint)

    def stop(self):
        """Stops everything, then fails naming what did not stop cleanly (a host that did
        not exit 0 on SIGTERM)."""
        stop_each([("haproxy", self.haproxy and self.haproxy.stop)]
                  + [("host%d" % (i + 1), host.stop if i in self.killed else (lambda h=host: stopped_cleanly(h)))
                     for i, host in enumerate(self.hosts)]
                  + [("moto", self.moto_proc and (lambda: stop_process(self.moto_proc, 10)))])

    def tails(self):
        logs = ["host%d/serve.err" % i for i in range(1, HOSTS + 1)] + ["host2-again/serve.err", "haproxy.log", "haproxy.err", "moto.err",
                                                                         "sync-1.out", "sync-1.err", "sync-2.out", "sync-2.err"]
        for name in logs:
            path = os.path.join(self.work, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-15:]
                if tail:
                    print("---- %s (last lines)\n%s" % (name, "".join(tail)), flush=True)


# ---------------------------------------------------------------------------- steps

def step_multipart(fleet):
    h1, h2, h3 = fleet.clients
    fleet.via.create_bucket(Bucket=BUCKET)
    key = "assembled/parts-from-three-hosts.bin"
    part1 = os.urandom(5 * MIB + 123)
    part2 = os.urandom(MIB + 7)
    upload = h1.create_multipart_upload(Bucket=BUCKET, Key=key, ContentType="application/octet-stream")["UploadId"]
    etag1 = h2.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=part1)["ETag"]
    etag2 = h3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=2, Body=part2)["ETag"]
    listed = [(p["PartNumber"], p["ETag"], p["Size"]) for p in h3.list_parts(Bucket=BUCKET, Key=key, UploadId=upload)["Parts"]]
    expected = [(1, etag1, len(part1)), (2, etag2, len(part2))]
    check(listed == expected, "ListParts on host 3: expected %s (part 1 went through host 2), found %s" % (expected, listed))
    uploads = [u["UploadId"] for u in h2.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])]
    check(upload in uploads, "ListMultipartUploads on host 2: expected upload %s (created on host 1), found %s" % (upload, uploads))
    parts = {"Parts": [{"PartNumber": 1, "ETag": etag1}, {"PartNumber": 2, "ETag": etag2}]}
    done = h2.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload, MultipartUpload=parts)["ETag"]
    check(done.strip('"').endswith("-2"), "CompleteMultipartUpload on host 2: expected a 2-part ETag, found %s" % done)
    again = h1.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload, MultipartUpload=parts)["ETag"]
    check(again == done, "CompleteMultipartUpload repeated on host 1: expected the first answer's ETag %s, found %s" % (done, again))
    want = hashlib.sha256(part1 + part2).hexdigest()
    body = fleet.via.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    got = hashlib.sha256(body).hexdigest()
    check(got == want, "GET through HAProxy: expected %d bytes, sha256 %s, found %d, sha256 %s" % (len(part1) + len(part2), want, len(body), got))
    etags = [c.head_object(Bucket=BUCKET, Key=key)["ETag"] for c in fleet.clients]
    check(etags == [done] * HOSTS, "HeadObject on hosts 1, 2, 3: expected ETag %s from each, found %s" % (done, etags))
    stored = fleet.moto.head_object(Bucket=BACKING, Key=BUCKET + "/" + key)["ContentLength"]
    check(stored == len(part1) + len(part2), "moto %s/%s/%s: expected %d bytes, found %d" % (BACKING, BUCKET, key, len(part1) + len(part2), stored))
    left = moto_keys(fleet.moto, "_plugboard-s3/uploads/%s/%s/" % (BUCKET, upload))
    check(not left, "moto: expected nothing left of the completed upload, found %s" % left)
    return "created on host 1, part 1 on host 2, part 2 on host 3, listed on 3, completed on 2 (and again on 1: same ETag %s); %d bytes read back through HAProxy with the right SHA-256, in moto as %s/%s" % (
        done, len(body), BUCKET, key)


def step_abort(fleet):
    h1, h2, h3 = fleet.clients
    key = "aborted/upload.bin"
    upload = h1.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    h2.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=os.urandom(64 * 1024))
    check(moto_keys(fleet.moto, "_plugboard-s3/uploads/%s/%s/" % (BUCKET, upload)), "moto: expected the upload's record and part before the abort, found none")
    h3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload)
    for i, client in enumerate(fleet.clients, 1):
        uploads = [u["UploadId"] for u in client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])]
        check(upload not in uploads, "ListMultipartUploads on host %d after the abort on host 3: still lists %s" % (i, upload))
        code = error_code(lambda: client.list_parts(Bucket=BUCKET, Key=key, UploadId=upload))
        check(code == "NoSuchUpload", "ListParts on host %d after the abort: expected NoSuchUpload, found %s" % (i, code))
    code = error_code(lambda: h2.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=2, Body=b"late part"))
    check(code == "NoSuchUpload", "UploadPart on host 2 after the abort on host 3: expected NoSuchUpload, found %s" % code)
    left = moto_keys(fleet.moto, "_plugboard-s3/uploads/%s/%s/" % (BUCKET, upload))
    check(not left, "moto after the abort: expected nothing of upload %s, found %s" % (upload, left))
    return "created on host 1, a part on host 2, aborted on host 3: NoSuchUpload on every host (ListParts, and UploadPart on host 2), not listed anywhere, nothing left in moto"


def step_presigned(fleet):
    import boto3
    from botocore.config import Config
    key = "presigned/one.txt"
    data = b"one URL, any host\n"
    fleet.via.put_object(Bucket=BUCKET, Key=key, Body=data, ContentType="text/plain")
    signer = boto3.client("s3", endpoint_url=fleet.haproxy.endpoint, region_name=REGION,
                          aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    url = signer.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=300)
    before = len(fleet.haproxy.log())
    for _ in range(HOSTS):
        with urllib.request.urlopen(url, timeout=30) as r:   # a new connection each: round robin moves on
            body = r.read()
            check(r.status == 200 and body == data, "presigned GET through HAProxy: expected 200 %r, found %d %r" % (data, r.status, body[:80]))
    fleet.haproxy.wait(lambda: len([l for l in fleet.haproxy.log()[before:] if l.method == "GET"]) >= HOSTS, "log lines of the presigned GETs", 10)
    lines = [l for l in fleet.haproxy.log()[before:] if l.method == "GET"]
    servers = sorted(l.server for l in lines)
    check(servers == ["host%d" % i for i in range(1, HOSTS + 1)] and all(l.status == 200 for l in lines),
          "presigned GETs: expected one answered 200 by each host, HAProxy logged %s" % [(l.server, l.status) for l in lines])
    return "one presigned URL (signed for the HAProxy endpoint) answered 200 by host1, host2 and host3"


def step_sync_kill(fleet):
    aws = tool("aws")
    work = fleet.work
    tree = os.path.join(work, "tree")
    small = write_tree(tree, 200, seed=23, sizes=(1, 20000))
    for i in range(1, 4):
        write_big(os.path.join(tree, "big-%d.bin" % i), 12 * MIB, seed=30 + i)
    expected = files_under(tree)
    check(len(expected) == len(small) + 3, "the source folder: expected %d files, found %d" % (len(small) + 3, len(expected)))
    config = os.path.join(work, "aws-config")
    with open(config, "w") as f:
        f.write("[default]\nregion = %s\ns3 =\n  addressing_style = path\n  multipart_threshold = 8MB\n"
                "  multipart_chunksize = 5MB\n  max_concurrent_requests = 10\n" % REGION)
    env = dict(os.environ, **aws_env())
    # The SDK's own retries, as a user runs it (standard mode, 5 attempts): what a killed
    # host costs is counted in its debug log ("Retry needed").
    env.update(AWS_CONFIG_FILE=config, AWS_RETRY_MODE="standard", AWS_MAX_ATTEMPTS="5")
    argv = [aws, "--debug", "--endpoint-url", fleet.haproxy.endpoint, "s3", "sync", "--no-progress", tree, "s3://%s/tree/" % BUCKET]

    def sync(n):
        return subprocess.Popen(argv, env=env, stdout=open(os.path.join(work, "sync-%d.out" % n), "w"),
                                stderr=open(os.path.join(work, "sync-%d.err" % n), "w"))

    def sync_log(n, name):
        with open(os.path.join(work, "sync-%d.%s" % (n, name)), errors="replace") as f:
            return f.read()

    logged = len(fleet.haproxy.log())
    counted = fleet.haproxy.counters()
    started = time.time()
    first = sync(1)
    try:
        # Killed once parts of the multipart files and a good share of the small files have
        # been answered, so that requests of both kinds are in flight on every host.
        def far_enough():
            check(first.poll() is None, "aws s3 sync ended (exit %s) before host 2 was killed" % first.returncode)
            lines = [l for l in fleet.haproxy.log()[logged:] if l.method == "PUT" and l.status == 200]
            return sum("partNumber=" in l.target for l in lines) >= 1 and sum("partNumber=" not in l.target for l in lines) >= 30
        fleet.haproxy.wait(far_enough, "UploadPart and PutObject answers through HAProxy", 120)
        victim = fleet.hosts[1]
        before_kill = len(fleet.haproxy.log())
        victim.proc.send_signal(signal.SIGKILL)
        killed_at = time.time()
        fleet.killed.add(1)
        victim.proc.wait(10)
        fleet.haproxy.wait(lambda: fleet.haproxy.servers()["host2"]["status"].startswith("DOWN"), "host2 DOWN after its SIGKILL", 30)
        down_after = time.time() - killed_at
        first_code = first.wait(300)
    finally:
        stop_process(first, 5)
    runs = [(1, first_code)]
    if first_code != 0:
        second = sync(2)
        try:
            runs.append((2, second.wait(300)))
        finally:
            stop_process(second, 5)
    took = time.time() - started
    last_run, last_code = runs[-1]
    check(last_code == 0, "aws s3 sync run %d exited %d, expected 0 (the run before it reported failures): %s" % (
        last_run, last_code, sync_log(last_run, "out")[-1500:]))
    retries = sum(sync_log(n, "err").count("Retry needed") for n, _ in runs)
    # The CLI names each file it gave up on ("upload failed: ...") on its standard error.
    failed_files = sum(sync_log(n, "out").count("upload failed:") + sync_log(n, "err").count("upload failed:") for n, _ in runs[:1])

    listed = []
    for page in fleet.via.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="tree/"):
        listed += [(o["Key"][len("tree/"):], o["Size"]) for o in page.get("Contents", [])]
    names = sorted(name for name, _ in listed)
    check(names == expected, "listing tree/ through HAProxy after the sync: expected %d objects, found %d (missing %s, extra %s)" % (
        len(expected), len(names), sorted(set(expected) - set(names))[:5], sorted(set(names) - set(expected))[:5]))
    differ = []
    for rel, size in listed:
        with open(os.path.join(tree, rel), "rb") as f:
            data = f.read()
        body = fleet.via.get_object(Bucket=BUCKET, Key="tree/" + rel)["Body"].read()
        if size != len(data) or hashlib.sha256(body).digest() != hashlib.sha256(data).digest():
            differ.append("%s (%d bytes expected, %d listed, %d read)" % (rel, len(data), size, len(body)))
    check(not differ, "%d objects differ from the source folder after the sync: %s" % (len(differ), differ[:3]))
    after_kill = [l for l in fleet.haproxy.log()[before_kill:] if l.method in ("PUT", "POST") and l.status == 200]
    check(len(after_kill) >= 20, "only %d uploads were answered after host2's kill: expected the sync to go on through the other hosts" % len(after_kill))
    # Multipart uploads the kill fell in the middle of: a part stored before it, completed after.
    parted = set(l.target.split("?")[0] for l in fleet.haproxy.log()[logged:before_kill] if "partNumber=" in l.target and l.status == 200)
    spanning = parted & set(l.target.split("?")[0] for l in after_kill if l.method == "POST" and "uploadId=" in l.target)
    leftover = fleet.via.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])

    during = fleet.haproxy.log()[logged:]
    client_errors = [l for l in during if l.failed()]
    counters = {name: value - counted[name] for name, value in fleet.haproxy.counters().items()}
    runs_text = "one run, exit 0" if len(runs) == 1 else "run 1 exit %d with %d files reported failed, run 2 exit 0 after sending %d files again" % (
        runs[0][1], failed_files, sync_log(2, "out").count("upload: "))
    # HAProxy's counters beside its log: it does not log every request the kill cut off
    # (its backend counts more requests than it logs), so the CLI's count is the one to trust.
    print("     sync-kill: %s; the CLI retried %d requests (\"Retry needed\" in its debug log); HAProxy passed %d requests "
          "to the hosts and logged %d, %d of them failed (%s); it counted %d connection retries (%d redispatched to another host), %d responses cut by a server "
          "(eresp %d, srv_abrt %d); host2 marked DOWN %.1f s after the kill; %d multipart uploads had parts stored before "
          "the kill and were completed after it; %d uploads in progress left" % (
              runs_text, retries, counters["stot"], len(during), len(client_errors),
              ", ".join("%s %s %d %s" % (l.server, l.method, l.status, l.termination) for l in client_errors[:6]) or "none",
              counters["wretr"], counters["wredis"], counters["eresp"] + counters["srv_abrt"], counters["eresp"],
              counters["srv_abrt"], down_after, len(spanning), len(leftover)), flush=True)
    return "%d files (3 of them multipart, 12 MiB in 5 MiB parts) synced in %.1f s across host2's SIGKILL (%s, %d CLI retries): every object listed and read back byte for byte" % (
        len(expected), took, runs_text, retries)


def step_rejoin(fleet):
    """host2 started again on its ports after its SIGKILL (sync-kill, or killed here): back
    in HAProxy's rotation, and it serves what was written while it was down, since it has
    nothing of its own to catch up on."""
    dead = fleet.hosts[1]
    if 1 not in fleet.killed:
        dead.proc.send_signal(signal.SIGKILL)
        dead.proc.wait(10)
        fleet.killed.add(1)
    dead.stop()
    folder = os.path.join(fleet.work, "host2-again")
    os.mkdir(folder)
    started = time.time()
    host = Server(folder, fleet_manifest(fleet.moto_endpoint), args=["--no-watch"], env=MOTO_ENV,
                  listen=("127.0.0.1:%d" % dead.port, "127.0.0.1:%d" % dead.s3_port))
    fleet.hosts[1] = host
    fleet.killed.discard(1)
    fleet.haproxy.wait(lambda: fleet.haproxy.servers()["host2"]["status"] == "UP", "host2 UP again", 30)
    back_after = time.time() - started
    client = boto3_client(host.endpoint)
    listed = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        listed += [o["Key"] for o in page.get("Contents", [])]
    tree = os.path.join(fleet.work, "tree")
    synced = sorted(k for k in listed if k.startswith("tree/"))
    expected = ["tree/" + rel for rel in files_under(tree)] if os.path.isdir(tree) else []
    check("assembled/parts-from-three-hosts.bin" in listed and synced == expected,
          "ListObjectsV2 on host2 started again: expected the object of step multipart and the %d of the sync, found %d keys: %s" % (
              len(expected), len(listed), listed[:5]))
    for key in [k for k in synced if k.startswith("tree/big-")]:
        with open(os.path.join(tree, key[len("tree/"):]), "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        got = hashlib.sha256(client.get_object(Bucket=BUCKET, Key=key)["Body"].read()).hexdigest()
        check(got == want, "GET %s from host2 started again: expected sha256 %s, found %s" % (key, want, got))
    before = len(fleet.haproxy.log())
    for _ in range(2 * HOSTS):
        fleet.via.head_object(Bucket=BUCKET, Key="assembled/parts-from-three-hosts.bin")
    fleet.haproxy.wait(lambda: len(fleet.haproxy.log()) - before >= 2 * HOSTS, "log lines of the HEADs", 10)
    answered = [l.server for l in fleet.haproxy.log()[before:] if l.method == "HEAD" and l.status == 200]
    check("host2" in answered, "HEADs through HAProxy after host2 came back: expected some answered by host2, found %s" % answered)
    return "host2 UP in HAProxy %.1f s after it was started again on its ports; lists %d keys and reads the multipart objects written while it was down; answers its share through HAProxy (%s)" % (
        back_after, len(listed), ", ".join(answered))


STEPS = [
    ("multipart", step_multipart),
    ("abort", step_abort),
    ("presigned", step_presigned),
    ("sync-kill", step_sync_kill),
    ("rejoin", step_rejoin),
]


def main():
    wanted = sys.argv[2:]
    check_wanted(STEPS, wanted, "step")
    if wanted and "multipart" not in wanted:
        wanted = ["multipart"] + wanted   # it makes the bucket the others use
    run_steps("gateway_fleet", STEPS, wanted, Fleet, "plugboard-gateway-fleet-", width=10)

if __name__ == "__main__":
    main()
