#!/usr/bin/env bash
# schemathesis against docs/openapi.yaml on a real `plugboard serve` (MemoryStorage) on a
# free loopback port. Usage: Tests/e2e/schemathesis.sh [debug|release] [max examples]
set -euo pipefail
cd "$(dirname "$0")/../.."
config="${1:-release}"
examples="${2:-50}"
bin=".build/$config/plugboard"
st=.venv/bin/schemathesis
[ -x "$bin" ] || { echo "missing $bin: swift build -c $config" >&2; exit 1; }
[ -x "$st" ] || { echo "missing $st: python3 -m venv .venv && .venv/bin/pip install -r Tests/e2e/requirements.txt" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
printf '{"schemaVersion": 1, "plugins": [{"name": "Mem", "product": "MemoryStorage"}]}\n' > "$work/plugins.json"
"$bin" serve --listen 127.0.0.1:0 --manifest "$work/plugins.json" --cache-dir "$work/cache" \
    --log-level info > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^plugboard serve: listening on //p' "$work/out")
[ -n "$url" ] || { echo "serve did not start:" >&2; cat "$work/err" >&2; exit 1; }

status=0
"$st" run docs/openapi.yaml --url "$url" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection \
    --max-examples "$examples" --workers 2 --seed 1 || status=$?
# The server must have survived everything it was sent.
curl -sf "$url/healthz" >/dev/null || { echo "serve no longer answers /healthz" >&2; tail -20 "$work/err" >&2; exit 1; }
exit $status
