#!/usr/bin/env bash
# The README's quick start, as written: `plugboard serve` on the shipped plugins.json
# (FileStorage under ./data) on 127.0.0.1:8080, then the curl round trip, then SIGTERM,
# which must end the server with status 0. Runs in a temporary folder holding a copy of
# plugins.json, so ./data is created there.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
plugboard="$repo/.build/release/plugboard"
[ -x "$plugboard" ] || { echo "main-job.sh: $plugboard not found; run swift build -c release first" >&2; exit 1; }
command -v curl >/dev/null || { echo "main-job.sh: curl is needed (apt-get install curl)" >&2; exit 1; }

work=$(mktemp -d /tmp/plugboard-e2e-main-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cp "$repo/plugins.json" "$repo/README.md" "$work/"
cd "$work"

"$plugboard" serve > serve.out 2> serve.err &
pid=$!
for _ in $(seq 1 100); do grep -q 'listening on' serve.out 2>/dev/null && break; sleep 0.1; done
grep -qx 'plugboard serve: listening on http://127.0.0.1:8080' serve.out \
    || { echo "main-job.sh: serve did not start:"; cat serve.out serve.err; exit 1; }

base=http://127.0.0.1:8080/v1/objects
curl -sf -X PUT --data-binary @README.md -H 'Content-Type: text/markdown' \
     -H 'X-Plugboard-Meta-Author: ada' "$base/docs%2FREADME.md" > put.json
grep -q '"key": *"docs/README.md"' put.json || { echo "unexpected PUT answer:"; cat put.json; exit 1; }
curl -sf "$base?prefix=docs%2F" | grep -q '"docs/README.md"'
curl -sf "$base/docs%2FREADME.md" | cmp - README.md
head=$(curl -sfI "$base/docs%2FREADME.md" | tr -d '\r')
grep -qi '^etag: "[0-9a-f]\{32\}"$' <<< "$head"
grep -qi '^x-plugboard-meta-author: ada$' <<< "$head"
grep -qi '^content-type: text/markdown$' <<< "$head"
[ -d data ] || { echo "main-job.sh: FileStorage wrote no ./data folder"; exit 1; }
curl -sf -o /dev/null -w '%{http_code}' -X DELETE "$base/docs%2FREADME.md" | grep -qx 204
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/docs%2FREADME.md")" = 404 ]

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || { echo "main-job.sh: serve exited $status after SIGTERM"; cat serve.err; exit 1; }
echo "main job: served README.md through FileStorage over HTTP (PUT, list, GET, HEAD, DELETE), stopped by SIGTERM with status 0"

# The README's S3 quick start ("Any S3 client against Plugboard in three commands"), its
# code block run as written, from a folder where .build and .venv are the checkout's.
aws="$repo/.venv/bin/aws"
[ -x "$aws" ] || { echo "main-job.sh: $aws not found; the README's S3 quick start needs the AWS CLI (.venv/bin/pip install -r Tests/e2e/requirements.txt)" >&2; exit 1; }
ln -s "$repo/.build" "$work/.build"
ln -s "$repo/.venv" "$work/.venv"
awk '/^## Any S3 client against Plugboard/ { section = 1; next }
     section && /^## / { exit }
     section && /^```sh$/ { block = 1; next }
     block && /^```$/ { exit }
     block { print }' "$repo/README.md" > s3-quick-start.sh
grep -q -- '--s3-listen' s3-quick-start.sh || { echo "main-job.sh: no S3 quick start block found in README.md"; exit 1; }
# Its serve goes to the background; the line after it records the process for the stop.
sed -i '0,/&$/s//\&\necho $! > s3-serve.pid/' s3-quick-start.sh
timeout 120 bash -euo pipefail s3-quick-start.sh > s3-quick-start.out 2>&1 \
    || { echo "main-job.sh: the README's S3 quick start failed:"; cat s3-quick-start.sh s3-quick-start.out; exit 1; }
pid=$(cat s3-serve.pid)
# What the README says next: the object is readable through the native API.
curl -sf http://127.0.0.1:8082/v1/objects/photos/docs/README.md | cmp - README.md \
    || { echo "main-job.sh: photos/docs/README.md through the native API is not README.md"; cat s3-quick-start.out; exit 1; }
kill -TERM "$pid"
status=0
wait "$pid" 2>/dev/null || status=$?
# Not this shell's child (the quick start's shell started it): wait for it to be gone.
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { echo "main-job.sh: the S3 quick start's serve did not stop on SIGTERM"; exit 1; }
pid=
echo "main job: the README's S3 quick start (serve --s3-listen, aws s3 mb, aws s3 cp) stored README.md, read back through the native API"
