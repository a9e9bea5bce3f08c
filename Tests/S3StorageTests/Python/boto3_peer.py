"""The reference S3 client for S3Storage's tests and benchmark: boto3 against moto (or Ceph RGW).

Usage (credentials and region come from AWS_* environment variables):
  boto3_peer.py create-bucket ENDPOINT BUCKET
  boto3_peer.py put ENDPOINT BUCKET KEY FILE CONTENT_TYPE METADATA_JSON
  boto3_peer.py get ENDPOINT BUCKET KEY FILE      -> JSON {contentType, metadata, etag, size}
  boto3_peer.py bench ENDPOINT BUCKET COUNT SIZE  -> JSON {putSeconds, getSeconds}
  boto3_peer.py moto-limits ENDPOINT BUCKET       -> JSON: which S3 behaviours this server lacks
  boto3_peer.py rgw-limits ENDPOINT BUCKET        -> JSON: which S3 behaviours Ceph RGW lacks
  boto3_peer.py auth-setup ENDPOINT BUCKET        -> JSON {accessKeyId, secretAccessKey}: on a moto
      started with INITIAL_NO_AUTH_ACTION_COUNT=3, an IAM user allowed s3:*, its key, and BUCKET
"""
import json
import os
import sys
import time

import boto3
import botocore.exceptions
from botocore.config import Config


def client(endpoint):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def main(argv):
    command, endpoint, bucket = argv[1], argv[2], argv[3]
    s3 = client(endpoint)
    if command == "create-bucket":
        s3.create_bucket(Bucket=bucket)
    elif command == "put":
        key, path, content_type, metadata = argv[4], argv[5], argv[6], json.loads(argv[7])
        with open(path, "rb") as f:
            s3.put_object(Bucket=bucket, Key=key, Body=f.read(), ContentType=content_type, Metadata=metadata)
    elif command == "get":
        key, path = argv[4], argv[5]
        answer = s3.get_object(Bucket=bucket, Key=key)
        body = answer["Body"].read()
        with open(path, "wb") as f:
            f.write(body)
        print(json.dumps({"contentType": answer["ContentType"], "metadata": answer["Metadata"],
                          "etag": answer["ETag"], "size": len(body)}))
    elif command == "bench":
        count, size = int(argv[4]), int(argv[5])
        data = os.urandom(size)
        keys = ["bench/boto3/%04d" % i for i in range(count)]
        start = time.perf_counter()
        for key in keys:
            s3.put_object(Bucket=bucket, Key=key, Body=data)
        put_seconds = time.perf_counter() - start
        start = time.perf_counter()
        for key in keys:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            if len(body) != size:
                raise SystemExit("short read for %s: %d bytes" % (key, len(body)))
        get_seconds = time.perf_counter() - start
        for key in keys:
            s3.delete_object(Bucket=bucket, Key=key)
        print(json.dumps({"putSeconds": put_seconds, "getSeconds": get_seconds}))
    elif command == "auth-setup":
        # The first three requests are unauthenticated; every later one is verified.
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1")
        iam.create_user(UserName="plugboard")
        key = iam.create_access_key(UserName="plugboard")["AccessKey"]
        policy = {"Version": "2012-10-17",
                  "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        iam.put_user_policy(UserName="plugboard", PolicyName="s3", PolicyDocument=json.dumps(policy))
        user = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                            aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"],
                            config=Config(s3={"addressing_style": "path"}))
        user.create_bucket(Bucket=bucket)
        print(json.dumps({"accessKeyId": key["AccessKeyId"], "secretAccessKey": key["SecretAccessKey"]}))
    elif command == "moto-limits":
        # Two things moto_server (Flask) gets wrong for every client: a multipart/form-data
        # body is parsed as a form and stored empty, and a key with a newline is not routed.
        limits = {}
        s3.put_object(Bucket=bucket, Key="limits/multipart", Body=b"x",
                      ContentType='multipart/form-data; boundary="x y"')
        answer = s3.get_object(Bucket=bucket, Key="limits/multipart", ChecksumMode="DISABLED")
        limits["multipartBodyKept"] = answer["ContentLength"] == 1
        s3.delete_object(Bucket=bucket, Key="limits/multipart")
        try:
            s3.put_object(Bucket=bucket, Key="limits/new\nline", Body=b"x")
            limits["newlineKeyWorks"] = True
            s3.delete_object(Bucket=bucket, Key="limits/new\nline")
        except Exception:
            limits["newlineKeyWorks"] = False
        print(json.dumps(limits))
    elif command == "rgw-limits":
        # What Ceph RGW 16.2 gets wrong for every client: a PutObject's If-Match is compared
        # with the stored ETag as written, so the quoted entity-tag that S3 answers (and
        # RFC 9110 wants) never matches; the same tag without its quotes does.
        def conditional_put(tag):
            try:
                s3.put_object(Bucket=bucket, Key="limits/if-match", Body=b"second", IfMatch=tag)
                return True
            except botocore.exceptions.ClientError as error:
                if error.response.get("Error", {}).get("Code") == "PreconditionFailed":
                    return False
                raise
        limits = {}
        etag = s3.put_object(Bucket=bucket, Key="limits/if-match", Body=b"first")["ETag"]
        limits["quotedIfMatchWorks"] = conditional_put(etag)
        etag = s3.head_object(Bucket=bucket, Key="limits/if-match")["ETag"]
        limits["unquotedIfMatchWorks"] = conditional_put(etag.strip('"'))
        s3.delete_object(Bucket=bucket, Key="limits/if-match")
        print(json.dumps(limits))
    else:
        raise SystemExit("unknown command %r" % command)


if __name__ == "__main__":
    main(sys.argv)
