#!/usr/bin/env python3
"""What the bucket fence (issue 32) costs a write: one `plugboard serve --s3-listen` over
S3Storage bound to a moto_server bucket, then over FileStorage, and boto3 with 8 threads
putting N objects of 1 KiB into one bucket. Prints PutObjects per second, the mean
latency, and (over moto) the requests the gateway sent to moto per PutObject, counted in
moto's access log.

Usage: Benchmarks/s3-bucket-fence.py BUILD_FOLDER [N]   (default N 2000)
Needs: .venv with boto3 and moto[server], a build of plugboard and the storage plugins.
"""
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
if len(sys.argv) < 2:
    sys.exit("usage: s3-bucket-fence.py BUILD_FOLDER [N]")
sys.argv = [sys.argv[0], os.path.abspath(sys.argv[1])] + sys.argv[2:]   # s3_tools reads the build folder from argv[1]

from e2e_runner import stop_process  # noqa: E402
from hot_swap import start_moto  # noqa: E402
from s3_tools import REGION, Server, boto3_client  # noqa: E402

N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
MOTO_ENV = {"AWS_ACCESS_KEY_ID": "moto-key", "AWS_SECRET_ACCESS_KEY": "moto-secret"}


def manifest(plugin):
    import json
    return json.dumps({"schemaVersion": 1, "environment": "staging",
                       "plugins": [dict(plugin, environments=["staging"], required=True)]})


def run(work, plugin, moto_err=None):
    server = Server(work, manifest(plugin), args=["--no-watch"], env=MOTO_ENV)
    try:
        client = boto3_client(server.endpoint)
        client.create_bucket(Bucket="fence")
        body = os.urandom(1024)
        client.put_object(Bucket="fence", Key="warm", Body=body)
        before = moto_requests(moto_err)
        latencies = []

        def put(i):
            started = time.perf_counter()
            client.put_object(Bucket="fence", Key="k%05d" % i, Body=body)
            latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(put, range(N)))
        elapsed = time.perf_counter() - started
        per_put = (moto_requests(moto_err) - before) / N if moto_err else None
        return N / elapsed, 1000 * sum(latencies) / len(latencies), per_put
    finally:
        server.stop()


def moto_requests(path):
    if not path:
        return 0
    with open(path, errors="replace") as f:
        return sum(1 for line in f if '" 200 ' in line or '" 204 ' in line or '" 404 ' in line)


def main():
    work = tempfile.mkdtemp(prefix="plugboard-fence-bench-")
    moto, endpoint = start_moto(work)
    try:
        import boto3
        boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="moto-key",
                     aws_secret_access_key="moto-secret").create_bucket(Bucket="fence-backing")
        os.mkdir(os.path.join(work, "moto-host"))
        rate, mean, per_put = run(os.path.join(work, "moto-host"),
                                  {"name": "S3Storage", "product": "S3Storage",
                                   "config": {"bucket": "fence-backing", "endpoint": endpoint, "region": REGION, "pathStyle": True}},
                                  moto_err=os.path.join(work, "moto.err"))
        print("S3Storage on moto: %d PutObjects, %.0f/s, mean %.1f ms, %.2f moto requests per PutObject" % (N, rate, mean, per_put))
        os.mkdir(os.path.join(work, "file-host"))
        rate, mean, _ = run(os.path.join(work, "file-host"),
                            {"name": "FileStorage", "product": "FileStorage", "config": {"root": os.path.join(work, "data")}})
        print("FileStorage:       %d PutObjects, %.0f/s, mean %.1f ms" % (N, rate, mean))
    finally:
        stop_process(moto, 10)


if __name__ == "__main__":
    main()
