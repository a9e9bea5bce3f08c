#!/usr/bin/env bash
# A fleet of hosts on etcd end to end (Tests/e2e/fleet_e2e.py): a real three-member etcd
# (Tests/e2e/etcd.sh), four `plugboard serve --fleet` hosts behind HAProxy configured by
# docs/examples/haproxy-fleet.cfg, a load through HAProxy the whole time; a rollout in
# three waves, one whose plugin crashes in its preflight, one rolled back by the
# error-rate gate, the etcd leader killed mid-rollout, every etcd member stopped, signed
# plugins under requireSignatures, and a plugin fetched from moto by its digest.
# Needs: etcd and curl (apt-get install -y etcd-server curl), haproxy (apt-get install -y
# haproxy), and moto[server] in .venv (python3 -m venv .venv && .venv/bin/pip install
# -r Tests/e2e/requirements.txt).
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
[ -x "$repo/.venv/bin/moto_server" ] || missing "$repo/.venv/bin/moto_server not found; install it with: python3 -m venv .venv && .venv/bin/pip install -r Tests/e2e/requirements.txt"
exec "$repo/.venv/bin/python" "$repo/Tests/e2e/fleet_e2e.py" "$repo/.build/$mode" "$@"
