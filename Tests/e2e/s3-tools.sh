#!/usr/bin/env bash
# Third-party S3 tools end to end (Tests/e2e/s3_tools.py) against plugboard serve --s3-listen:
# rclone and s3cmd (over FileStorage and MemoryStorage), boto3 over https through nginx (aws-chunked with a CRC32 trailer), and an
# AWS CLI sync across hot swaps between two FileStorage plugins over one root.
# Needs: rclone, nginx and openssl (apt-get install -y rclone nginx openssl), and
# boto3 >= 1.36, awscli and s3cmd in .venv (.venv/bin/pip install -r Tests/e2e/requirements.txt).
# Usage: Tests/e2e/s3-tools.sh [release|debug] [SCENARIO ...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
[ -x "$repo/.build/$mode/plugboard" ] || { echo "s3-tools.sh: $repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first" >&2; exit 1; }
python=python3
[ -x "$repo/.venv/bin/python" ] && python="$repo/.venv/bin/python"
exec "$python" "$repo/Tests/e2e/s3_tools.py" "$repo/.build/$mode" "$@"
