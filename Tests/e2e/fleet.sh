#!/usr/bin/env bash
# A fleet of hosts on etcd end to end (Tests/e2e/fleet_e2e.py): a real three-member etcd
# (Tests/e2e/etcd.sh), four `plugboard serve --fleet` hosts behind HAProxy configured by
# docs/examples/haproxy-fleet.cfg, a load through HAProxy the whole time; a rollout in
# three waves, one whose plugin crashes in its preflight, one rolled back by the
# error-rate gate, the etcd leader killed mid-rollout, and every etcd member stopped.
# Needs: etcd and curl (apt-get install -y etcd-server curl), haproxy (apt-get install -y
# haproxy), python3.
# Usage: Tests/e2e/fleet.sh [release|debug] [STEP ...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
missing() { echo "fleet.sh: $1" >&2; exit 1; }
[ -x "$repo/.build/$mode/plugboard" ] || missing "$repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first"
command -v etcd >/dev/null || missing "etcd not found on the PATH; install it with: apt-get install -y etcd-server"
command -v curl >/dev/null || missing "curl not found on the PATH; install it with: apt-get install -y curl"
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing "haproxy not found on the PATH or in /usr/sbin; install it with: apt-get install -y haproxy"
python=python3
[ -x "$repo/.venv/bin/python" ] && python="$repo/.venv/bin/python"
exec "$python" "$repo/Tests/e2e/fleet_e2e.py" "$repo/.build/$mode" "$@"
