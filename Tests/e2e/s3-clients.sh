#!/usr/bin/env bash
# The S3 endpoint end to end (Tests/e2e/s3_clients.py): boto3, the AWS CLI and the MinIO
# SDK against `plugboard serve --s3-listen` over FileStorage and MemoryStorage, and the
# refusals (wrong secret, expired presigned URL, tampered aws-chunked signature, wrong
# CRC32 trailer) built by hand, each checking that nothing was stored.
# Usage: Tests/e2e/s3-clients.sh [release|debug] [SCENARIO ...]
#        Tests/e2e/s3-clients.sh moto [SCENARIO ...]   (the same clients against moto_server)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
python=python3
[ -x "$repo/.venv/bin/python" ] && python="$repo/.venv/bin/python"
[ -x "$repo/.venv/bin/aws" ] || { echo "s3-clients.sh: $repo/.venv/bin/aws not found; run .venv/bin/pip install -r Tests/e2e/requirements.txt" >&2; exit 1; }
if [ "$mode" = moto ]; then
    exec "$python" "$repo/Tests/e2e/s3_clients.py" --target moto "$@"
fi
[ -x "$repo/.build/$mode/plugboard" ] || { echo "s3-clients.sh: $repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first" >&2; exit 1; }
exec "$python" "$repo/Tests/e2e/s3_clients.py" "$repo/.build/$mode" "$@"
