#!/usr/bin/env python3
"""The two races of issue 32 across gateways: several `plugboard serve --s3-listen` hosts
over one shared backend, each request sent straight to a host (no load balancer, so the
test says which host answers what).

  completes   7 rounds: one upload (parts through host 1), then 6 CompleteMultipartUploads
              at once, alternating hosts, 3 listing parts 1-3 and 3 listing parts 1-2:
              exactly one list is answered 200 (all of its Completes, with one ETag), every
              Complete of the other list InvalidPart, and the object is that list's bytes

BACKEND is `moto` (S3Storage bound to one moto_server bucket, three hosts) or `file`
(FileStorage, one root folder shared by two hosts).

Usage: s3_races.py BUILD_FOLDER BACKEND [STEP ...]   (BUILD_FOLDER: .build/release or .build/debug)

Each step prints one PASS or FAIL line, and the run stops at the first failure, keeping
its folder and printing the last lines of every log. The exit status is the number of
failed steps. Needs moto[server] and boto3 in the package's .venv (Tests/e2e/s3-races.sh
checks).
"""
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from e2e_runner import run_steps, stop_each, stop_process
from hot_swap import start_moto
from s3_tools import MIB, REGION, Failure, Server, boto3_client, check, stopped_cleanly

BACKING = "s3-races"   # the moto bucket every host's S3Storage is bound to
MOTO_ENV = {"AWS_ACCESS_KEY_ID": "moto-key", "AWS_SECRET_ACCESS_KEY": "moto-secret"}
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "moto"


def manifest(moto_endpoint, root):
    if BACKEND == "moto":
        plugin = {"name": "S3Storage", "product": "S3Storage", "environments": ["staging"], "required": True,
                  "config": {"bucket": BACKING, "endpoint": moto_endpoint, "region": REGION, "pathStyle": True,
                             "timeoutSeconds": 30, "maxRetries": 3}}
    else:
        plugin = {"name": "FileStorage", "product": "FileStorage", "environments": ["staging"], "required": True,
                  "config": {"root": root}}
    return json.dumps({"schemaVersion": 1, "environment": "staging", "plugins": [plugin]}, indent=1)


def outcome(call):
    """(True, answer) or (False, the S3 error code)."""
    import botocore.exceptions
    try:
        return True, call()
    except botocore.exceptions.ClientError as e:
        return False, e.response["Error"]["Code"]


class Fleet:
    def __init__(self, work):
        self.work = work
        self.moto_proc, self.hosts = None, []

    def start(self):
        endpoint = None
        if BACKEND == "moto":
            self.moto_proc, endpoint = start_moto(self.work)
            import boto3
            from botocore.config import Config
            boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=MOTO_ENV["AWS_ACCESS_KEY_ID"],
                         aws_secret_access_key=MOTO_ENV["AWS_SECRET_ACCESS_KEY"],
                         config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=BACKING)
        root = os.path.join(self.work, "data")
        text = manifest(endpoint, root)
        for i in range(3 if BACKEND == "moto" else 2):
            folder = os.path.join(self.work, "host%d" % (i + 1))
            os.mkdir(folder)
            self.hosts.append(Server(folder, text, args=["--no-watch"], env=MOTO_ENV))
        self.clients = [boto3_client(h.endpoint) for h in self.hosts]
        return "%s: hosts on S3 ports %s" % (endpoint or root, ", ".join(str(h.s3_port) for h in self.hosts))

    def stop(self):
        stop_each([("host%d" % (i + 1), lambda h=host: stopped_cleanly(h)) for i, host in enumerate(self.hosts)]
                  + [("moto", self.moto_proc and (lambda: stop_process(self.moto_proc, 10)))])

    def tails(self):
        for name in ["host1/serve.err", "host2/serve.err", "host3/serve.err", "moto.err"]:
            path = os.path.join(self.work, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-15:]
                print("--- %s (last %d lines)" % (name, len(tail)))
                sys.stdout.write("".join(tail))


def completes(fleet):
    c = fleet.clients
    c[0].create_bucket(Bucket="completes")
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(1000)]
    for round in range(7):
        key = "race-%d" % round
        upload = c[0].create_multipart_upload(Bucket="completes", Key=key)["UploadId"]
        etags = [c[0].upload_part(Bucket="completes", Key=key, UploadId=upload, PartNumber=n + 1, Body=parts[n])["ETag"]
                 for n in range(3)]
        lists = [[{"PartNumber": n + 1, "ETag": etags[n]} for n in range(3)], [{"PartNumber": n + 1, "ETag": etags[n]} for n in range(2)]]
        start = threading.Barrier(6)

        def complete(i):
            start.wait(30)
            host = c[(i // 2) % len(c)]   # each list through more than one host
            return i % 2, outcome(lambda: host.complete_multipart_upload(Bucket="completes", Key=key, UploadId=upload,
                                                                           MultipartUpload={"Parts": lists[i % 2]})["ETag"])
        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(complete, range(6)))
        winners = {lst for lst, (ok, _) in results if ok}
        check(len(winners) == 1, "round %d: lists answered 200: %s (%s)" % (round, sorted(winners), results))
        winner = winners.pop()
        check(all(ok for lst, (ok, _) in results if lst == winner), "round %d: a Complete of the winning list failed: %s" % (round, results))
        check(all(answer == "InvalidPart" for lst, (ok, answer) in results if lst != winner),
              "round %d: the other list answered %s, expected InvalidPart" % (round, results))
        answered = {answer for lst, (ok, answer) in results if ok}
        check(len(answered) == 1, "round %d: one list answered ETags %s" % (round, answered))
        for host in c:
            got = host.get_object(Bucket="completes", Key=key)
            check(got["Body"].read() == b"".join(parts[:3 - winner]), "round %d: the object is not list %d's bytes" % (round, winner))
            check(got["ETag"] in answered, "round %d: the object's ETag %s is not the answered %s" % (round, got["ETag"], answered))
    return "7 rounds of 6 Completes: one list answered and stored each round"


if __name__ == "__main__":
    if BACKEND not in ("moto", "file"):
        sys.exit("s3_races.py: BACKEND is moto or file, found %r" % BACKEND)
    run_steps("s3-races", [("completes", completes)],
              set(sys.argv[3:]), Fleet, "plugboard-s3-races-")
