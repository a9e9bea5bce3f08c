#!/usr/bin/env bash
# A stateless gateway fleet end to end (Tests/e2e/gateway_fleet.py): three `plugboard serve
# --s3-listen` hosts over one moto bucket (S3Storage), behind HAProxy configured by
# docs/examples/haproxy-gateway.cfg. Multipart parts through different hosts assemble, an
# abort on one host is seen by all, a presigned URL works on every host, and an AWS CLI
# sync through HAProxy survives a host killed with SIGKILL: every object read back, and
# the host, started again, serves them.
# Needs: haproxy (apt-get install -y haproxy), and moto[server], boto3 and awscli in .venv
# (python3 -m venv .venv && .venv/bin/pip install -r Tests/e2e/requirements.txt).
# Usage: Tests/e2e/gateway-fleet.sh [release|debug] [STEP ...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
missing() { echo "gateway-fleet.sh: $1" >&2; exit 1; }
[ -x "$repo/.build/$mode/plugboard" ] || missing "$repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first"
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing "haproxy not found on the PATH or in /usr/sbin; install it with: apt-get install -y haproxy"
for exe in python moto_server aws; do
    [ -x "$repo/.venv/bin/$exe" ] || missing "$repo/.venv/bin/$exe not found; install it with: python3 -m venv .venv && .venv/bin/pip install -r Tests/e2e/requirements.txt"
done
"$repo/.venv/bin/python" -c 'import boto3' 2>/dev/null || missing "boto3 is not in $repo/.venv; install it with: .venv/bin/pip install -r Tests/e2e/requirements.txt"
exec "$repo/.venv/bin/python" "$repo/Tests/e2e/gateway_fleet.py" "$repo/.build/$mode" "$@"
