#!/usr/bin/env bash
# Plugboard as an S3 gateway in front of Ceph: `plugboard serve --s3-listen` with S3Storage
# bound to a RADOS Gateway bucket, and the AWS CLI through Plugboard's S3 endpoint: mb, cp
# up and down of a small file and of 20 MiB (a multipart upload at the CLI's 8 MiB
# threshold), ls, byte comparisons, rm, rb. Then the objects are looked for straight in
# RGW, where they must have landed under Plugboard's bucket prefix (docs/S3_API.md,
# "Buckets are key prefixes"), and be gone after rm and rb.
#
# Usage: Tests/e2e/s3-gateway-ceph.sh [release|debug]
# Uses the gateway named by PLUGBOARD_RGW_ENDPOINT, PLUGBOARD_RGW_ACCESS_KEY_ID and
# PLUGBOARD_RGW_SECRET_ACCESS_KEY (the env file of Tests/e2e/ceph.sh start DIR) when they
# are set; otherwise starts a cluster with ceph.sh in its scratch folder and stops it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
plugboard="$repo/.build/$mode/plugboard"
aws="$repo/.venv/bin/aws"
[ -x "$plugboard" ] || { echo "s3-gateway-ceph.sh: $plugboard not found; run swift build${mode/release/ -c release} first" >&2; exit 1; }
[ -x "$aws" ] || { echo "s3-gateway-ceph.sh: $aws not found; run: python3 -m venv .venv && .venv/bin/pip install -r Tests/e2e/requirements.txt" >&2; exit 1; }
command -v curl >/dev/null || { echo "s3-gateway-ceph.sh: curl is needed (apt-get install curl)" >&2; exit 1; }

work=$(mktemp -d /tmp/plugboard-e2e-ceph-XXXXXX)
serve_pid="" own_cluster="" failed=1
cleanup() {
    if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
    [ -z "$own_cluster" ] || "$repo/Tests/e2e/ceph.sh" stop "$work/ceph" || true
    if [ $failed = 0 ]; then
        rm -rf "$work"
    else
        echo "s3-gateway-ceph.sh: FAILED; files kept in $work" >&2
        [ -f "$work/serve.err" ] && { echo "---- serve.err (last lines)" >&2; tail -n 25 "$work/serve.err" >&2; }
    fi
}
trap cleanup EXIT
fail() { echo "s3-gateway-ceph.sh: $*" >&2; exit 1; }

if [ -z "${PLUGBOARD_RGW_ENDPOINT:-}" ]; then
    "$repo/Tests/e2e/ceph.sh" start "$work/ceph"
    own_cluster=1
    set -a
    . "$work/ceph/env"
    set +a
fi
: "${PLUGBOARD_RGW_ACCESS_KEY_ID:?is not set, but PLUGBOARD_RGW_ENDPOINT is: load all of ceph.sh's env file (set -a; . DIR/env; set +a)}"
: "${PLUGBOARD_RGW_SECRET_ACCESS_KEY:?is not set, but PLUGBOARD_RGW_ENDPOINT is: load all of ceph.sh's env file (set -a; . DIR/env; set +a)}"

# The AWS CLI with its own config (path-style, 8 MiB multipart threshold and parts), no
# retries that would hide a failure, and nothing from the user's ~/.aws.
cat > "$work/aws-config" <<EOF
[default]
region = us-east-1
s3 =
  addressing_style = path
  multipart_threshold = 8MB
  multipart_chunksize = 8MB
EOF
# `aws_at ENDPOINT KEY_ID SECRET ARGS...`
aws_at() {
    local endpoint=$1 key=$2 secret=$3
    shift 3
    env -u AWS_SESSION_TOKEN -u AWS_PROFILE AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" \
        AWS_CONFIG_FILE="$work/aws-config" AWS_SHARED_CREDENTIALS_FILE="$work/no-credentials" \
        AWS_EC2_METADATA_DISABLED=true AWS_MAX_ATTEMPTS=1 AWS_PAGER="" \
        "$aws" --endpoint-url "$endpoint" "$@"
}
rgw() { aws_at "$PLUGBOARD_RGW_ENDPOINT" "$PLUGBOARD_RGW_ACCESS_KEY_ID" "$PLUGBOARD_RGW_SECRET_ACCESS_KEY" "$@"; }

# The RGW bucket behind Plugboard, and the bucket clients see through Plugboard.
backing="plugboard-gateway-$RANDOM$RANDOM"
bucket="through-plugboard"
rgw s3 mb "s3://$backing" > /dev/null

cat > "$work/plugins.json" <<EOF
{
  "schemaVersion": 1,
  "environment": "staging",
  "plugins": [
    {
      "name": "S3Storage",
      "product": "S3Storage",
      "config": {
        "bucket": "$backing",
        "endpoint": "\${PLUGBOARD_RGW_ENDPOINT}",
        "region": "us-east-1",
        "accessKeyId": "\${PLUGBOARD_RGW_ACCESS_KEY_ID}",
        "secretAccessKey": {"secret": "\${PLUGBOARD_RGW_SECRET_ACCESS_KEY}"}
      }
    }
  ]
}
EOF
gateway_key=AKIDPLUGBOARDGATEWAY
gateway_secret="gateway-secret-$RANDOM$RANDOM$RANDOM"
cd "$work"
PLUGBOARD_S3_ACCESS_KEY_ID=$gateway_key PLUGBOARD_S3_SECRET_ACCESS_KEY=$gateway_secret SWIFT_BACKTRACE=enable=no \
    "$plugboard" serve --listen 127.0.0.1:0 --s3-listen 127.0.0.1:0 --manifest plugins.json --cache-dir ./cache \
    > serve.out 2> serve.err &
serve_pid=$!

# Ready when it has printed both addresses and /readyz answers 200 (S3Storage loaded and
# its bucket checked); the bound is for a loaded CI machine.
api_port="" s3_port=""
for _ in $(seq 1 600); do
    kill -0 "$serve_pid" 2>/dev/null || fail "serve exited before it was ready"
    api_port=$(sed -n 's|^plugboard serve: listening on http://127.0.0.1:\([0-9]*\)$|\1|p' serve.out)
    s3_port=$(sed -n 's|^plugboard serve: S3 API listening on http://127.0.0.1:\([0-9]*\)$|\1|p' serve.out)
    if [ -n "$api_port" ] && [ -n "$s3_port" ] \
       && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/readyz")" = 200 ]; then
        break
    fi
    sleep 0.1
done
[ -n "$s3_port" ] || fail "serve printed no 'S3 API listening on' line within 60 s; stdout: $(cat serve.out)"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/readyz")" = 200 ] \
    || fail "GET /readyz did not answer 200 within 60 s: $(curl -s "http://127.0.0.1:$api_port/readyz")"
gateway() { aws_at "http://127.0.0.1:$s3_port" "$gateway_key" "$gateway_secret" "$@"; }

head -c 300 /dev/urandom > small.bin
head -c $((20 * 1024 * 1024)) /dev/urandom > big.bin

gateway s3 mb "s3://$bucket" | grep -qx "make_bucket: $bucket" || fail "aws s3 mb s3://$bucket through Plugboard: no make_bucket line"
gateway s3 cp small.bin "s3://$bucket/files/small.bin" > /dev/null
gateway s3 cp big.bin "s3://$bucket/files/big.bin" > /dev/null
etag=$(gateway s3api head-object --bucket "$bucket" --key files/big.bin --query ETag --output text)
case "$etag" in *-3\"|*-3) ;; *) fail "files/big.bin: expected the ETag of a 3-part multipart upload (\"...-3\"), found $etag" ;; esac
gateway s3 cp "s3://$bucket/files/small.bin" small.back > /dev/null
gateway s3 cp "s3://$bucket/files/big.bin" big.back > /dev/null
cmp small.bin small.back || fail "files/small.bin read back through Plugboard differs from what was written"
cmp big.bin big.back || fail "files/big.bin read back through Plugboard differs from what was written"
listed=$(gateway s3 ls "s3://$bucket/files/" | awk '{ print $NF }' | sort | tr '\n' ' ')
[ "$listed" = "big.bin small.bin " ] || fail "aws s3 ls s3://$bucket/files/ through Plugboard: expected big.bin small.bin, found: $listed"

# Straight at RGW: Plugboard's bucket is the prefix "$bucket/" of the backing bucket.
size=$(rgw s3api head-object --bucket "$backing" --key "$bucket/files/big.bin" --query ContentLength --output text)
[ "$size" = $((20 * 1024 * 1024)) ] || fail "RGW object $backing/$bucket/files/big.bin: expected 20971520 bytes, found $size"
rgw s3 cp "s3://$backing/$bucket/files/big.bin" big.rgw > /dev/null
rgw s3 cp "s3://$backing/$bucket/files/small.bin" small.rgw > /dev/null
cmp big.bin big.rgw || fail "RGW object $backing/$bucket/files/big.bin differs from the file uploaded through Plugboard"
cmp small.bin small.rgw || fail "RGW object $backing/$bucket/files/small.bin differs from the file uploaded through Plugboard"
rgw s3api head-object --bucket "$backing" --key "_plugboard-s3/buckets/$bucket" > /dev/null \
    || fail "RGW: expected the bucket marker _plugboard-s3/buckets/$bucket in $backing"
uploads=$(rgw s3 ls --recursive "s3://$backing/_plugboard-s3/uploads/" || true)
[ -z "$uploads" ] || fail "RGW: expected no parts left of the completed multipart upload, found: $uploads"

gateway s3 rm "s3://$bucket/files/small.bin" > /dev/null
gateway s3 rm "s3://$bucket/files/big.bin" > /dev/null
gateway s3 rb "s3://$bucket" | grep -qx "remove_bucket: $bucket" || fail "aws s3 rb s3://$bucket through Plugboard: no remove_bucket line"
gateway s3 ls | grep -q " $bucket\$" && fail "aws s3 ls through Plugboard still lists $bucket after rb"
left=$(rgw s3 ls --recursive "s3://$backing/" || true)
[ -z "$left" ] || fail "RGW: expected $backing empty after rm and rb through Plugboard, found: $left"
rgw s3 rb "s3://$backing" > /dev/null

kill -TERM "$serve_pid"
status=0
wait "$serve_pid" || status=$?
serve_pid=""
[ "$status" = 0 ] || fail "serve exited $status after SIGTERM, expected 0"
failed=0
echo "s3-gateway-ceph: the AWS CLI through plugboard serve --s3-listen onto Ceph RGW: mb, cp 300 B and 20 MiB (multipart, 3 parts) up and down, ls, rm, rb; the objects found byte for byte in RGW under $bucket/, and gone after rb"
