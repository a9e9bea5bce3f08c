#!/usr/bin/env python3
"""The S3 endpoint (`plugboard serve --s3-listen`) end to end, with the clients people use:
boto3, the AWS CLI and the MinIO Python SDK, plus requests built by hand (aws-chunked
uploads, signed and with trailers) for the refusals no SDK sends.

Usage: s3_clients.py BUILD_FOLDER [SCENARIO ...]      (BUILD_FOLDER: .build/release or .build/debug)
       s3_clients.py --target moto [SCENARIO ...]     (the same scenarios against moto_server)

Every scenario starts its own server (FileStorage under ./data, or MemoryStorage with
--env testing, from a copy of the repository's plugins.json) with its own key pair, runs
its steps, and prints one PASS or FAIL line; a failed step prints what it sent, what it
expected and what it found, and the scenario goes on with its next step, so one report
names every failure. The exit status is the number of failed scenarios.

`--target moto` runs the scenarios against moto_server instead (an S3-compatible server
in the .venv): a step that fails there too is the client's or the test's fault, not
Plugboard's. moto checks no signatures, so the refusals it cannot make are reported as
"moto does not check" there and do not fail.

Scenarios (each name ends in the backend: -file, -memory, or -file-isolated, FileStorage in a worker
process of its own, "isolation": "process"):
  boto3-*     buckets, put/get/head with metadata, a 20 MiB multipart upload_file (ETag
              "-3"), ranges, paginated V2 and V1 listings with delimiters, an odd key,
              presigned GET and PUT through curl, conditional PUT and GET, response-*
              overrides, list_object_versions paged, CopyObject, DeleteObjects (quiet and
              not), BucketNotEmpty, 501 for what is not served, the key length rule;
              flexible checksums as botocore sends them (upload_file with a full-object
              CRC32 value, ChecksumCRC32= and a composite
              ChecksumSHA256= on complete_multipart_upload, CopyObject with
              ChecksumAlgorithm, BadDigest for a wrong single-object checksum)
  awscli-*    mb, cp small and 20 MiB both ways, s3api head-object, ls, sync of 20 files
              both ways, presign (SigV2 by default: refused; SigV4 fetched with curl),
              s3api delete-objects, rm --recursive, rb
  minio-*     make_bucket, put_object with a known length and of a stream of unknown
              length, get_object, fput_object 12 MiB (multipart), fget_object,
              remove_object, remove_bucket
  refusals-*  no signature, skewed date, wrong x-amz-content-sha256 / Content-MD5, wrong
              secret, unknown key, SigV2, expired presigned URLs, aws-chunked with a tampered
              chunk signature (a middle chunk and the final one), the three aws-chunked
              forms done right (the trailer's checksum repeated in the answer), CRC32,
              SHA-256 and SHA-1 trailers that do not match: each refusal checked to have
              stored nothing
  vhost-file  --s3-domain: the bucket in Host
  limits-file --max-body-bytes: a larger PutObject is 400 EntityTooLarge with its request
              ID, before its body is read, and stores nothing
  credentials the manifest's s3.credentials (one secret through ${VAR}), with the
              environment pair and without it
  sigv2-file  s3.signatureV2: boto3 with signature_version="s3" (put/get/list, multipart
              upload_file, a V2 presigned GET and an expired one, a V2 POST form, a wrong
              secret, an unknown key), SigV4 beside it; refusals-* checks V2 is 400
              InvalidRequest without it (the AWS CLI v1 signs SigV4 here whatever its
              s3.signature_version says)
  hotswap     a swap to a backend without the bucket and the upload (NoSuchBucket,
              NoSuchUpload), and back: the upload completes

Needs boto3, awscli and minio in the package's .venv (.ci/run installs them).
"""
import base64
import binascii
import datetime
import gzip
import hashlib
import hmac
import http.client
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from e2e_runner import free_port, request, run_scenarios, stop_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
REGION = "us-east-1"
ADMIN = "adm1n-s3-e2e"
ACCESS_KEY = "AKIDPLUGBOARDTEST"
MiB = 1024 * 1024

TARGET = "plugboard"
BUILD = os.path.join(REPO, ".build", "release")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def expect_equal(what, expected, found):
    if expected != found:
        raise Failure("%s: expected %s, found %s" % (what, short(expected), short(found)))


def short(value, limit=300):
    if isinstance(value, (bytes, bytearray)):
        if len(value) > 64:
            return "%d bytes (sha256 %s…, starting %r)" % (len(value), hashlib.sha256(value).hexdigest()[:16], bytes(value[:24]))
        return repr(bytes(value))
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MiB), b""):
            h.update(block)
    return h.hexdigest()


def random_file(path, size, seed):
    rnd = random.Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, MiB)
            f.write(rnd.randbytes(n))
            left -= n
    return path


def write_atomic(path, text):
    tmp = path + ".tmp-%d" % random.randrange(1 << 30)
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def multipart_etag(path, part_size):
    """S3's ETag for an object completed from parts of `part_size`: the MD5 of the parts'
    MD5s, then '-' and the number of parts."""
    digests = []
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(part_size), b""):
            digests.append(hashlib.md5(block).digest())
    return '"%s-%d"' % (hashlib.md5(b"".join(digests)).hexdigest(), len(digests))


# MARK: steps: every step of a scenario runs, and a scenario fails naming all that failed

class Steps:
    """`with steps("put_object small"):` runs one step; an exception in it is recorded (and
    printed, with botocore's request and response when there is one) and the scenario
    goes on. `finish()` raises naming the failed steps, else returns the summary."""

    def __init__(self, scenario):
        self.scenario = scenario
        self.passed = []
        self.failed = []
        self.notes = []
        self.skipped = []
        self.name = None

    def __call__(self, name):
        self.name = name
        return self

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        name = self.name
        if error is None:
            self.passed.append(name)
            return False
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            return False
        if isinstance(error, NotChecked):
            self.skipped.append(name)
            print("  note %s / %s: %s" % (self.scenario, name, error), flush=True)
            return True
        self.failed.append(name)
        detail = describe(error)
        print("  FAIL %s / %s: %s" % (self.scenario, name, detail), flush=True)
        if not isinstance(error, Failure) and not is_client_error(error):
            print("       " + "".join(traceback.format_exception(kind, error, tb)[-3:]).replace("\n", "\n       "), flush=True)
        return True

    def note(self, text):
        self.notes.append(text)

    def finish(self):
        total = len(self.passed) + len(self.failed) + len(self.skipped)
        skipped = (", %d not checkable on moto" % len(self.skipped)) if self.skipped else ""
        if self.failed:
            raise Failure("%d of %d steps failed%s: %s" % (len(self.failed), total, skipped, "; ".join(self.failed)))
        extra = (" (%s)" % "; ".join(self.notes)) if self.notes else ""
        return "%d of %d steps passed%s%s" % (len(self.passed), total, skipped, extra)


class NotChecked(Exception):
    """What moto does not check (signatures): a note, not a failure, on --target moto."""


def payload_forms(values):
    """The x-amz-content-sha256 values a client sent, by kind (a hex digest, or a form
    such as UNSIGNED-PAYLOAD or STREAMING-AWS4-HMAC-SHA256-PAYLOAD)."""
    forms = set()
    for v in values:
        v = v.decode() if isinstance(v, bytes) else v
        forms.add("a SHA-256 of the body" if re.fullmatch("[0-9a-f]{64}", v) else "none (presigned)" if v == "-" else v)
    return ", ".join(sorted(forms))


def is_boto_error(error):
    """A botocore ClientError (modelled errors such as BucketAlreadyOwnedByYou are subclasses)."""
    from botocore.exceptions import ClientError
    return isinstance(error, ClientError)


def is_client_error(error):
    return is_boto_error(error) or type(error).__name__ in ("S3Error", "CalledProcessError")


def describe(error):
    """A failure as the report needs it: for a botocore ClientError the operation, the S3
    code, message, status and request ID; for a minio S3Error its code and message."""
    if is_boto_error(error):
        r = error.response
        meta = r.get("ResponseMetadata", {})
        e = r.get("Error", {})
        return "%s answered %s %s: %s (x-amz-request-id %s)" % (
            getattr(error, "operation_name", "?"), meta.get("HTTPStatusCode"), e.get("Code"),
            e.get("Message"), meta.get("RequestId"))
    if type(error).__name__ == "S3Error":  # minio's
        return "minio S3Error %s: %s (resource %s, request id %s)" % (
            error.code, error.message, error._resource, error._request_id)
    return "%s: %s" % (type(error).__name__, error)


# MARK: the servers

class PlugboardS3:
    """`plugboard serve --s3-listen` in `work`, on a copy of plugins.json: FileStorage
    under ./data, or MemoryStorage (`--env testing`)."""

    def __init__(self, work, backend, extra_args=(), manifest_text=None, env_pair=True, extra_env=None):
        self.work = work
        self.backend = backend
        self.secret = "pb-secret/" + binascii.hexlify(os.urandom(12)).decode()
        self.access_key = ACCESS_KEY
        self.manifest = os.path.join(work, "plugins.json")
        if manifest_text is None and backend == "file-isolated":
            # The shipped manifest with FileStorage in a worker process of its own: the
            # same clients must not see a difference.
            with open(os.path.join(REPO, "plugins.json")) as f:
                m = json.load(f)
            for plugin in m["plugins"]:
                if plugin["name"] == "FileStorage":
                    plugin["isolation"] = "process"
                    plugin["sandbox"] = {"readWrite": [plugin["config"]["root"]]}
            write_atomic(self.manifest, json.dumps(m, indent=1))
        elif manifest_text is None:
            shutil.copy(os.path.join(REPO, "plugins.json"), self.manifest)
        else:
            write_atomic(self.manifest, manifest_text)
        plugboard = os.path.join(BUILD, "plugboard")
        check(os.access(plugboard, os.X_OK), "%s not found" % plugboard)
        env = dict(os.environ, SWIFT_BACKTRACE="enable=no", PLUGBOARD_ADMIN_TOKEN=ADMIN)
        env.pop("PLUGBOARD_S3_ACCESS_KEY_ID", None)
        env.pop("PLUGBOARD_S3_SECRET_ACCESS_KEY", None)
        if env_pair:
            env.update(PLUGBOARD_S3_ACCESS_KEY_ID=self.access_key, PLUGBOARD_S3_SECRET_ACCESS_KEY=self.secret)
        env.update(extra_env or {})
        args = [plugboard, "serve", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                "--manifest", "plugins.json", "--cache-dir", "./cache", "--log-level", "info"]
        if backend == "memory":
            args += ["--env", "testing"]
        args += list(extra_args)
        self.out = open(os.path.join(work, "serve.out"), "w+")
        self.err = open(os.path.join(work, "serve.err"), "w+")
        self.proc = subprocess.Popen(args, cwd=work, env=env, stdout=self.out, stderr=self.err)
        try:
            self.wait_ready()
        except BaseException:
            # Never leave a server behind: one that did not get ready is stopped here.
            stop_process(self.proc, 10)
            raise
        self.endpoint = "http://127.0.0.1:%d" % self.s3_port
        self.label = "plugboard/%s" % backend

    def wait_ready(self):
        self.port = self.s3_port = None
        lines = []
        deadline = time.time() + 60
        while time.time() < deadline and self.s3_port is None:
            self.out.seek(0)
            lines = self.out.read().splitlines()
            for line in lines:
                if line.startswith("plugboard serve: listening on http://"):
                    self.port = int(line.rsplit(":", 1)[1])
                elif line.startswith("plugboard serve: S3 API listening on http://"):
                    self.s3_port = int(line.rsplit(":", 1)[1])
            if self.proc.poll() is not None:
                raise Failure("serve exited with %s before listening: %s" % (self.proc.returncode, self.stderr()[-2000:]))
            time.sleep(0.05)
        check(self.port and self.s3_port, "serve did not print both listening lines in 60 s; stdout: %r" % lines)
        last = None
        while time.time() < deadline:
            try:
                status, _, body = request(self.port, "GET", "/readyz", timeout=5)
                last = (status, body[:400])
                if status == 200:
                    break
            except OSError as e:
                last = e
            if self.proc.poll() is not None:
                raise Failure("serve exited with %s before it was ready: %s" % (self.proc.returncode, self.stderr()[-2000:]))
            time.sleep(0.1)
        else:
            raise Failure("GET /readyz did not answer 200 in 60 s; its last answer: %s" % short(last, 600))

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def swap(self, manifest_text):
        """Rewrites the manifest and reloads it (POST /v1/admin/reload); fails unless applied."""
        write_atomic(self.manifest, manifest_text)
        status, _, body = request(self.port, "POST", "/v1/admin/reload", headers={"Authorization": "Bearer " + ADMIN}, timeout=120)
        outcome = json.loads(body or b"{}")
        check(status == 200 and outcome.get("result") == "applied",
              "POST /v1/admin/reload: expected 200 applied, found %d %s" % (status, short(outcome, 600)))

    def stop(self):
        """SIGTERM; the exit status must be 0, and serve must still have been running."""
        early = self.proc.poll()
        status = stop_process(self.proc, 30)
        self.out.close()
        self.err.close()
        check(early is None, "serve had already exited (status %s) before the scenario ended: a crash, or a signal from "
              "outside (an orderly exit logs \"stopped accepting\" in serve.err)" % early)
        check(status == 0, "serve exited with %s after SIGTERM, expected 0" % status)


class MotoS3:
    """moto_server on a free port: an S3-compatible server that accepts any key pair."""

    def __init__(self, work, backend):
        self.work = work
        self.backend = backend
        self.access_key = ACCESS_KEY
        self.secret = "moto-secret/" + binascii.hexlify(os.urandom(6)).decode()
        self.s3_port = free_port()
        self.err = open(os.path.join(work, "serve.err"), "w+")
        self.proc = subprocess.Popen([os.path.join(VENV_BIN, "moto_server"), "-H", "127.0.0.1", "-p", str(self.s3_port)],
                                     cwd=work, stdout=self.err, stderr=subprocess.STDOUT)
        try:
            self.wait_ready()
        except BaseException:
            stop_process(self.proc, 10)
            raise
        self.endpoint = "http://127.0.0.1:%d" % self.s3_port
        self.label = "moto"

    def wait_ready(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                status, _, _ = request(self.s3_port, "GET", "/", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise Failure("moto_server exited with %s" % self.proc.returncode)
            time.sleep(0.1)
        else:
            raise Failure("moto_server did not answer in 30 s")

    def stop(self):
        stop_process(self.proc, 10)
        self.err.close()


def start(work, backend, extra_args=()):
    return MotoS3(work, backend) if TARGET == "moto" else PlugboardS3(work, backend, extra_args)


def with_server(backend, body, extra_args=(), manifest_text=None):
    """A scenario: a server, `body(work, server, steps)`, the server stopped (SIGTERM, exit
    0 checked) even when the body fails."""
    def scenario(work):
        server = (PlugboardS3(work, backend, extra_args, manifest_text) if manifest_text
                  else start(work, backend, extra_args))
        steps = Steps("%s" % server.label)
        try:
            body(work, server, steps)
        finally:
            with steps("serve stops on SIGTERM with status 0"):
                server.stop()
        return steps.finish()
    return scenario


def not_on_moto(condition, message):
    """A refusal moto does not make (it checks no signatures): a note on moto, a failure here."""
    if not condition:
        if TARGET == "moto":
            raise NotChecked("moto does not check this: " + message)
        raise Failure(message)


def moto_differs(what, expected, found):
    """A check where moto answers otherwise than S3 (a moto quirk): a note on moto."""
    if expected != found:
        if TARGET == "moto":
            raise NotChecked("moto answers otherwise than Plugboard here: %s: expected %s, found %s" % (what, short(expected), short(found)))
        raise Failure("%s: expected %s, found %s" % (what, short(expected), short(found)))


# MARK: boto3

def curl(what, url, *args, fail=True):
    """`curl URL` as a user runs it on a presigned URL; returns what curl wrote.
    With `fail`, a non-2xx answer or transport error fails the step, naming `what`."""
    argv = ["curl", "-sS", "--max-time", "60"] + (["--fail-with-body"] if fail else []) + list(args) + [url]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=90)
    if fail:
        expect_equal("curl of %s: exit status (stderr %r)" % (what, p.stderr.decode(errors="replace")[:300]), 0, p.returncode)
    return p.stdout


def boto3_client(server, secret=None, signature_version="s3v4", access_key=None):
    import boto3
    from botocore.config import Config
    return boto3.client(
        "s3", endpoint_url=server.endpoint, region_name=REGION,
        aws_access_key_id=access_key or server.access_key, aws_secret_access_key=secret or server.secret,
        config=Config(signature_version=signature_version, s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=120))


def client_error(call, *args, **kwargs):
    """The ClientError `call` raises (code, status, error); fails when it succeeds."""
    from botocore.exceptions import ClientError
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return e.response.get("Error", {}).get("Code"), e.response.get("ResponseMetadata", {}).get("HTTPStatusCode"), e
    raise Failure("%s succeeded, expected an error" % getattr(call, "__name__", call))


def expect_missing(s3, bucket, key):
    """Nothing stored under `key`: HEAD is 404 and a listing of its prefix leaves it out."""
    code, status, _ = client_error(s3.head_object, Bucket=bucket, Key=key)
    expect_equal("HEAD %s/%s after the refusal (nothing stored)" % (bucket, key), 404, status)
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])]
    expect_equal("listing prefix %s after the refusal" % key, [], listed)


def boto3_scenario(work, server, steps):
    from boto3.s3.transfer import TransferConfig
    s3 = boto3_client(server)
    sent = []   # (operation, x-amz-content-sha256) as boto3 sent them
    s3.meta.events.register("before-send.s3.*", lambda request, **kw: sent.append(
        (kw.get("event_name", "").split(".")[-1], request.headers.get("x-amz-content-sha256", b"-"))))
    bucket = "boto3-e2e"

    with steps("create_bucket, head_bucket, list_buckets"):
        r = s3.create_bucket(Bucket=bucket)
        expect_equal("CreateBucket status", 200, r["ResponseMetadata"]["HTTPStatusCode"])
        r = s3.head_bucket(Bucket=bucket)
        expect_equal("HeadBucket status", 200, r["ResponseMetadata"]["HTTPStatusCode"])
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        check(bucket in names, "ListBuckets: expected %s among the buckets, found %s" % (bucket, names))
        # us-east-1 answers 200 to creating a bucket one owns again (AWS's legacy rule);
        # 409 BucketAlreadyOwnedByYou is what other regions answer.
        r = s3.create_bucket(Bucket=bucket)
        expect_equal("CreateBucket again in us-east-1: status", 200, r["ResponseMetadata"]["HTTPStatusCode"])
        code, status, _ = client_error(s3.head_bucket, Bucket="no-such-bucket-e2e")
        expect_equal("HeadBucket of a bucket never made: status", 404, status)

    small = b"Plugboard small object\n" + bytes(range(256))
    with steps("put_object small with metadata and content type; get_object; head_object"):
        r = s3.put_object(Bucket=bucket, Key="docs/small.bin", Body=small, ContentType="application/x-plugboard-test",
                          Metadata={"color": "blue", "owner-id": "42"})
        md5 = '"%s"' % hashlib.md5(small).hexdigest()
        expect_equal("PutObject ETag", md5, r["ETag"])
        g = s3.get_object(Bucket=bucket, Key="docs/small.bin")
        expect_equal("GetObject body", small, g["Body"].read())
        expect_equal("GetObject metadata", {"color": "blue", "owner-id": "42"}, g["Metadata"])
        expect_equal("GetObject ContentType", "application/x-plugboard-test", g["ContentType"])
        expect_equal("GetObject ETag", md5, g["ETag"])
        h = s3.head_object(Bucket=bucket, Key="docs/small.bin")
        expect_equal("HeadObject ContentLength", len(small), h["ContentLength"])
        expect_equal("HeadObject ETag", md5, h["ETag"])
        expect_equal("HeadObject metadata", {"color": "blue", "owner-id": "42"}, h["Metadata"])
        code, status, _ = client_error(s3.get_object, Bucket=bucket, Key="docs/never-put")
        expect_equal("GetObject of a key never put", ("NoSuchKey", 404), (code, status))

    with steps("conditional requests: If-None-Match * on PUT, If-None-Match / If-Match on GET"):
        md5 = '"%s"' % hashlib.md5(small).hexdigest()
        try:
            s3.put_object(Bucket=bucket, Key="docs/small.bin", Body=b"must not replace", IfNoneMatch="*")
            found = ("success", 200)
        except Exception as e:
            if not is_boto_error(e):
                raise
            found = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
        moto_differs("PutObject If-None-Match: * over an existing key", ("PreconditionFailed", 412), found)
        expect_equal("the object after the conditional PUT", small, s3.get_object(Bucket=bucket, Key="docs/small.bin")["Body"].read())
        code, status, _ = client_error(s3.get_object, Bucket=bucket, Key="docs/small.bin", IfNoneMatch=md5)
        expect_equal("GetObject If-None-Match: its ETag", 304, status)
        code, status, _ = client_error(s3.get_object, Bucket=bucket, Key="docs/small.bin", IfMatch='"0123456789abcdef0123456789abcdef"')
        expect_equal("GetObject If-Match: another ETag", ("PreconditionFailed", 412), (code, status))

    big = random_file(os.path.join(work, "big.bin"), 20 * MiB, 1)
    with steps("upload_file 20 MiB (multipart, 8 MiB parts), download_file, ETag -3"):
        cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=3)
        s3.upload_file(big, bucket, "big/random.bin", Config=cfg)
        h = s3.head_object(Bucket=bucket, Key="big/random.bin")
        expect_equal("HeadObject ContentLength of the multipart object", 20 * MiB, h["ContentLength"])
        check(re.fullmatch(r'"[0-9a-f]{32}-3"', h["ETag"]), 'multipart ETag: expected "<32 hex>-3", found %s' % h["ETag"])
        expect_equal("multipart ETag (MD5 of the parts' MD5s)", multipart_etag(big, 8 * MiB), h["ETag"])
        back = os.path.join(work, "big.back")
        s3.download_file(bucket, "big/random.bin", back, Config=cfg)
        expect_equal("download_file sha256", sha256_file(big), sha256_file(back))

    with steps("get_object with Range: 206 and the bytes"):
        with open(big, "rb") as f:
            data = f.read()
        for spec, lo, hi in [("bytes=100-199", 100, 199), ("bytes=8388600-8388700", 8388600, 8388700),
                             ("bytes=-10", len(data) - 10, len(data) - 1)]:
            g = s3.get_object(Bucket=bucket, Key="big/random.bin", Range=spec)
            expect_equal("Range %s status" % spec, 206, g["ResponseMetadata"]["HTTPStatusCode"])
            expect_equal("Range %s Content-Range" % spec, "bytes %d-%d/%d" % (lo, hi, len(data)), g.get("ContentRange"))
            expect_equal("Range %s body" % spec, data[lo:hi + 1], g["Body"].read())
        code, status, _ = client_error(s3.get_object, Bucket=bucket, Key="docs/small.bin", Range="bytes=100000-")
        expect_equal("Range past the end", ("InvalidRange", 416), (code, status))
        del data

    with steps("get_object with response-* overrides (ResponseContentType, ResponseContentDisposition, ResponseCacheControl)"):
        g = s3.get_object(Bucket=bucket, Key="docs/small.bin", ResponseContentType="text/x-override",
                          ResponseContentDisposition='attachment; filename="x.bin"', ResponseCacheControl="no-store")
        expect_equal("overridden Content-Type", "text/x-override", g.get("ContentType"))
        expect_equal("overridden Content-Disposition", 'attachment; filename="x.bin"', g.get("ContentDisposition"))
        expect_equal("overridden Cache-Control", "no-store", g.get("CacheControl"))
        expect_equal("the body under overrides", small, g["Body"].read())

    with steps("list_object_versions of the unversioned bucket: every object once, as version null, paged"):
        versions, marker, version_marker, pages = [], None, None, 0
        while True:
            kwargs = {"Bucket": bucket, "Prefix": "docs/", "MaxKeys": 2}
            if marker is not None:
                kwargs.update(KeyMarker=marker, VersionIdMarker=version_marker)
            r = s3.list_object_versions(**kwargs)
            pages += 1
            versions += r.get("Versions", [])
            if not r.get("IsTruncated"):
                break
            marker, version_marker = r.get("NextKeyMarker"), r.get("NextVersionIdMarker")
            check(pages < 50, "list_object_versions never ended")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="docs/").get("Contents", [])]
        expect_equal("keys listed by version (each once, in order)", keys, [v["Key"] for v in versions])
        moto_differs("every VersionId", ["null"] * len(versions), [v.get("VersionId") for v in versions])
        check(all(v.get("IsLatest") for v in versions), "every version is the latest: %s" % versions[:3])
        check(pages > 1 or len(keys) <= 2, "%d keys in %d pages of at most 2" % (len(keys), pages))

    keys = ["tree/%s/%02d.txt" % (folder, i) for folder in "abc" for i in range(10)] + ["tree/top-%d.txt" % i for i in range(3)]
    with steps("list_objects_v2 pagination over 33 keys in 3 folders (Prefix, Delimiter, MaxKeys)"):
        for k in keys:
            s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
        pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="tree/", Delimiter="/",
                                                                  PaginationConfig={"PageSize": 2}))
        prefixes = [p["Prefix"] for page in pages for p in page.get("CommonPrefixes", [])]
        contents = [o["Key"] for page in pages for o in page.get("Contents", [])]
        expect_equal("ListObjectsV2 Delimiter=/ common prefixes", ["tree/a/", "tree/b/", "tree/c/"], prefixes)
        expect_equal("ListObjectsV2 Delimiter=/ keys", ["tree/top-0.txt", "tree/top-1.txt", "tree/top-2.txt"], contents)
        expect_equal("ListObjectsV2 Delimiter=/ MaxKeys=2: pages", 3, len(pages))
        pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="tree/b/",
                                                                  PaginationConfig={"PageSize": 3}))
        listed = [o["Key"] for page in pages for o in page.get("Contents", [])]
        expect_equal("ListObjectsV2 Prefix=tree/b/ MaxKeys=3 keys", sorted(k for k in keys if k.startswith("tree/b/")), listed)
        expect_equal("ListObjectsV2 Prefix=tree/b/ MaxKeys=3 pages", 4, len(pages))
        expect_equal("KeyCount of the first page", 3, pages[0]["KeyCount"])
        check(pages[0]["IsTruncated"] and not pages[-1]["IsTruncated"], "IsTruncated: expected true on the first page and false on the last, found %s and %s"
              % (pages[0]["IsTruncated"], pages[-1]["IsTruncated"]))
        sizes = {o["Key"]: o["Size"] for page in pages for o in page["Contents"]}
        expect_equal("Size in the listing", len("tree/b/00.txt"), sizes["tree/b/00.txt"])
        everything = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 7})
                      for o in page.get("Contents", [])]
        expect_equal("ListObjectsV2 of the whole bucket", sorted(keys + ["big/random.bin", "docs/small.bin"]), everything)
        v1 = list(s3.get_paginator("list_objects").paginate(Bucket=bucket, Prefix="tree/", Delimiter="/", PaginationConfig={"PageSize": 2}))
        moto_differs("ListObjects (V1) Delimiter=/ MaxKeys=2 common prefixes", ["tree/a/", "tree/b/", "tree/c/"],
                     [p["Prefix"] for page in v1 for p in page.get("CommonPrefixes", [])])
        expect_equal("ListObjects (V1) Delimiter=/ keys", ["tree/top-0.txt", "tree/top-1.txt", "tree/top-2.txt"],
                     [o["Key"] for page in v1 for o in page.get("Contents", [])])

    odd = "odd keys/café ü+&=%20;?#.txt"
    with steps("a key with spaces, UTF-8 and URL characters: put, listed (encoding-type=url), get"):
        s3.put_object(Bucket=bucket, Key=odd, Body=b"odd")
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="odd keys/").get("Contents", [])]
        expect_equal("ListObjectsV2 of the odd key (boto3 asks encoding-type=url and decodes)", [odd], listed)
        expect_equal("GetObject of the odd key", b"odd", s3.get_object(Bucket=bucket, Key=odd)["Body"].read())
        s3.delete_object(Bucket=bucket, Key=odd)

    with steps("a signed Date header with a numeric zone (botocore writes -0000) instead of x-amz-date"):
        dated = boto3_client(server)
        dates = []
        # Any Date makes botocore sign with Date, rewritten by email.utils.formatdate.
        dated.meta.events.register("before-sign.s3.*", lambda request, **kw: request.headers.__setitem__("Date", "set"))
        dated.meta.events.register("before-send.s3.*", lambda request, **kw: dates.append(
            (request.headers.get("Date"), request.headers.get("X-Amz-Date"))))
        dated.put_object(Bucket=bucket, Key="date/numeric-zone", Body=b"dated")
        expect_equal("GetObject signed with Date", b"dated", dated.get_object(Bucket=bucket, Key="date/numeric-zone")["Body"].read())
        date, amz_date = dates[0]
        date = date.decode() if isinstance(date, bytes) else date
        check(date is not None and date.endswith(" -0000") and amz_date is None,
              "botocore's Date: expected an RFC 2822 date ending -0000 and no X-Amz-Date, found Date %r, X-Amz-Date %r" % (date, amz_date))
        s3.delete_object(Bucket=bucket, Key="date/numeric-zone")

    with steps("Content-Encoding is stored without aws-chunked (PutObject, CreateMultipartUpload, CopyObject REPLACE)"):
        gz = gzip.compress(b"plugboard gzip body\n" * 10)
        s3.put_object(Bucket=bucket, Key="ce/put.gz", Body=gz, ContentEncoding="gzip, aws-chunked")
        moto_differs("PutObject Content-Encoding 'gzip, aws-chunked' stored as",
                     "gzip", s3.head_object(Bucket=bucket, Key="ce/put.gz").get("ContentEncoding"))
        s3.put_object(Bucket=bucket, Key="ce/only", Body=b"x", ContentEncoding="aws-chunked")
        moto_differs("PutObject Content-Encoding 'aws-chunked' stored as",
                     None, s3.head_object(Bucket=bucket, Key="ce/only").get("ContentEncoding"))
        up = s3.create_multipart_upload(Bucket=bucket, Key="ce/mpu.gz", ContentEncoding="AWS-Chunked ,gzip")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="ce/mpu.gz", UploadId=up, PartNumber=1, Body=gz)["ETag"]
        s3.complete_multipart_upload(Bucket=bucket, Key="ce/mpu.gz", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
        moto_differs("CreateMultipartUpload Content-Encoding 'AWS-Chunked ,gzip' stored as",
                     "gzip", s3.head_object(Bucket=bucket, Key="ce/mpu.gz").get("ContentEncoding"))
        s3.copy_object(Bucket=bucket, Key="ce/copy.gz", CopySource={"Bucket": bucket, "Key": "ce/only"},
                       MetadataDirective="REPLACE", ContentEncoding="gzip,aws-chunked")
        moto_differs("CopyObject REPLACE Content-Encoding 'gzip,aws-chunked' stored as",
                     "gzip", s3.head_object(Bucket=bucket, Key="ce/copy.gz").get("ContentEncoding"))
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in ["ce/put.gz", "ce/only", "ce/mpu.gz", "ce/copy.gz"]]})

    with steps("an empty ContinuationToken is none: ListObjectsV2 lists from the start"):
        for k in ["empty-token/a", "empty-token/b"]:
            s3.put_object(Bucket=bucket, Key=k, Body=b"x")
        try:
            found = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="empty-token/", ContinuationToken="").get("Contents", [])]
        except Exception as e:
            if not is_boto_error(e):
                raise
            found = describe(e)
        moto_differs("ListObjectsV2 with ContinuationToken=''", ["empty-token/a", "empty-token/b"], found)
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "empty-token/a"}, {"Key": "empty-token/b"}]})

    prefix = "enc/n\nl é+% "
    with steps("encoding-type=url as boto3 asks for it: every listing's keys, prefixes and markers come back as put"):
        # A newline, a space, non-ASCII, and + and % (which a missing encoding would turn
        # into a space or an escape when boto3 decodes).
        names = [prefix + "a", prefix + "dir/1", prefix + "dir/2", prefix + "z"]
        for k in names:
            try:
                s3.put_object(Bucket=bucket, Key=k, Body=b"x")
                put = 200
            except Exception as e:
                if not is_boto_error(e):
                    raise
                put = describe(e)
            moto_differs("PutObject of %r" % k, 200, put)
        r = s3.list_objects(Bucket=bucket, Prefix=prefix, Delimiter="/", Marker=prefix, MaxKeys=2)
        expect_equal("ListObjects (V1) Prefix", prefix, r.get("Prefix"))
        expect_equal("ListObjects (V1) Marker", prefix, r.get("Marker"))
        expect_equal("ListObjects (V1) keys", [prefix + "a"], [o["Key"] for o in r.get("Contents", [])])
        moto_differs("ListObjects (V1) common prefixes", [prefix + "dir/"], [p["Prefix"] for p in r.get("CommonPrefixes", [])])
        moto_differs("ListObjects (V1) NextMarker", prefix + "dir/", r.get("NextMarker"))
        r = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/", StartAfter=prefix + "a")
        expect_equal("ListObjectsV2 Prefix", prefix, r.get("Prefix"))
        moto_differs("ListObjectsV2 StartAfter", prefix + "a", r.get("StartAfter"))
        expect_equal("ListObjectsV2 keys", [prefix + "z"], [o["Key"] for o in r.get("Contents", [])])
        expect_equal("ListObjectsV2 common prefixes", [prefix + "dir/"], [p["Prefix"] for p in r.get("CommonPrefixes", [])])
        r = s3.list_object_versions(Bucket=bucket, Prefix=prefix, KeyMarker=prefix, MaxKeys=2)
        expect_equal("ListObjectVersions Prefix", prefix, r.get("Prefix"))
        moto_differs("ListObjectVersions KeyMarker", prefix, r.get("KeyMarker"))
        expect_equal("ListObjectVersions keys", names[:2], [v["Key"] for v in r.get("Versions", [])])
        moto_differs("ListObjectVersions NextKeyMarker", prefix + "dir/1", r.get("NextKeyMarker"))
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in names]})

    control = "ctl/\x01a\x1fb\ufffec"
    with steps("a key with characters XML 1.0 cannot carry: listed and deleted in documents boto3 parses"):
        from botocore.handlers import set_list_objects_encoding_type_url
        s3.put_object(Bucket=bucket, Key=control, Body=b"ctl")
        exact = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="ctl/").get("Contents", [])]
        expect_equal("ListObjectsV2 with encoding-type=url (boto3's own): the exact key", [control], exact)
        plain = boto3_client(server)
        plain.meta.events.unregister("before-parameter-build.s3.ListObjectsV2", set_list_objects_encoding_type_url)
        shown = "ctl/\ufffda\ufffdb\ufffdc"
        try:
            listed = [o["Key"] for o in plain.list_objects_v2(Bucket=bucket, Prefix="ctl/").get("Contents", [])]
        except Exception as e:
            listed = describe(e)
        try:
            r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": control}]})
            deleted = ([d["Key"] for d in r.get("Deleted", [])], r.get("Errors", []))
        except Exception as e:
            deleted = describe(e)
        try:
            status = s3.head_object(Bucket=bucket, Key=control)["ResponseMetadata"]["HTTPStatusCode"]
        except Exception as e:
            if not is_boto_error(e):
                raise
            status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        # Gone either way, so that the bucket empties later (moto cannot read the
        # DeleteObjects body botocore writes for such a key).
        s3.delete_object(Bucket=bucket, Key=control)
        moto_differs("ListObjectsV2 without encoding-type, parsed by boto3 (U+FFFD for what XML 1.0 cannot carry)", [shown], listed)
        moto_differs("DeleteObjects of the key, parsed by boto3: Deleted and Errors", ([shown], []), deleted)
        expect_equal("HeadObject of the key after DeleteObjects", 404, status)

    if TARGET != "moto":
        with steps("the native API sees BUCKET/KEY and the bucket's marker under _plugboard-s3/"):
            status, _, body = request(server.port, "GET", "/v1/objects/" + urllib.parse.quote(bucket + "/docs/small.bin", safe=""))
            expect_equal("native GET /v1/objects/%s%%2Fdocs%%2Fsmall.bin: status" % bucket, 200, status)
            expect_equal("native GET body", small, body)
            marker = "_plugboard-s3/buckets/" + bucket
            status, _, _ = request(server.port, "HEAD", "/v1/objects/" + urllib.parse.quote(marker, safe=""))
            expect_equal("native HEAD of the bucket marker %s" % marker, 200, status)

    with steps("presigned GET and PUT with curl (what a user hands a presigned URL to)"):
        url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "docs/small.bin"}, ExpiresIn=300)
        expect_equal("presigned GET body", small, curl("the presigned GET", url))
        payload = os.urandom(70000)
        local = os.path.join(work, "presigned-put.bin")
        with open(local, "wb") as f:
            f.write(payload)
        url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "docs/presigned.bin"}, ExpiresIn=300)
        # --upload-file sends the bytes as they are (PUT, no form encoding).
        status = curl("the presigned PUT", url, "-o", "/dev/null", "-w", "%{http_code}", "--upload-file", local)
        expect_equal("presigned PUT status", "200", status.decode())
        expect_equal("object put through the presigned URL, read back", payload,
                     s3.get_object(Bucket=bucket, Key="docs/presigned.bin")["Body"].read())

    with steps("copy_object (metadata copied, then replaced)"):
        r = s3.copy_object(Bucket=bucket, Key="docs/copy.bin", CopySource={"Bucket": bucket, "Key": "docs/small.bin"})
        expect_equal("CopyObject ETag", '"%s"' % hashlib.md5(small).hexdigest(), r["CopyObjectResult"]["ETag"])
        g = s3.get_object(Bucket=bucket, Key="docs/copy.bin")
        expect_equal("copy's body", small, g["Body"].read())
        expect_equal("copy's metadata (MetadataDirective COPY)", {"color": "blue", "owner-id": "42"}, g["Metadata"])
        expect_equal("copy's content type", "application/x-plugboard-test", g["ContentType"])
        s3.copy_object(Bucket=bucket, Key="docs/copy2.bin", CopySource="%s/docs/small.bin" % bucket,
                       MetadataDirective="REPLACE", Metadata={"shade": "green"}, ContentType="text/plain")
        h = s3.head_object(Bucket=bucket, Key="docs/copy2.bin")
        expect_equal("copy's metadata (MetadataDirective REPLACE)", {"shade": "green"}, h["Metadata"])
        expect_equal("copy's content type (REPLACE)", "text/plain", h["ContentType"])

    with steps("delete_objects of a batch, Quiet false and true"):
        batch = ["del/%d" % i for i in range(6)]
        for k in batch:
            s3.put_object(Bucket=bucket, Key=k, Body=b"x")
        r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch[:3] + ["del/never-put"]], "Quiet": False})
        expect_equal("DeleteObjects (Quiet false) Deleted", sorted(batch[:3] + ["del/never-put"]), sorted(d["Key"] for d in r.get("Deleted", [])))
        expect_equal("DeleteObjects (Quiet false) Errors", [], r.get("Errors", []))
        r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch[3:]], "Quiet": True})
        moto_differs("DeleteObjects (Quiet true) Deleted", [], r.get("Deleted", []))
        expect_equal("DeleteObjects (Quiet true) Errors", [], r.get("Errors", []))
        left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="del/").get("Contents", [])]
        expect_equal("keys under del/ after both deletes", [], left)

    with steps("complete_multipart_upload: If-None-Match refused on an existing key, object untouched; a repeated Complete answers the same"):
        s3.put_object(Bucket=bucket, Key="cond/taken", Body=b"first", ContentType="text/plain")
        up = s3.create_multipart_upload(Bucket=bucket, Key="cond/taken")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="cond/taken", UploadId=up, PartNumber=1, Body=b"second")["ETag"]
        parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
        code, status, _ = client_error(s3.complete_multipart_upload, Bucket=bucket, Key="cond/taken", UploadId=up,
                                       MultipartUpload=parts, IfNoneMatch="*")
        expect_equal("CompleteMultipartUpload with If-None-Match: * over an object", ("PreconditionFailed", 412), (code, status))
        expect_equal("the object after the refused Complete", b"first", s3.get_object(Bucket=bucket, Key="cond/taken")["Body"].read())
        s3.abort_multipart_upload(Bucket=bucket, Key="cond/taken", UploadId=up)
        up = s3.create_multipart_upload(Bucket=bucket, Key="cond/fresh")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="cond/fresh", UploadId=up, PartNumber=1, Body=b"only")["ETag"]
        parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
        first = s3.complete_multipart_upload(Bucket=bucket, Key="cond/fresh", UploadId=up, MultipartUpload=parts, IfNoneMatch="*")
        again = s3.complete_multipart_upload(Bucket=bucket, Key="cond/fresh", UploadId=up, MultipartUpload=parts)
        expect_equal("the ETag of a repeated Complete", first["ETag"], again["ETag"])
        expect_equal("the object completed once", b"only", s3.get_object(Bucket=bucket, Key="cond/fresh")["Body"].read())

    with steps("checksums kept: put_object and a CRC32 multipart upload, answered with ChecksumMode, GetObjectAttributes"):
        body = b"checksummed body\n" * 100
        put_answer = s3.put_object(Bucket=bucket, Key="sum/one", Body=body, ChecksumAlgorithm="SHA256")
        got = s3.head_object(Bucket=bucket, Key="sum/one", ChecksumMode="ENABLED")
        expect_equal("HeadObject ChecksumSHA256 after PutObject", put_answer.get("ChecksumSHA256"), got.get("ChecksumSHA256"))
        check(got.get("ChecksumSHA256") is not None, "HeadObject with ChecksumMode: expected ChecksumSHA256, found none in %s" % sorted(got))
        # boto3 checks the checksum of a whole GET against the bytes when it is answered.
        expect_equal("GetObject with ChecksumMode: body", body, s3.get_object(Bucket=bucket, Key="sum/one", ChecksumMode="ENABLED")["Body"].read())
        up = s3.create_multipart_upload(Bucket=bucket, Key="sum/many", ChecksumAlgorithm="CRC32")
        expect_equal("CreateMultipartUpload ChecksumAlgorithm", "CRC32", up.get("ChecksumAlgorithm"))
        parts = []
        pieces = [b"a" * (5 * 1024 * 1024), b"tail"]
        for number, piece in enumerate(pieces, 1):
            r = s3.upload_part(Bucket=bucket, Key="sum/many", UploadId=up["UploadId"], PartNumber=number, Body=piece, ChecksumAlgorithm="CRC32")
            parts.append({"PartNumber": number, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
        listed = s3.list_parts(Bucket=bucket, Key="sum/many", UploadId=up["UploadId"])
        moto_differs("ListParts ChecksumCRC32 of each part", [p["ChecksumCRC32"] for p in parts], [p.get("ChecksumCRC32") for p in listed["Parts"]])
        done = s3.complete_multipart_upload(Bucket=bucket, Key="sum/many", UploadId=up["UploadId"], MultipartUpload={"Parts": parts})
        check((done.get("ChecksumCRC32") or "").endswith("-2"), "CompleteMultipartUpload ChecksumCRC32: expected a composite value ending -2, found %r" % done.get("ChecksumCRC32"))
        got = s3.head_object(Bucket=bucket, Key="sum/many", ChecksumMode="ENABLED")
        expect_equal("HeadObject ChecksumCRC32 of the completed object", done.get("ChecksumCRC32"), got.get("ChecksumCRC32"))
        attributes = s3.get_object_attributes(Bucket=bucket, Key="sum/many", ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize", "StorageClass"])
        expect_equal("GetObjectAttributes ObjectSize", sum(len(p) for p in pieces), attributes.get("ObjectSize"))
        expect_equal("GetObjectAttributes TotalPartsCount", 2, attributes.get("ObjectParts", {}).get("TotalPartsCount"))
        expect_equal("GetObjectAttributes ETag", done["ETag"].strip('"'), attributes.get("ETag"))
        moto_differs("GetObjectAttributes Checksum", done.get("ChecksumCRC32"), attributes.get("Checksum", {}).get("ChecksumCRC32"))
        for key in ["sum/one", "sum/many"]:
            s3.delete_object(Bucket=bucket, Key=key)

    if TARGET != "moto":
        checksums_steps(work, s3, steps)

    with steps("delete_bucket: BucketNotEmpty while objects remain, then deleted when empty"):
        code, status, _ = client_error(s3.delete_bucket, Bucket=bucket)
        expect_equal("DeleteBucket of a bucket with objects", ("BucketNotEmpty", 409), (code, status))
        s3.head_bucket(Bucket=bucket)
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objects:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
        # An interrupted upload does not keep the bucket: AWS, RGW and moto abort it.
        interrupted = s3.create_multipart_upload(Bucket=bucket, Key="interrupted.bin")["UploadId"]
        s3.upload_part(Bucket=bucket, Key="interrupted.bin", UploadId=interrupted, PartNumber=1, Body=b"partial")
        r = s3.delete_bucket(Bucket=bucket)
        expect_equal("DeleteBucket status when empty but for an upload in progress", 204, r["ResponseMetadata"]["HTTPStatusCode"])
        code, status, _ = client_error(s3.head_bucket, Bucket=bucket)
        expect_equal("HeadBucket after DeleteBucket", 404, status)
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        check(bucket not in names, "ListBuckets after DeleteBucket: expected no %s, found %s" % (bucket, names))
        code, status, _ = client_error(s3.put_object, Bucket=bucket, Key="k", Body=b"x")
        expect_equal("PutObject into the deleted bucket", ("NoSuchBucket", 404), (code, status))

    steps.note("x-amz-content-sha256 boto3 sent: %s" % payload_forms(v for _, v in sent))

    with steps("what is not served: 501 NotImplemented naming the operation"):
        s3.create_bucket(Bucket="boto3-e2e-501")
        s3.put_object(Bucket="boto3-e2e-501", Key="k", Body=b"x")
        for name, call in [("GetBucketAcl", lambda: s3.get_bucket_acl(Bucket="boto3-e2e-501")),
                           ("PutBucketVersioning", lambda: s3.put_bucket_versioning(Bucket="boto3-e2e-501", VersioningConfiguration={"Status": "Enabled"})),
                           ("GetObjectTagging", lambda: s3.get_object_tagging(Bucket="boto3-e2e-501", Key="k")),
                           ("PutBucketPolicy", lambda: s3.put_bucket_policy(Bucket="boto3-e2e-501", Policy="{}"))]:
            try:
                call()
                found = ("success", 200, "")
            except Exception as e:
                if not is_boto_error(e):
                    raise
                found = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Message", ""))
            moto_differs("%s: code and status" % name, ("NotImplemented", 501), found[:2])
            check(name in found[2], "%s's 501 message: expected it to name %s, found %r" % (name, name, found[2]))
        versioning = s3.get_bucket_versioning(Bucket="boto3-e2e-501")
        expect_equal("GetBucketVersioning of a bucket here (never versioned)", None, versioning.get("Status"))

    with steps("generate_presigned_post: a browser form upload (content-length-range, starts-with key, Content-Type eq), read back"):
        import requests
        post_bucket = "boto3-e2e-post"
        s3.create_bucket(Bucket=post_bucket)
        data = b"uploaded through a form\n" + bytes(range(256))
        post = s3.generate_presigned_post(
            Bucket=post_bucket, Key="uploads/${filename}",
            Fields={"Content-Type": "text/plain", "x-amz-meta-source": "form", "success_action_status": "201"},
            Conditions=[["content-length-range", 1, 4096], ["starts-with", "$key", "uploads/"],
                        ["eq", "$Content-Type", "text/plain"], {"x-amz-meta-source": "form"}, {"success_action_status": "201"}],
            ExpiresIn=600)
        # What a browser sends: the fields, then the file last (requests writes files after data).
        r = requests.post(post["url"], data=post["fields"], files={"file": ("note.txt", data)}, timeout=60)
        expect_equal("POST form upload: status (body %s)" % short(r.content), 201, r.status_code)
        md5 = '"%s"' % hashlib.md5(data).hexdigest()
        g = s3.get_object(Bucket=post_bucket, Key="uploads/note.txt")
        expect_equal("GetObject of the uploaded file: body", data, g["Body"].read())
        expect_equal("GetObject of the uploaded file: ContentType", "text/plain", g["ContentType"])
        expect_equal("GetObject of the uploaded file: metadata", {"source": "form"}, g["Metadata"])
        expect_equal("GetObject of the uploaded file: ETag", md5, g["ETag"])
        # S3 answers 201 with a PostResponse document (moto: an empty body).
        found = tuple(html_unescape((re.search(rb"<%s>([^<]*)</%s>" % (name, name), r.content) or [None, b""])[1].decode())
                      for name in (b"Bucket", b"Key", b"ETag"))
        moto_differs("PostResponse Bucket, Key, ETag", (post_bucket, "uploads/note.txt", md5), found)

    with steps("generate_presigned_post refusals: a file over content-length-range, a field the policy pins changed; nothing stored"):
        import requests
        # A file over the policy's content-length-range: refused, nothing stored.
        r = requests.post(post["url"], data=post["fields"], files={"file": ("big.txt", b"x" * 5000)}, timeout=60)
        not_on_moto((r.status_code, error_code(r.content)) == (400, "EntityTooLarge"),
                    "POST of a file over content-length-range: expected 400 EntityTooLarge, found %d %s" % (r.status_code, short(r.content)))
        expect_missing(s3, post_bucket, "uploads/big.txt")
        # A field changed after signing (the Content-Type the policy pins): refused, nothing stored.
        tampered = dict(post["fields"], **{"Content-Type": "text/html"})
        r = requests.post(post["url"], data=tampered, files={"file": ("tampered.txt", data)}, timeout=60)
        not_on_moto((r.status_code, error_code(r.content)) == (403, "AccessDenied") and b"Policy Condition failed" in r.content,
                    "POST with a Content-Type the policy refuses: expected 403 AccessDenied (Policy Condition failed), found %d %s"
                    % (r.status_code, short(r.content)))
        expect_missing(s3, post_bucket, "uploads/tampered.txt")
        s3.delete_object(Bucket=post_bucket, Key="uploads/note.txt")
        s3.delete_bucket(Bucket=post_bucket)

    if TARGET != "moto":
        with steps("key length: BUCKET/KEY is at most 1,024 bytes (KeyTooLongError beyond)"):
            limit = 1024 - len("boto3-e2e-501") - 1
            # In segments of 99 bytes, so that no backend meets a name longer than 255 bytes.
            fits = (("s" * 99 + "/") * 11)[:limit - 1] + "k"
            expect_equal("the longest key's length", limit, len(fits.encode()))
            s3.put_object(Bucket="boto3-e2e-501", Key=fits, Body=b"long")
            expect_equal("GetObject of a %d-byte key" % limit, b"long", s3.get_object(Bucket="boto3-e2e-501", Key=fits)["Body"].read())
            s3.delete_object(Bucket="boto3-e2e-501", Key=fits)
            code, status, _ = client_error(s3.put_object, Bucket="boto3-e2e-501", Key=fits + "k", Body=b"long")
            expect_equal("PutObject of a %d-byte key" % (limit + 1), ("KeyTooLongError", 400), (code, status))


def checksums_steps(work, s3, steps):
    """Flexible checksums as botocore sends them: a full-object CRC32 through s3transfer's
    own multipart upload (upload_file with ChecksumCRC32: FULL_OBJECT on the Create, the
    value on the Complete), ChecksumCRC32= and a composite ChecksumSHA256= on
    complete_multipart_upload, CopyObject with ChecksumAlgorithm, and BadDigest for a
    single-object checksum that does not match. CRC32C and CRC64NVME are botocore's with
    awscrt only, which also swaps botocore's SigV4 signer for CRT's (the Date-header step
    above would no longer test botocore's): the Swift tests cover them
    (ChecksumCompletionTests)."""
    from boto3.s3.transfer import TransferConfig
    bucket = "boto3-e2e-sums"
    s3.create_bucket(Bucket=bucket)
    path = os.path.join(work, "sums.bin")
    random_file(path, 11 * MiB, seed=32)
    with open(path, "rb") as f:
        data = f.read()
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=2)

    with steps("upload_file with a full-object ChecksumCRC32 (3 parts): kept, answered FULL_OBJECT"):
        for name, value in [("CRC32", crc32_b64(data))]:
            s3.upload_file(path, bucket, "full/" + name, ExtraArgs={"Checksum" + name: value}, Config=config)
            h = s3.head_object(Bucket=bucket, Key="full/" + name, ChecksumMode="ENABLED")
            expect_equal("HeadObject Checksum%s after upload_file" % name, value, h.get("Checksum" + name))
            expect_equal("HeadObject ChecksumType after upload_file with Checksum%s" % name, "FULL_OBJECT", h.get("ChecksumType"))
            check(h["ETag"].strip('"').endswith("-3"), "upload_file with Checksum%s: expected a 3-part ETag, found %s" % (name, h["ETag"]))

    def upload_parts(key, algorithm, checksum_type):
        up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm, ChecksumType=checksum_type)
        parts, pieces = [], [data[:5 * MiB], data[5 * MiB:]]
        for number, piece in enumerate(pieces, 1):
            r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=number, Body=piece, ChecksumAlgorithm=algorithm)
            parts.append({"PartNumber": number, "ETag": r["ETag"], "Checksum" + algorithm: r["Checksum" + algorithm]})
        return up["UploadId"], parts, pieces

    with steps("complete_multipart_upload with ChecksumCRC32= (FULL_OBJECT): a wrong value is 400 BadDigest, the right one completes"):
        upload, parts, _ = upload_parts("full/by-hand", "CRC32", "FULL_OBJECT")
        code, status, _ = client_error(s3.complete_multipart_upload, Bucket=bucket, Key="full/by-hand", UploadId=upload,
                                       MultipartUpload={"Parts": parts}, ChecksumCRC32="AAAAAA==", ChecksumType="FULL_OBJECT")
        expect_equal("CompleteMultipartUpload with a wrong ChecksumCRC32", ("BadDigest", 400), (code, status))
        done = s3.complete_multipart_upload(Bucket=bucket, Key="full/by-hand", UploadId=upload, MultipartUpload={"Parts": parts},
                                            ChecksumCRC32=crc32_b64(data), ChecksumType="FULL_OBJECT")
        expect_equal("CompleteMultipartUpload ChecksumCRC32", crc32_b64(data), done.get("ChecksumCRC32"))

    with steps("complete_multipart_upload with a composite ChecksumSHA256= (the parts' digests hashed, -2)"):
        upload, parts, pieces = upload_parts("composite/sha256", "SHA256", "COMPOSITE")
        composite = base64.b64encode(hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in pieces)).digest()).decode() + "-2"
        done = s3.complete_multipart_upload(Bucket=bucket, Key="composite/sha256", UploadId=upload, MultipartUpload={"Parts": parts},
                                            ChecksumSHA256=composite)
        expect_equal("CompleteMultipartUpload ChecksumSHA256", composite, done.get("ChecksumSHA256"))

    with steps("copy_object with ChecksumAlgorithm=SHA256: the copy's checksum computed; a wrong single-object checksum is 400 BadDigest"):
        copied = s3.copy_object(Bucket=bucket, Key="copy/sha256", CopySource={"Bucket": bucket, "Key": "full/CRC32"}, ChecksumAlgorithm="SHA256")
        expected = base64.b64encode(hashlib.sha256(data).digest()).decode()
        expect_equal("CopyObjectResult ChecksumSHA256", expected, copied.get("CopyObjectResult", {}).get("ChecksumSHA256"))
        h = s3.head_object(Bucket=bucket, Key="copy/sha256", ChecksumMode="ENABLED")
        expect_equal("HeadObject ChecksumSHA256 of the copy", expected, h.get("ChecksumSHA256"))
        code, status, _ = client_error(s3.put_object, Bucket=bucket, Key="refused/sum", Body=b"abc", ChecksumSHA256="ABCD")
        expect_equal("PutObject with a ChecksumSHA256 of 3 bytes", ("BadDigest", 400), (code, status))
        expect_missing(s3, bucket, "refused/sum")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if objects:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
    s3.delete_bucket(Bucket=bucket)


# MARK: the AWS CLI

def aws_cli(server, work, s3_settings=""):
    """`aws --endpoint-url URL ...` with the key pair in the environment and a scratch
    config file (path style, 8 MiB multipart threshold and parts, then `s3_settings`
    lines); returns run(args)."""
    config = os.path.join(work, "aws-config-%d" % len(s3_settings))
    with open(config, "w") as f:
        f.write("[default]\nregion = %s\ns3 =\n  addressing_style = path\n  multipart_threshold = 8MB\n"
                "  multipart_chunksize = 8MB\n  max_concurrent_requests = 4\n%s" % (REGION, s3_settings))
    env = dict(os.environ, AWS_ACCESS_KEY_ID=server.access_key, AWS_SECRET_ACCESS_KEY=server.secret,
               AWS_DEFAULT_REGION=REGION, AWS_CONFIG_FILE=config, AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(work, "aws-credentials-none"), AWS_MAX_ATTEMPTS="1",
               AWS_RETRY_MODE="standard", AWS_PAGER="")
    env.pop("AWS_PROFILE", None)
    env.pop("AWS_SESSION_TOKEN", None)

    def run(*args, ok=True):
        argv = [os.path.join(VENV_BIN, "aws"), "--endpoint-url", server.endpoint] + list(args)
        p = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=300)
        if ok and p.returncode != 0:
            raise Failure("`aws %s` exited %d: %s %s" % (" ".join(args), p.returncode, p.stderr.strip()[-1500:], p.stdout.strip()[-500:]))
        return p
    return run


def tree(root):
    """{relative path: sha256} of the files under root."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = sha256_file(path)
    return found


def awscli_scenario(work, server, steps):
    aws = aws_cli(server, work)
    bucket = "awscli-e2e"
    with steps("aws s3 mb"):
        p = aws("s3", "mb", "s3://" + bucket)
        check("make_bucket: " + bucket in p.stdout, "aws s3 mb: expected 'make_bucket: %s', found %r" % (bucket, p.stdout))

    small = os.path.join(work, "small.txt")
    with open(small, "wb") as f:
        f.write(b"small file for the AWS CLI\n" * 10)
    big = random_file(os.path.join(work, "big.bin"), 20 * MiB, 2)
    with steps("aws s3 cp small up and back"):
        aws("s3", "cp", small, "s3://%s/files/small.txt" % bucket)
        back = os.path.join(work, "small.back")
        aws("s3", "cp", "s3://%s/files/small.txt" % bucket, back)
        expect_equal("small file back", sha256_file(small), sha256_file(back))

    with steps("aws s3 cp 20 MiB up (multipart) and back; aws s3api head-object"):
        aws("s3", "cp", big, "s3://%s/files/big.bin" % bucket)
        p = aws("s3api", "head-object", "--bucket", bucket, "--key", "files/big.bin")
        head = json.loads(p.stdout)
        expect_equal("head-object ContentLength", 20 * MiB, head.get("ContentLength"))
        expect_equal("head-object ETag (3 parts of 8 MiB)", multipart_etag(big, 8 * MiB), head.get("ETag"))
        back = os.path.join(work, "big.back")
        aws("s3", "cp", "s3://%s/files/big.bin" % bucket, back)
        expect_equal("20 MiB file back", sha256_file(big), sha256_file(back))

    with steps("aws s3 ls"):
        p = aws("s3", "ls", "s3://%s/files/" % bucket)
        names = sorted(line.split()[-1] for line in p.stdout.splitlines() if line.strip())
        expect_equal("aws s3 ls s3://%s/files/" % bucket, ["big.bin", "small.txt"], names)
        p = aws("s3", "ls")
        check(bucket in p.stdout, "aws s3 ls: expected bucket %s, found %r" % (bucket, p.stdout))

    with steps("aws s3 sync of 20 files up and back, trees byte-for-byte"):
        src = os.path.join(work, "tree-up")
        rnd = random.Random(3)
        for i in range(20):
            sub = os.path.join(src, "d%d" % (i % 3), "e%d" % (i % 2)) if i % 4 else src
            os.makedirs(sub, exist_ok=True)
            with open(os.path.join(sub, "file-%02d.dat" % i), "wb") as f:
                f.write(rnd.randbytes(rnd.randrange(0, 200000)))
        # An hour old, so that the second sync below finds every object newer than its
        # file on any server (moto keeps whole seconds in LastModified: a file written in
        # the same second looked newer, and was uploaded again).
        old = time.time() - 3600
        for path in tree(src):
            os.utime(os.path.join(src, path), (old, old))
        aws("s3", "sync", src, "s3://%s/tree" % bucket)
        p = aws("s3", "ls", "--recursive", "s3://%s/tree/" % bucket)
        expect_equal("objects under tree/ after sync up", 20, len([l for l in p.stdout.splitlines() if l.strip()]))
        dst = os.path.join(work, "tree-down")
        aws("s3", "sync", "s3://%s/tree" % bucket, dst)
        expect_equal("tree synced back", tree(src), tree(dst))
        p = aws("s3", "sync", src, "s3://%s/tree" % bucket)
        expect_equal("a second sync up (nothing changed) uploads", "", p.stdout.strip())

    with steps("aws s3 presign as the CLI signs by default (SigV2): refused, naming the setting"):
        url = aws("s3", "presign", "s3://%s/files/small.txt" % bucket, "--expires-in", "300").stdout.strip()
        body, _, status = curl("the SigV2 presigned GET", url, "-w", "\\n%{http_code}", fail=False).rpartition(b"\n")
        if "Signature=" in url and "X-Amz-Signature=" not in url:
            not_on_moto((status, error_code(body)) == (b"400", "InvalidRequest") and b"signature_version" in body,
                        "a SigV2 presigned URL: expected 400 InvalidRequest naming signature_version, found %s %s"
                        % (status.decode(), short(body)))
        else:
            steps.note("this AWS CLI presigns with SigV4 by default")

    with steps("aws s3 presign with s3.signature_version = s3v4, the URL fetched with curl"):
        p = aws_cli(server, work, "  signature_version = s3v4\n")("s3", "presign", "s3://%s/files/small.txt" % bucket,
                                                                     "--expires-in", "300")
        url = p.stdout.strip()
        check("X-Amz-Signature=" in url, "aws s3 presign: expected a SigV4 URL, found %r" % url[:300])
        got = curl("the AWS CLI's presigned URL", url)
        with open(small, "rb") as f:
            expect_equal("the presigned GET's body", f.read(), got)

    with steps("aws s3api delete-objects of a batch (DeleteObjects), then list"):
        for i in range(3):
            aws("s3", "cp", small, "s3://%s/batch/%d.txt" % (bucket, i))
        batch = json.dumps({"Objects": [{"Key": "batch/%d.txt" % i} for i in range(3)], "Quiet": False})
        p = aws("s3api", "delete-objects", "--bucket", bucket, "--delete", batch)
        deleted = sorted(d["Key"] for d in json.loads(p.stdout).get("Deleted", []))
        expect_equal("delete-objects: Deleted", ["batch/0.txt", "batch/1.txt", "batch/2.txt"], deleted)
        p = aws("s3", "ls", "s3://%s/batch/" % bucket, ok=False)
        expect_equal("aws s3 ls s3://%s/batch/ after delete-objects" % bucket, "", p.stdout.strip())

    with steps("aws s3 rm --recursive, aws s3 rb"):
        aws("s3", "rm", "--recursive", "s3://%s/" % bucket)
        p = aws("s3", "ls", "--recursive", "s3://%s/" % bucket, ok=False)
        expect_equal("aws s3 ls after rm --recursive", "", p.stdout.strip())
        aws("s3", "rb", "s3://" + bucket)
        p = aws("s3api", "head-bucket", "--bucket", bucket, ok=False)
        check(p.returncode != 0 and "404" in p.stderr, "head-bucket after rb: expected a 404, found exit %d: %s" % (p.returncode, p.stderr.strip()))


# MARK: the MinIO SDK

def minio_scenario(work, server, steps):
    import minio
    trace = io.StringIO()
    mc = minio.Minio("127.0.0.1:%d" % server.s3_port, access_key=server.access_key, secret_key=server.secret, secure=False)
    mc.trace_on(trace)
    bucket = "minio-e2e"
    with steps("make_bucket, bucket_exists"):
        mc.make_bucket(bucket)
        check(mc.bucket_exists(bucket), "bucket_exists(%s): expected True after make_bucket" % bucket)
        check(not mc.bucket_exists("minio-never-made"), "bucket_exists of a bucket never made: expected False")

    data = os.urandom(300 * 1024 + 7)
    with steps("put_object with a known length, get_object byte-for-byte"):
        trace.seek(0)
        trace.truncate()
        mc.put_object(bucket, "m/known-length.bin", io.BytesIO(data), len(data), content_type="application/x-minio-test",
                      metadata={"x-amz-meta-origin": "minio"})
        sent = re.findall(r"x-amz-content-sha256: (\S+)", trace.getvalue(), re.I)
        steps.note("minio's PUT x-amz-content-sha256: %s" % payload_forms(sent))
        r = mc.get_object(bucket, "m/known-length.bin")
        try:
            body = r.read()
        finally:
            r.close()
            r.release_conn()
        check(b"chunk-signature=" not in body, "get_object: the body holds aws-chunked framing (chunk-signature=)")
        expect_equal("get_object body", data, body)
        st = mc.stat_object(bucket, "m/known-length.bin")
        expect_equal("stat_object size", len(data), st.size)
        expect_equal("stat_object content type", "application/x-minio-test", st.content_type)
        expect_equal("stat_object x-amz-meta-origin", "minio", st.metadata.get("x-amz-meta-origin"))

    big = random_file(os.path.join(work, "big12.bin"), 12 * MiB, 4)
    with steps("fput_object 12 MiB (multipart), fget_object byte-for-byte"):
        mc.fput_object(bucket, "m/big12.bin", big, part_size=5 * MiB)
        st = mc.stat_object(bucket, "m/big12.bin")
        expect_equal("stat_object size", 12 * MiB, st.size)
        expect_equal("ETag (3 parts of 5 MiB)", multipart_etag(big, 5 * MiB).strip('"'), st.etag)
        back = os.path.join(work, "big12.back")
        mc.fget_object(bucket, "m/big12.bin", back)
        expect_equal("fget_object sha256", sha256_file(big), sha256_file(back))
        names = sorted(o.object_name for o in mc.list_objects(bucket, prefix="m/", recursive=True))
        expect_equal("list_objects", ["m/big12.bin", "m/known-length.bin"], names)

    with steps("put_object of a stream of unknown length (length -1, 5 MiB parts)"):
        stream_data = os.urandom(7 * MiB + 5)
        mc.put_object(bucket, "m/stream.bin", io.BytesIO(stream_data), -1, part_size=5 * MiB)
        r = mc.get_object(bucket, "m/stream.bin")
        try:
            body = r.read()
        finally:
            r.close()
            r.release_conn()
        expect_equal("the streamed object read back", stream_data, body)
        expect_equal("its ETag (2 parts)", "-2", mc.stat_object(bucket, "m/stream.bin").etag[-2:])

    with steps("remove_object, then stat_object is NoSuchKey, remove_bucket"):
        import minio.error
        for name in ("m/known-length.bin", "m/big12.bin", "m/stream.bin"):
            mc.remove_object(bucket, name)
        try:
            mc.stat_object(bucket, "m/known-length.bin")
            raise Failure("stat_object after remove_object succeeded, expected NoSuchKey")
        except minio.error.S3Error as e:
            expect_equal("stat_object after remove_object", "NoSuchKey", e.code)
        mc.remove_bucket(bucket)
        check(not mc.bucket_exists(bucket), "bucket_exists after remove_bucket: expected False")
    mc.trace_off()


# MARK: requests built by hand: SigV4, aws-chunked

def hmac_sha256(key, text):
    return hmac.new(key, text.encode() if isinstance(text, str) else text, hashlib.sha256).digest()


def sha256_hex(data):
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def signing_key(secret, date, region):
    k = hmac_sha256(("AWS4" + secret).encode(), date)
    k = hmac_sha256(k, region)
    k = hmac_sha256(k, "s3")
    return hmac_sha256(k, "aws4_request")


def sign_headers(method, path, headers, payload_hash, access_key, secret, amz_date, region=REGION, query=""):
    """SigV4 for a request: `headers` (lower-case names) are all signed; returns
    (Authorization, seed signature, signing key, scope)."""
    date = amz_date[:8]
    scope = "%s/%s/s3/aws4_request" % (date, region)
    names = sorted(headers)
    canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), query,
                           "".join("%s:%s\n" % (n, " ".join(str(headers[n]).split())) for n in names),
                           ";".join(names), payload_hash])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(canonical)])
    key = signing_key(secret, date, region)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    auth = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (access_key, scope, ";".join(names), signature)
    return auth, signature, key, scope


def chunk_signature(key, amz_date, scope, previous, chunk):
    to_sign = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous, sha256_hex(b""), sha256_hex(chunk)])
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def trailer_signature(key, amz_date, scope, previous, trailer):
    to_sign = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, previous, sha256_hex(trailer)])
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def crc32_b64(data):
    return base64.b64encode(binascii.crc32(data).to_bytes(4, "big")).decode()


def chunks_of(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)] + [b""]


def signed_chunked_body(data, chunk_size, key, amz_date, scope, seed, tamper=None, trailer=None):
    """The STREAMING-AWS4-HMAC-SHA256-PAYLOAD body (…-TRAILER when `trailer`, a
    "name:value" line, is given); `tamper` is the index of the chunk whose signature gets
    one hex digit flipped (-1: the final, empty chunk)."""
    parts, previous = [], seed
    pieces = chunks_of(data, chunk_size)
    for i, chunk in enumerate(pieces):
        sig = chunk_signature(key, amz_date, scope, previous, chunk)
        previous = sig
        if tamper is not None and (i == tamper or (tamper == -1 and i == len(pieces) - 1)):
            sig = sig[:10] + ("0" if sig[10] != "0" else "1") + sig[11:]
        if trailer is not None and not chunk:
            parts.append(b"0;chunk-signature=%s\r\n" % sig.encode())
        else:
            parts.append(b"%x;chunk-signature=%s\r\n%s\r\n" % (len(chunk), sig.encode(), chunk))
    if trailer is not None:
        text = trailer + "\n"
        tsig = trailer_signature(key, amz_date, scope, previous, text)
        parts.append(("%s\r\nx-amz-trailer-signature:%s\r\n\r\n" % (trailer, tsig)).encode())
    return b"".join(parts)


def unsigned_trailer_body(data, chunk_size, trailer):
    parts = [b"%x\r\n%s\r\n" % (len(c), c) for c in chunks_of(data, chunk_size)[:-1]]
    parts.append(("0\r\n%s\r\n\r\n" % trailer).encode())
    return b"".join(parts)


def amz_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def raw_put(server, bucket, key, body, headers, payload_hash, secret=None, access_key=None, amz_date=None):
    """The pieces of a PUT signed by hand (every header given is signed): path, headers,
    Authorization, seed signature, signing key, scope, x-amz-date."""
    path = "/%s/%s" % (bucket, key)
    amz_date = amz_date or amz_now()
    h = {"host": "127.0.0.1:%d" % server.s3_port, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash,
         "content-length": str(len(body))}
    h.update(headers)
    auth, seed, skey, scope = sign_headers("PUT", path, h, payload_hash, access_key or server.access_key,
                                           secret or server.secret, amz_date)
    return path, h, auth, seed, skey, scope, amz_date


def send(server, method, path, headers, body):
    """One request on its own connection. A server that refuses mid-body (a bad chunk
    signature) may answer and close before the body is all sent: the answer is read anyway."""
    c = http.client.HTTPConnection("127.0.0.1", server.s3_port, timeout=60)
    try:
        try:
            c.request(method, urllib.parse.quote(path, safe="/-_.~"), body=body, headers=headers)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def signed_request(server, method, path, body=b"", host=None, query=(), headers=None):
    """Any request signed by hand with the server's key pair (payload: the body's SHA-256),
    `host` as the Host header (default 127.0.0.1:PORT): (status, headers, body)."""
    amz_date = amz_now()
    payload = sha256_hex(body)
    h = {"host": host or "127.0.0.1:%d" % server.s3_port, "x-amz-date": amz_date, "x-amz-content-sha256": payload}
    if body or method in ("PUT", "POST"):
        h["content-length"] = str(len(body))
    h.update(headers or {})
    canonical_query = "&".join(sorted("%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                                      for k, v in query))
    auth, _, _, _ = sign_headers(method, path, h, payload, server.access_key, server.secret, amz_date, query=canonical_query)
    h["authorization"] = auth
    c = http.client.HTTPConnection("127.0.0.1", server.s3_port, timeout=60)
    try:
        c.request(method, urllib.parse.quote(path, safe="/-_.~") + ("?" + canonical_query if canonical_query else ""),
                  body=body or None, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def html_unescape(text):
    """XML text with its entities read (an ETag's quotes come as &quot;)."""
    import html
    return html.unescape(text)


def error_code(body):
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return m.group(1).decode() if m else None


def chunked_put(server, bucket, key, data, chunk_size=64 * 1024, tamper=None, trailer=None, secret=None):
    """PUT `data` as STREAMING-AWS4-HMAC-SHA256-PAYLOAD (with a signed trailer when given)."""
    form = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
    extra = {"content-encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data))}
    if trailer:
        extra["x-amz-trailer"] = trailer.split(":")[0]
    # The body's length depends only on the sizes, so sign with a placeholder body of it.
    placeholder = signed_chunked_body(data, chunk_size, b"k", "d", "s", "0" * 64, trailer=trailer)
    path, h, auth, seed, skey, scope, amz_date = raw_put(server, bucket, key, placeholder, extra, form, secret=secret)
    body = signed_chunked_body(data, chunk_size, skey, amz_date, scope, seed, tamper=tamper, trailer=trailer)
    check(len(body) == len(placeholder), "aws-chunked body length changed while signing")
    h["authorization"] = auth
    return send(server, "PUT", path, h, body)


def unsigned_trailer_put(server, bucket, key, data, trailer, chunk_size=64 * 1024):
    form = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    body = unsigned_trailer_body(data, chunk_size, trailer)
    extra = {"content-encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
             "x-amz-trailer": trailer.split(":")[0]}
    path, h, auth, _, _, _, _ = raw_put(server, bucket, key, body, extra, form)
    h["authorization"] = auth
    return send(server, "PUT", path, h, body)


def selftest_chunk_signing():
    """The example of AWS's "Transferring Payload in Multiple Chunks" page: 66,560 bytes
    of 'a' in 64 KiB chunks; the seed and every chunk signature as the page prints them."""
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    amz_date = "20130524T000000Z"
    headers = {"host": "s3.amazonaws.com", "x-amz-date": amz_date, "x-amz-storage-class": "REDUCED_REDUNDANCY",
               "content-encoding": "aws-chunked", "x-amz-decoded-content-length": "66560", "content-length": "66824",
               "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}
    _, seed, key, scope = sign_headers("PUT", "/examplebucket/chunkObject.txt", headers, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                                       "AKIAIOSFODNN7EXAMPLE", secret, amz_date)
    expect_equal("seed signature of AWS's example", "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", seed)
    body = signed_chunked_body(b"a" * 66560, 65536, key, amz_date, scope, seed)
    expect_equal("length of AWS's example body", 66824, len(body))
    sigs = re.findall(rb"chunk-signature=([0-9a-f]{64})", body)
    expect_equal("chunk signatures of AWS's example", [
        b"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        b"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        b"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"], sigs)


def selftest_seed_against_botocore():
    """The hand-built signer's Authorization for an aws-chunked PUT's headers (the seed
    every chunk signature chains from) is botocore's, for the same headers and time.
    botocore puts its own payload hash in (it signs no chunks); the STREAMING-* payload
    line is checked against AWS's published example above."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    headers = {"content-encoding": "aws-chunked", "x-amz-decoded-content-length": "66560",
               "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "x-amz-trailer": "x-amz-checksum-crc32"}
    request = AWSRequest(method="PUT", url="http://127.0.0.1:9000/bucket/a%20key.bin", headers=dict(headers))
    S3SigV4Auth(Credentials("AKIDEXAMPLE", "botocore-secret"), "s3", REGION).add_auth(request)
    signed = {k.lower(): v for k, v in request.headers.items()}
    mine = dict(headers, **{"host": "127.0.0.1:9000", "x-amz-date": signed["x-amz-date"],
                            "x-amz-content-sha256": signed["x-amz-content-sha256"]})
    auth, _, _, _ = sign_headers("PUT", "/bucket/a key.bin", mine, signed["x-amz-content-sha256"], "AKIDEXAMPLE",
                                 "botocore-secret", signed["x-amz-date"])
    expect_equal("the hand-built Authorization against botocore's", signed["authorization"], auth)


# MARK: refusals

def refusals_scenario(work, server, steps):
    s3 = boto3_client(server)
    bucket = "refusals-e2e"
    with steps("the hand-built signer reproduces AWS's chunked-upload example, and botocore's seed signature"):
        selftest_chunk_signing()
        selftest_seed_against_botocore()
    with steps("create_bucket"):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="existing.txt", Body=b"existing")

    def plain_put(key, body, payload=None, amz_date=None, extra=None, unsigned=False):
        path, h, auth, _, _, _, _ = raw_put(server, bucket, key, body, extra or {}, payload or sha256_hex(body), amz_date=amz_date)
        if not unsigned:
            h["authorization"] = auth
        return send(server, "PUT", path, h, body)

    with steps("a request without any signature: 403 AccessDenied, nothing stored"):
        status, _, body = plain_put("refused/anonymous", b"anonymous", unsigned=True)
        not_on_moto((status, error_code(body)) == (403, "AccessDenied"),
                    "unsigned PUT: expected 403 AccessDenied, found %d %s: %s" % (status, error_code(body), short(body)))
        expect_missing(s3, bucket, "refused/anonymous")

    with steps("x-amz-date 20 minutes ago: 403 RequestTimeTooSkewed, nothing stored"):
        old = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)).strftime("%Y%m%dT%H%M%SZ")
        status, _, body = plain_put("refused/skewed", b"late", amz_date=old)
        not_on_moto((status, error_code(body)) == (403, "RequestTimeTooSkewed"),
                    "PUT dated 20 minutes ago: expected 403 RequestTimeTooSkewed, found %d %s: %s" % (status, error_code(body), short(body)))
        expect_missing(s3, bucket, "refused/skewed")

    with steps("x-amz-content-sha256 that is not the body's: 400 XAmzContentSHA256Mismatch, nothing stored"):
        status, _, body = plain_put("refused/sha256", b"the body", payload=sha256_hex(b"another body"))
        not_on_moto((status, error_code(body)) == (400, "XAmzContentSHA256Mismatch"),
                    "expected 400 XAmzContentSHA256Mismatch, found %d %s: %s" % (status, error_code(body), short(body)))
        expect_missing(s3, bucket, "refused/sha256")

    with steps("Content-MD5 that is not the body's: 400 BadDigest, nothing stored"):
        md5 = base64.b64encode(hashlib.md5(b"another body").digest()).decode()
        status, _, body = plain_put("refused/md5", b"the body", extra={"content-md5": md5})
        not_on_moto((status, error_code(body)) == (400, "BadDigest"),
                    "expected 400 BadDigest, found %d %s: %s" % (status, error_code(body), short(body)))
        expect_missing(s3, bucket, "refused/md5")

    with steps("wrong secret: 403 SignatureDoesNotMatch, nothing stored"):
        bad = boto3_client(server, secret=server.secret + "x")
        try:
            code, status, _ = client_error(bad.put_object, Bucket=bucket, Key="refused/wrong-secret", Body=b"nope")
        except Failure as e:
            not_on_moto(False, str(e))
        else:
            expect_equal("PutObject with a wrong secret", ("SignatureDoesNotMatch", 403), (code, status))
        expect_missing(s3, bucket, "refused/wrong-secret")
        if TARGET != "moto":
            code, status, _ = client_error(bad.list_objects_v2, Bucket=bucket)
            expect_equal("ListObjectsV2 with a wrong secret", ("SignatureDoesNotMatch", 403), (code, status))

    with steps("unknown access key: 403 InvalidAccessKeyId, nothing stored"):
        other = boto3_client(server, access_key="AKIDNOBODYKNOWS")
        try:
            code, status, _ = client_error(other.put_object, Bucket=bucket, Key="refused/unknown-key", Body=b"nope")
        except Failure as e:
            not_on_moto(False, str(e))
        else:
            expect_equal("PutObject with an unknown access key", ("InvalidAccessKeyId", 403), (code, status))
        expect_missing(s3, bucket, "refused/unknown-key")

    with steps("SigV2 (signature_version s3) without s3.signatureV2: 400 InvalidRequest, as AWS answers it, nothing stored"):
        v2 = boto3_client(server, signature_version="s3")
        try:
            code, status, e = client_error(v2.put_object, Bucket=bucket, Key="refused/sigv2", Body=b"nope")
        except Failure as e:
            not_on_moto(False, str(e))
        else:
            expect_equal("PutObject signed with SigV2", ("InvalidRequest", 400), (code, status))
            steps.note("SigV2 answered %s %s: %s" % (status, code, e.response.get("Error", {}).get("Message", "")[:160]))
        expect_missing(s3, bucket, "refused/sigv2")

    with steps("expired presigned URLs (ExpiresIn=1, 2 s later): 403 AccessDenied, nothing stored"):
        put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "refused/expired"}, ExpiresIn=1)
        get_url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "existing.txt"}, ExpiresIn=1)
        time.sleep(2.2)
        for what, req in [("PUT", urllib.request.Request(put_url, data=b"too late", method="PUT")),
                          ("GET", urllib.request.Request(get_url))]:
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    not_on_moto(False, "expired presigned %s answered %d, expected 403 AccessDenied" % (what, r.status))
            except urllib.error.HTTPError as e:
                body = e.read()
                expect_equal("expired presigned %s" % what, (403, "AccessDenied"), (e.code, error_code(body)))
        expect_missing(s3, bucket, "refused/expired")

    data = os.urandom(200 * 1024 + 123)
    with steps("aws-chunked signed upload (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), correct: stored byte-for-byte"):
        status, headers, body = chunked_put(server, bucket, "chunked/good.bin", data)
        expect_equal("PUT aws-chunked (signed chunks): status; body %s" % short(body), 200, status)
        expect_equal("aws-chunked object read back", data, s3.get_object(Bucket=bucket, Key="chunked/good.bin")["Body"].read())
        expect_equal("ETag of the aws-chunked object", '"%s"' % hashlib.md5(data).hexdigest(), headers.get("etag"))

    for where, index in [("the second chunk", 1), ("the final empty chunk", -1)]:
        key = "refused/tampered-%s" % ("final" if index == -1 else index)
        with steps("aws-chunked upload with a tampered signature on %s: 403 SignatureDoesNotMatch, nothing stored" % where):
            status, _, body = chunked_put(server, bucket, key, data, tamper=index)
            not_on_moto((status, error_code(body)) == (403, "SignatureDoesNotMatch"),
                        "aws-chunked PUT with a tampered signature on %s: expected 403 SignatureDoesNotMatch, found %d %s: %s"
                        % (where, status, error_code(body), short(body)))
            expect_missing(s3, bucket, key)

    with steps("aws-chunked upload signed with another secret: 403 SignatureDoesNotMatch, nothing stored"):
        status, _, body = chunked_put(server, bucket, "refused/chunked-wrong-secret", data, secret=server.secret + "x")
        not_on_moto((status, error_code(body)) == (403, "SignatureDoesNotMatch"),
                    "expected 403 SignatureDoesNotMatch, found %d %s" % (status, error_code(body)))
        expect_missing(s3, bucket, "refused/chunked-wrong-secret")

    with steps("aws-chunked signed upload with a signed trailer (…-PAYLOAD-TRAILER, CRC32): stored byte-for-byte"):
        status, _, body = chunked_put(server, bucket, "chunked/signed-trailer.bin", data, trailer="x-amz-checksum-crc32:" + crc32_b64(data))
        expect_equal("PUT STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: status; body %s" % short(body), 200, status)
        expect_equal("object read back", data, s3.get_object(Bucket=bucket, Key="chunked/signed-trailer.bin")["Body"].read())

    with steps("STREAMING-UNSIGNED-PAYLOAD-TRAILER with the right CRC32 trailer: stored byte-for-byte"):
        status, headers, body = unsigned_trailer_put(server, bucket, "chunked/unsigned-trailer.bin", data,
                                                     "x-amz-checksum-crc32:" + crc32_b64(data))
        expect_equal("PUT STREAMING-UNSIGNED-PAYLOAD-TRAILER: status; body %s" % short(body), 200, status)
        expect_equal("object read back", data, s3.get_object(Bucket=bucket, Key="chunked/unsigned-trailer.bin")["Body"].read())
        not_on_moto(headers.get("x-amz-checksum-crc32") == crc32_b64(data),
                    "the answer repeats the trailer's checksum: expected x-amz-checksum-crc32 %s, found %r"
                    % (crc32_b64(data), headers.get("x-amz-checksum-crc32")))

    for name, digest in [("sha256", hashlib.sha256), ("sha1", hashlib.sha1)]:
        with steps("STREAMING-UNSIGNED-PAYLOAD-TRAILER with a %s trailer, right then wrong" % name.upper()):
            value = base64.b64encode(digest(data).digest()).decode()
            status, headers, body = unsigned_trailer_put(server, bucket, "chunked/trailer-%s.bin" % name, data,
                                                         "x-amz-checksum-%s:%s" % (name, value))
            expect_equal("PUT with an x-amz-checksum-%s trailer: status; body %s" % (name, short(body)), 200, status)
            expect_equal("object read back", data, s3.get_object(Bucket=bucket, Key="chunked/trailer-%s.bin" % name)["Body"].read())
            not_on_moto(headers.get("x-amz-checksum-%s" % name) == value,
                        "the answer repeats the trailer's checksum: expected %s, found %r" % (value, headers.get("x-amz-checksum-%s" % name)))
            wrong = base64.b64encode(digest(data + b"!").digest()).decode()
            status, _, body = unsigned_trailer_put(server, bucket, "refused/bad-%s" % name, data, "x-amz-checksum-%s:%s" % (name, wrong))
            not_on_moto((status, error_code(body)) == (400, "BadDigest"),
                        "a wrong %s trailer: expected 400 BadDigest, found %d %s: %s" % (name, status, error_code(body), short(body)))
            expect_missing(s3, bucket, "refused/bad-%s" % name)

    with steps("STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 trailer that does not match: 400, nothing stored"):
        wrong = crc32_b64(data + b"!")
        status, _, body = unsigned_trailer_put(server, bucket, "refused/bad-crc32", data, "x-amz-checksum-crc32:" + wrong)
        not_on_moto(status == 400 and error_code(body) in ("BadDigest", "InvalidRequest", "XAmzContentChecksumMismatch", "InvalidDigest"),
                    "PUT with a wrong x-amz-checksum-crc32 trailer: expected 400 BadDigest (or similar), found %d %s: %s"
                    % (status, error_code(body), short(body)))
        steps.note("wrong CRC32 trailer answered %d %s" % (status, error_code(body)))
        expect_missing(s3, bucket, "refused/bad-crc32")

    with steps("the bucket holds exactly what was accepted"):
        keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))
        accepted = ["chunked/good.bin", "chunked/signed-trailer.bin", "chunked/trailer-sha1.bin", "chunked/trailer-sha256.bin",
                    "chunked/unsigned-trailer.bin", "existing.txt"]
        if TARGET == "moto":
            expect_equal("accepted keys in the bucket", accepted, [k for k in keys if not k.startswith("refused/")])
        else:
            expect_equal("keys in the bucket", accepted, keys)


# MARK: virtual-hosted addressing (--s3-domain)

VHOST_DOMAIN = "s3.plugboard.test"


def limits_scenario(work, server, steps):
    """Under `serve --max-body-bytes 65536`: a larger PutObject is refused by the server
    before its body is read, in S3's terms (400 EntityTooLarge, the request ID in the
    header and the document), and nothing is stored; a body under the limit is stored."""
    s3 = boto3_client(server)
    bucket = "limits-e2e"
    with steps("create_bucket, a PUT under the limit"):
        s3.create_bucket(Bucket=bucket)
        status, _, body = signed_request(server, "PUT", "/%s/small.bin" % bucket, body=b"x" * 60000)
        expect_equal("PUT of 60,000 bytes under a 65,536-byte limit: status; body %s" % short(body), 200, status)
    with steps("a PUT over --max-body-bytes: 400 EntityTooLarge with x-amz-request-id, nothing stored"):
        status, headers, body = signed_request(server, "PUT", "/%s/big.bin" % bucket, body=b"y" * 100000)
        expect_equal("PUT of 100,000 bytes over a 65,536-byte limit", (400, "EntityTooLarge"), (status, error_code(body)))
        rid = headers.get("x-amz-request-id")
        check(rid and re.fullmatch(r"[0-9A-F]{16}", rid), "x-amz-request-id of the refusal: expected 16 hex digits, found %r" % rid)
        check(("<RequestId>%s</RequestId>" % rid).encode() in body, "the document names the header's request ID %s: %s" % (rid, short(body)))
        expect_missing(s3, bucket, "big.bin")


def vhost_scenario(work, server, steps):
    """With --s3-domain, Host BUCKET.DOMAIN names the bucket (requests built by hand: the
    name does not resolve here), and path style keeps working beside it."""
    s3 = boto3_client(server)
    bucket = "vhost-e2e"
    host = "%s.%s:%d" % (bucket, VHOST_DOMAIN, server.s3_port)
    with steps("create_bucket (path style)"):
        s3.create_bucket(Bucket=bucket)
    with steps("PUT and GET with Host %s.%s" % (bucket, VHOST_DOMAIN)):
        status, _, body = signed_request(server, "PUT", "/notes/a b.txt", body=b"virtually hosted", host=host)
        expect_equal("virtual-hosted PUT /notes/a b.txt: status; body %s" % short(body), 200, status)
        status, _, body = signed_request(server, "GET", "/notes/a b.txt", host=host)
        expect_equal("virtual-hosted GET: status", 200, status)
        expect_equal("virtual-hosted GET body", b"virtually hosted", body)
        expect_equal("the same object through path style (boto3)", b"virtually hosted",
                     s3.get_object(Bucket=bucket, Key="notes/a b.txt")["Body"].read())
    with steps("ListObjectsV2 and HeadBucket with the bucket in Host"):
        status, _, body = signed_request(server, "GET", "/", host=host, query=[("list-type", "2"), ("prefix", "notes/")])
        expect_equal("virtual-hosted ListObjectsV2: status; body %s" % short(body), 200, status)
        expect_equal("keys listed", [b"notes/a b.txt"], re.findall(rb"<Key>([^<]*)</Key>", body))
        status, _, _ = signed_request(server, "HEAD", "/", host=host)
        expect_equal("virtual-hosted HeadBucket", 200, status)
        status, _, body = signed_request(server, "GET", "/x", host="no-such-bucket-e2e.%s:%d" % (VHOST_DOMAIN, server.s3_port))
        expect_equal("virtual-hosted GET in a bucket never made", (404, "NoSuchBucket"), (status, error_code(body)))


# MARK: Signature Version 2, opt in (the manifest's s3.signatureV2)

def signature_v2_manifest():
    with open(os.path.join(REPO, "plugins.json")) as f:
        m = json.load(f)
    m["s3"] = {"signatureV2": True}
    return json.dumps(m, indent=1)


def sigv2_scenario(work, server, steps):
    """boto3 signing with Signature Version 2 (Config(signature_version="s3"): HmacV1Auth,
    its presigned URLs and POST forms) against serve with s3.signatureV2: buckets,
    put/get/head with metadata, listings, a multipart upload_file, a presigned GET, a V2
    browser form, and the refusals (wrong secret with the StringToSign, unknown key, an
    expired URL), each refusal storing nothing."""
    from boto3.s3.transfer import TransferConfig
    import requests
    s3 = boto3_client(server, signature_version="s3")
    sent = []
    s3.meta.events.register("before-send.s3.*", lambda request, **kw: sent.append(request.headers.get("Authorization", b"")))
    bucket = "sigv2-e2e"
    body = b"signed with HMAC-SHA1\n" * 64
    with steps("create_bucket, put_object (metadata, Content-Type), get, head: signed 'AWS AKID:signature'"):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="dir/a b.txt", Body=body, ContentType="text/plain", Metadata={"owner": "ada"})
        g = s3.get_object(Bucket=bucket, Key="dir/a b.txt")
        expect_equal("GetObject body", body, g["Body"].read())
        expect_equal("GetObject metadata", {"owner": "ada"}, g["Metadata"])
        h = s3.head_object(Bucket=bucket, Key="dir/a b.txt")
        expect_equal("HeadObject ContentLength", len(body), h["ContentLength"])
        check(sent and all((a.decode() if isinstance(a, bytes) else a).startswith("AWS %s:" % server.access_key) for a in sent),
              "boto3 with signature_version='s3': expected every request signed 'AWS %s:...', found %s" % (server.access_key, sent[:3]))
    with steps("list_objects_v2 with a delimiter, list_objects (V1), response-content-type override"):
        s3.put_object(Bucket=bucket, Key="top.txt", Body=b"top")
        listed = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
        expect_equal("ListObjectsV2 keys", ["top.txt"], [o["Key"] for o in listed.get("Contents", [])])
        expect_equal("ListObjectsV2 prefixes", ["dir/"], [p["Prefix"] for p in listed.get("CommonPrefixes", [])])
        expect_equal("ListObjects (V1) keys", ["dir/a b.txt", "top.txt"], [o["Key"] for o in s3.list_objects(Bucket=bucket).get("Contents", [])])
        g = s3.get_object(Bucket=bucket, Key="top.txt", ResponseContentType="application/x-override")
        expect_equal("GetObject ResponseContentType", "application/x-override", g["ContentType"])
    with steps("upload_file of 12 MiB in 5 MiB parts (uploads, uploadId, partNumber signed), download_file byte for byte"):
        path = os.path.join(work, "big.bin")
        random_file(path, 12 * MiB, seed=21)
        config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=2)
        s3.upload_file(path, bucket, "big.bin", Config=config)
        h = s3.head_object(Bucket=bucket, Key="big.bin")
        expect_equal("HeadObject ETag of the multipart object", multipart_etag(path, 5 * MiB), h["ETag"])
        down = os.path.join(work, "big.down")
        s3.download_file(bucket, "big.bin", down, Config=config)
        expect_equal("download_file sha256", sha256_file(path), sha256_file(down))
    with steps("a V2 presigned GET (AWSAccessKeyId, Expires, Signature) fetched with curl"):
        url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "dir/a b.txt"}, ExpiresIn=600)
        check("AWSAccessKeyId=" in url and "Signature=" in url and "Expires=" in url and "X-Amz-" not in url,
              "generate_presigned_url with signature_version='s3': expected a V2 URL, found %s" % url)
        expect_equal("curl of the V2 presigned URL", body, curl("the V2 presigned GET", url))
        # A URL whose Expires has passed: 403 AccessDenied.
        stale = re.sub(r"Expires=\d+", "Expires=%d" % (int(time.time()) - 60), url)
        out = curl("an expired V2 presigned GET", stale, fail=False)
        expect_equal("the expired URL's error code", "AccessDenied", error_code(out))
        check(b"Request has expired" in out, "the expired URL's message: expected 'Request has expired', found %s" % short(out))
    with steps("a V2 browser form (AWSAccessKeyId, policy, signature) from generate_presigned_post, read back"):
        post = s3.generate_presigned_post(Bucket=bucket, Key="form/${filename}", Fields={"success_action_status": "201"},
                                          Conditions=[["starts-with", "$key", "form/"], {"success_action_status": "201"}], ExpiresIn=600)
        check("AWSAccessKeyId" in post["fields"] and "signature" in post["fields"],
              "generate_presigned_post with signature_version='s3': expected V2 fields, found %s" % sorted(post["fields"]))
        r = requests.post(post["url"], data=post["fields"], files={"file": ("note.txt", b"from a V2 form")}, timeout=60)
        expect_equal("POST V2 form: status (body %s)" % short(r.content), 201, r.status_code)
        expect_equal("the form's object", b"from a V2 form", s3.get_object(Bucket=bucket, Key="form/note.txt")["Body"].read())
        signature = post["fields"]["signature"]
        tampered = dict(post["fields"], signature=("B" if signature.startswith("A") else "A") + signature[1:])
        r = requests.post(post["url"], data=tampered, files={"file": ("forged.txt", b"forged")}, timeout=60)
        expect_equal("POST V2 form with another signature", (403, "SignatureDoesNotMatch"), (r.status_code, error_code(r.content)))
        expect_missing(s3, bucket, "form/forged.txt")
    with steps("refusals: a wrong secret is 403 SignatureDoesNotMatch with the StringToSign, an unknown key 403 InvalidAccessKeyId"):
        wrong = boto3_client(server, signature_version="s3", secret="not-the-secret-at-all")
        code, status, e = client_error(wrong.put_object, Bucket=bucket, Key="refused/v2", Body=b"nope")
        expect_equal("PutObject with a wrong secret", ("SignatureDoesNotMatch", 403), (code, status))
        string_to_sign = e.response.get("Error", {}).get("StringToSign", "")
        check(string_to_sign.startswith("PUT\n") and string_to_sign.endswith("/%s/refused/v2" % bucket),
              "the refusal's StringToSign: expected PUT ... /%s/refused/v2, found %r" % (bucket, string_to_sign))
        other = boto3_client(server, signature_version="s3", access_key="AKIDNOSUCHKEY")
        code, status, _ = client_error(other.put_object, Bucket=bucket, Key="refused/v2", Body=b"nope")
        expect_equal("PutObject with an unknown key", ("InvalidAccessKeyId", 403), (code, status))
        expect_missing(s3, bucket, "refused/v2")
    with steps("SigV4 still served beside V2; delete everything, delete_bucket"):
        v4 = boto3_client(server)
        expect_equal("a SigV4 GetObject of a V2 put", b"top", v4.get_object(Bucket=bucket, Key="top.txt")["Body"].read())
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objects:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
        s3.delete_bucket(Bucket=bucket)


# MARK: hot swap: buckets and uploads live in the backend

def swap_manifest(product, root=None):
    store = {"name": "Store", "product": product, "environments": ["testing"]}
    if root:
        store["config"] = {"root": root}
    return json.dumps({"schemaVersion": 1, "environment": "testing",
                       "hotSwap": {"enabled": True, "debounceMilliseconds": 0, "preflightTimeoutSeconds": 30, "drainTimeoutSeconds": 5},
                       "plugins": [store]}, indent=1)


def hotswap_scenario(work, server, steps):
    """FileStorage under ./data, then FileStorage under ./data-other (a backend without the
    bucket and the upload: NoSuchBucket, NoSuchUpload), then ./data again: bucket, object
    and upload are back, and the upload completes."""
    s3 = boto3_client(server)
    bucket = "swap-e2e"
    part1 = os.urandom(5 * MiB)
    part2 = os.urandom(1000)
    state = {}
    with steps("on FileStorage: create_bucket, put_object, create_multipart_upload, upload_part 1"):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="a.txt", Body=b"before the swap")
        state["upload"] = s3.create_multipart_upload(Bucket=bucket, Key="joined.bin")["UploadId"]
        state["e1"] = s3.upload_part(Bucket=bucket, Key="joined.bin", UploadId=state["upload"], PartNumber=1, Body=part1)["ETag"]
    with steps("swap to FileStorage under ./data-other: NoSuchBucket, NoSuchUpload"):
        server.swap(swap_manifest("FileStorage", "data-other"))
        code, status, _ = client_error(s3.head_bucket, Bucket=bucket)
        expect_equal("HeadBucket after the swap to a backend without the bucket", 404, status)
        code, status, _ = client_error(s3.get_object, Bucket=bucket, Key="a.txt")
        expect_equal("GetObject after the swap", ("NoSuchBucket", 404), (code, status))
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        expect_equal("ListBuckets after the swap", [], names)
        code, status, _ = client_error(s3.upload_part, Bucket=bucket, Key="joined.bin", UploadId=state.get("upload", "x"),
                                       PartNumber=2, Body=part2)
        check(status == 404 and code in ("NoSuchUpload", "NoSuchBucket"),
              "UploadPart of an upload begun before the swap: expected 404 NoSuchUpload (or NoSuchBucket), found %s %s" % (status, code))
        steps.note("UploadPart after the swap answered %s %s" % (status, code))
        s3.create_bucket(Bucket=bucket)
        code, status, _ = client_error(s3.upload_part, Bucket=bucket, Key="joined.bin", UploadId=state.get("upload", "x"),
                                       PartNumber=2, Body=part2)
        expect_equal("UploadPart once the bucket exists in the new backend, the upload not", ("NoSuchUpload", 404), (code, status))
        code, status, _ = client_error(s3.get_object, Bucket=bucket, Key="a.txt")
        expect_equal("GetObject in the new backend's bucket of the same name", ("NoSuchKey", 404), (code, status))
    with steps("swap back to the same FileStorage root: bucket, object and upload are back; the upload completes"):
        server.swap(swap_manifest("FileStorage", "data"))
        s3.head_bucket(Bucket=bucket)
        expect_equal("GetObject after swapping back", b"before the swap", s3.get_object(Bucket=bucket, Key="a.txt")["Body"].read())
        e2 = s3.upload_part(Bucket=bucket, Key="joined.bin", UploadId=state["upload"], PartNumber=2, Body=part2)["ETag"]
        s3.complete_multipart_upload(Bucket=bucket, Key="joined.bin", UploadId=state["upload"], MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": state["e1"]}, {"PartNumber": 2, "ETag": e2}]})
        expect_equal("the completed object", part1 + part2, s3.get_object(Bucket=bucket, Key="joined.bin")["Body"].read())


# MARK: key pairs from the manifest's "s3" section

MANIFEST_PAIRS = [("AKIDMANIFESTONE", "manifest-secret-one"), ("AKIDMANIFESTTWO", "manifest-secret-two/${S3E2E_VAR}")]


def manifest_with_credentials():
    with open(os.path.join(REPO, "plugins.json")) as f:
        m = json.load(f)
    m["s3"] = {"credentials": [{"accessKeyId": MANIFEST_PAIRS[0][0], "secretAccessKey": MANIFEST_PAIRS[0][1]},
                               {"accessKeyId": MANIFEST_PAIRS[1][0], "secretAccessKey": {"secret": MANIFEST_PAIRS[1][1]}}]}
    return json.dumps(m, indent=1)


def credentials_scenario(work):
    """serve --s3-listen with the manifest's s3.credentials: each pair (one with a
    ${VAR} secret) signs, the environment pair beside them too, a pair's ID with another
    pair's secret is SignatureDoesNotMatch; and a serve with manifest pairs alone starts."""
    steps = Steps("plugboard/file")
    variable = "v" + binascii.hexlify(os.urandom(4)).decode()
    pairs = [(MANIFEST_PAIRS[0][0], MANIFEST_PAIRS[0][1]), (MANIFEST_PAIRS[1][0], MANIFEST_PAIRS[1][1].replace("${S3E2E_VAR}", variable))]
    for env_pair in (True, False):
        folder = os.path.join(work, "with-env-pair" if env_pair else "manifest-only")
        os.makedirs(folder)
        try:
            server = PlugboardS3(folder, "file", manifest_text=manifest_with_credentials(), env_pair=env_pair,
                                 extra_env={"S3E2E_VAR": variable})
        except Failure as e:
            with steps("serve starts with the manifest's pairs%s" % (" and the environment pair" if env_pair else " alone")):
                raise e
            continue
        try:
            every = pairs + ([(server.access_key, server.secret)] if env_pair else [])
            for i, (key, secret) in enumerate(every):
                with steps("%s pair %s signs (%s)" % ("the environment" if i == 2 else "manifest", key, "env pair too" if env_pair else "manifest only")):
                    c = boto3_client(server, access_key=key, secret=secret)
                    bucket = "creds-%d-%s" % (i, "e" if env_pair else "m")
                    c.create_bucket(Bucket=bucket)
                    c.put_object(Bucket=bucket, Key="k", Body=key.encode())
                    expect_equal("object put with pair %s" % key, key.encode(), c.get_object(Bucket=bucket, Key="k")["Body"].read())
            with steps("a manifest pair's ID with the other pair's secret: 403 SignatureDoesNotMatch"):
                c = boto3_client(server, access_key=pairs[0][0], secret=pairs[1][1])
                code, status, _ = client_error(c.list_buckets)
                expect_equal("ListBuckets", ("SignatureDoesNotMatch", 403), (code, status))
            if not env_pair:
                with steps("without the environment pair, its ID is unknown: 403 InvalidAccessKeyId"):
                    c = boto3_client(server, access_key=ACCESS_KEY, secret="whatever-secret")
                    code, status, _ = client_error(c.list_buckets)
                    expect_equal("ListBuckets", ("InvalidAccessKeyId", 403), (code, status))
            with steps("no secret in serve's output or log (%s)" % ("env pair too" if env_pair else "manifest only")):
                server.out.seek(0)
                text = server.out.read() + server.stderr()
                for _, secret in every:
                    check(secret not in text, "a secret access key appears in serve's output")
        finally:
            with steps("serve stops on SIGTERM with status 0 (%s)" % ("env pair too" if env_pair else "manifest only")):
                server.stop()
    return steps.finish()


# MARK: main

def scenarios():
    backends = ["file"] if TARGET == "moto" else ["file", "memory", "file-isolated"]
    out = []
    for name, body in [("boto3", boto3_scenario), ("awscli", awscli_scenario), ("minio", minio_scenario),
                       ("refusals", refusals_scenario)]:
        for backend in backends:
            label = name if TARGET == "moto" else "%s-%s" % (name, backend)
            out.append((label, with_server(backend, body)))
    if TARGET != "moto":
        out.append(("vhost-file", with_server("file", vhost_scenario, ["--s3-domain", VHOST_DOMAIN])))
        out.append(("limits-file", with_server("file", limits_scenario, ["--max-body-bytes", "65536"])))
        out.append(("credentials", credentials_scenario))
        out.append(("sigv2-file", with_server("file", sigv2_scenario, manifest_text=signature_v2_manifest())))
        out.append(("hotswap", with_server("file", hotswap_scenario, ["--no-watch"], swap_manifest("FileStorage", "data"))))
    return out


def main():
    global TARGET, BUILD
    args = sys.argv[1:]
    if args[:2] == ["--target", "moto"]:
        TARGET = "moto"
        args = args[2:]
    elif args and not args[0].startswith("-") and os.path.isdir(args[0]):
        BUILD = os.path.abspath(args[0])
        args = args[1:]
    elif args and args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    if TARGET != "moto" and not os.access(os.path.join(BUILD, "plugboard"), os.X_OK):
        print("s3_clients.py: %s/plugboard not found" % BUILD, file=sys.stderr)
        sys.exit(2)
    print("S3 clients end to end against %s" % ("moto_server" if TARGET == "moto" else os.path.join(BUILD, "plugboard")), flush=True)
    chosen = scenarios()
    total = len([n for n, _ in chosen if not args or n in args])
    started = time.time()
    try:
        run_scenarios(chosen, args, "plugboard-e2e-s3-", width=16, discard=("data", "cache"))
    except SystemExit as e:
        failed = e.code if isinstance(e.code, int) else 1
        if failed != 2 or total:
            print("S3 clients: %d of %d scenarios passed, %d failed (%.0f s, %s)" % (
                total - failed, total, failed, time.time() - started, "moto_server" if TARGET == "moto" else "plugboard"), flush=True)
        raise


if __name__ == "__main__":
    main()
