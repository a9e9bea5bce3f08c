#!/usr/bin/env python3
"""The two races of issue 32 across gateways: several `plugboard serve --s3-listen` hosts
over one shared backend, each request sent straight to a host (no load balancer, so the
test says which host answers what).

  completes   7 rounds: one upload (parts through host 1), then 6 CompleteMultipartUploads
              at once, alternating hosts, 3 listing parts 1-3 and 3 listing parts 1-2:
              exactly one list is answered 200 (all of its Completes, with one ETag), every
              Complete of the other list InvalidPart, and the object is that list's bytes
  bucket-2    20 rounds: 25 PutObjects into a fresh bucket on host 1 racing a DeleteBucket
              on host 2, the delete a little further ahead each round: when the delete
              answered 204 no put was acknowledged, nothing is left in the backend under
              the bucket's prefix, and a put through every host answers NoSuchBucket; else
              every acknowledged object is listed through every host
  bucket-3    the same with the puts spread over hosts 1 and 3, the delete on host 2

BACKEND is `moto` (S3Storage bound to one moto_server bucket, three hosts) or `file`
(FileStorage, one root folder shared by two hosts; bucket-3 is skipped).

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
import time
from concurrent.futures import ThreadPoolExecutor

from e2e_runner import request, run_steps, stop_each, stop_process
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


def bucket_race(fleet, writers, deleter):
    c = fleet.clients
    deleted, acknowledged_kept, refused = 0, 0, 0
    for round in range(20):
        bucket = "race-%d-%d" % (len(writers), round)
        c[deleter].create_bucket(Bucket=bucket)
        for w in writers:   # each writer's host has found the bucket, and trusts it for a second
            c[w].head_bucket(Bucket=bucket)
        start = threading.Barrier(26)

        def put(i):
            start.wait(30)
            # The delete a little ahead, more each round: from puts that all land first to
            # a delete that is done first, through rounds where they cross.
            time.sleep(round * 0.002)
            return "k%02d" % i, outcome(lambda: c[writers[i % len(writers)]].put_object(Bucket=bucket, Key="k%02d" % i, Body=b"x" * 100))

        def delete():
            start.wait(30)
            return outcome(lambda: c[deleter].delete_bucket(Bucket=bucket))
        with ThreadPoolExecutor(26) as pool:
            gone = pool.submit(delete)
            puts = list(pool.map(put, range(25)))
        acked = {key for key, (ok, _) in puts if ok}
        refusals = {answer for _, (ok, answer) in puts if not ok}
        check(refusals <= {"NoSuchBucket"}, "round %d: puts refused with %s" % (round, refusals))
        refused += 25 - len(acked)
        deleted_ok, answer = gone.result()
        if deleted_ok:
            deleted += 1
            check(not acked, "round %d: DeleteBucket answered 204, and %d puts were acknowledged: %s" % (round, len(acked), sorted(acked)))
            check(outcome(lambda: c[deleter].head_bucket(Bucket=bucket)) == (False, "404"), "round %d: the deleted bucket is still there" % round)
            # Another host may trust the bucket it found for a second more (docs/S3_API.md),
            # but no write into it is acknowledged.
            for host in c:
                late = outcome(lambda: host.put_object(Bucket=bucket, Key="late", Body=b"late"))
                check(late == (False, "NoSuchBucket"), "round %d: a put into the deleted bucket answered %s" % (round, late))
            # What the puts that lost stored, they removed again: nothing comes back with
            # a bucket made again under the name.
            status, _, body = request(fleet.hosts[0].port, "GET", "/v1/objects?prefix=%s/&limit=1000" % bucket)
            left = [o["key"] for o in json.loads(body)["objects"]] if status == 200 else "GET answered %d" % status
            check(left == [], "round %d: left under the deleted bucket's prefix: %s" % (round, left))
        else:
            check(answer in ("BucketNotEmpty",), "round %d: DeleteBucket answered %s" % (round, answer))
            for host in c:
                listed = {o["Key"] for o in host.list_objects_v2(Bucket=bucket).get("Contents", [])}
                check(acked <= listed, "round %d: acknowledged but not listed: %s" % (round, sorted(acked - listed)))
            acknowledged_kept += len(acked)
    return "20 rounds: the delete won %d (no put acknowledged in them), %d acknowledged objects kept and listed by every host, %d puts NoSuchBucket" % (
        deleted, acknowledged_kept, refused)


def bucket_2(fleet):
    return bucket_race(fleet, [0], 1)


def bucket_3(fleet):
    if len(fleet.clients) < 3:
        return "skipped: the %s fleet has two hosts" % BACKEND
    return bucket_race(fleet, [0, 2], 1)


if __name__ == "__main__":
    if BACKEND not in ("moto", "file"):
        sys.exit("s3_races.py: BACKEND is moto or file, found %r" % BACKEND)
    run_steps("s3-races", [("completes", completes), ("bucket-2", bucket_2), ("bucket-3", bucket_3)],
              set(sys.argv[3:]), Fleet, "plugboard-s3-races-")
