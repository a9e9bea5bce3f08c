#!/usr/bin/env bash
# The data-loss races of issue 32 across gateways (Tests/e2e/s3_races.py): racing
# CompleteMultipartUploads of one upload, and a DeleteBucket on one host racing PutObjects
# on the others, over three `plugboard serve --s3-listen` hosts on one moto bucket
# (S3Storage) and over two hosts on one FileStorage root.
# Needs: moto[server] and boto3 in .venv (python3 -m venv .venv && .venv/bin/pip install 'moto[server]' boto3).
# Usage: Tests/e2e/s3-races.sh [release|debug] [STEP ...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
missing() { echo "s3-races.sh: $1" >&2; exit 1; }
[ -x "$repo/.build/$mode/plugboard" ] || missing "$repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first"
[ -x "$repo/.venv/bin/moto_server" ] || missing "$repo/.venv/bin/moto_server not found; install it with: python3 -m venv .venv && .venv/bin/pip install 'moto[server]' boto3"
"$repo/.venv/bin/python" -c 'import boto3' 2>/dev/null || missing "boto3 is not in $repo/.venv; install it with: .venv/bin/pip install boto3"
status=0
for backend in moto file; do
    "$repo/.venv/bin/python" "$repo/Tests/e2e/s3_races.py" "$repo/.build/$mode" "$backend" "$@" || status=$((status + $?))
done
exit $status
