#!/usr/bin/env bash
# Hot swap end to end (Tests/e2e/hot_swap.py): swaps under load with 0 failed requests,
# rebuilt plugins, refusals, debounce, ConfigMap links, triggers, drain, image bounds,
# crash attribution and check's preflight, against a real plugboard serve.
# Usage: Tests/e2e/hot-swap.sh [release|debug] [SCENARIO ...]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-release}
shift || true
[ -x "$repo/.build/$mode/plugboard" ] || { echo "hot-swap.sh: $repo/.build/$mode/plugboard not found; run swift build${mode/release/ -c release} first" >&2; exit 1; }
python=python3
[ -x "$repo/.venv/bin/python" ] && python="$repo/.venv/bin/python"
exec "$python" "$repo/Tests/e2e/hot_swap.py" "$repo/.build/$mode" "$@"
