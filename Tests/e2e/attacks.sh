#!/usr/bin/env bash
# Attacks on plugboard serve end to end (Tests/e2e/attacks.py, issue 11): idle connections
# that send nothing (held, and reopened at 26 a second), slow uploads and slow readers,
# each from 127.0.0.2 while a legitimate client at 127.0.0.1 GETs a 1 KiB object; each
# scenario asserts that client's success rate (100%), the server's peak RSS and that the
# slow connections are dropped. stalled-readers (issue 25): 800 GETs of a 4 MiB object that
# never read (PLUGBOARD_STALLED_READERS=N for another count), the server's RSS within
# 64 MiB / 2,400 a reader of its idle figure while they are held and after they leave;
# stalled-readers-s3 the same through the S3 endpoint (presigned GETs).
# Extra serve options: PLUGBOARD_SERVE_ARGS="--opt value ...".
# Usage: Tests/e2e/attacks.sh [release|debug] [SCENARIO ...]
#   scenarios: idle-flood idle-reconnect slow-upload slow-reader stalled-readers
#   stalled-readers-s3 (default: all, ~3 minutes)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
[ -x "$repo/.build/$mode/plugboard" ] || { echo "attacks.sh: $repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first" >&2; exit 1; }
[ -e "$repo/.build/$mode/libFileStorage.so" ] || { echo "attacks.sh: $repo/.build/$mode/libFileStorage.so not found; run swift build${mode/release/ -c release} --product FileStorage first" >&2; exit 1; }
python=python3
[ -x "$repo/.venv/bin/python" ] && python="$repo/.venv/bin/python"
exec timeout --signal=TERM --kill-after=30 600 "$python" "$repo/Tests/e2e/attacks.py" "$repo/.build/$mode" "$@"
