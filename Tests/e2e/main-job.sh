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
