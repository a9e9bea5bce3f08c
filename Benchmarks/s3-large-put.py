#!/usr/bin/env python3
"""A large PutObject through the S3 endpoint (issue 32: the cost of the default CRC64NVME).

  Benchmarks/s3-large-put.py [SIZE_MIB] [RUNS]      (default 1024 3: 1 GiB, three PUTs)

One release `plugboard serve --s3-listen` over FileStorage in a temporary folder; a file of
SIZE_MIB random MiB PUT RUNS times with `curl -T` to a SigV4 presigned URL (UNSIGNED-PAYLOAD,
so the client hashes nothing and the server checks no payload hash: what is left is the
server's path, the storage's write and the checksum it computes). Prints one JSON object:
each run's MiB/s (size / curl's total time), the best, and the checksum headers answered.
Needs curl, boto3 (run it with .venv/bin/python), and `swift build -c release`
(PLUGBOARD_RELEASE=DIR runs another build's plugboard, for a before/after comparison).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20
KEY_ID, SECRET = "bench", "bench-secret-key-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    size_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    import boto3
    from botocore.config import Config
    with tempfile.TemporaryDirectory(prefix="s3-large-put-") as work:
        with open(os.path.join(work, "plugins.json"), "w") as f:
            json.dump({"schemaVersion": 1, "plugins": [{"name": "Files", "product": "FileStorage",
                                                          "config": {"root": os.path.join(work, "data")}}]}, f)
        body = os.path.join(work, "large.bin")
        chunk = os.urandom(MIB)
        with open(body, "wb") as f:
            for i in range(size_mib):
                f.write(chunk[i % 251:] + chunk[:i % 251])
        native, s3port = free_port(), free_port()
        env = dict(os.environ, PLUGBOARD_S3_ACCESS_KEY_ID=KEY_ID, PLUGBOARD_S3_SECRET_ACCESS_KEY=SECRET)
        server = subprocess.Popen([os.path.join(os.environ.get("PLUGBOARD_RELEASE", os.path.join(REPO, ".build", "release")), "plugboard"), "serve",
                                   "--listen", "127.0.0.1:%d" % native, "--s3-listen", "127.0.0.1:%d" % s3port,
                                   "--max-body-bytes", str(size_mib * MIB + MIB),
                                   "--manifest", os.path.join(work, "plugins.json")],
                                  env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "stderr"), "w"))
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen("http://127.0.0.1:%d/readyz" % native, timeout=2)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit("s3-large-put.py: serve did not become ready")
                    time.sleep(0.1)
            s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % s3port, region_name="us-east-1",
                              aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                              config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
            s3.create_bucket(Bucket="bench")
            speeds, answered = [], ""
            for run in range(runs):
                url = s3.generate_presigned_url("put_object", Params={"Bucket": "bench", "Key": "large-%d" % run}, ExpiresIn=3600)
                out = subprocess.run(["curl", "-s", "-D", "-", "-o", "/dev/null", "-T", body, "-w", "%{http_code} %{time_total}", url],
                                     capture_output=True, text=True, check=True).stdout
                status, seconds = out.strip().splitlines()[-1].split()[-2:]
                if status != "200":
                    sys.exit("s3-large-put.py: PUT answered %s" % out)
                answered = [line.strip() for line in out.splitlines() if line.lower().startswith("x-amz-checksum")]
                speeds.append(round(size_mib / float(seconds), 1))
            print(json.dumps({"size_mib": size_mib, "mib_per_s": speeds, "best": max(speeds),
                              "checksum_headers": answered, "load_average": os.getloadavg()}))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
