#!/usr/bin/env bash
# plugboard serve (release, MemoryStorage) against nginx (Debian) serving the same 1 KiB
# file from disk: wrk -t2 -c64 -d10s on each, in one run. Prints requests/s, p99 and
# the ratio (goal: plugboard >= 0.5x nginx). Usage: Benchmarks/serve-vs-nginx.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10}"
for tool in wrk nginx curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install -y wrk nginx curl" >&2; exit 1; }
done
swift build -c release --product plugboard >/dev/null
swift build -c release --product MemoryStorage >/dev/null
bin=.build/release/plugboard

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

head -c 1024 /dev/urandom > "$work/object.bin"
printf '{"schemaVersion": 1, "plugins": [{"name": "Mem", "product": "MemoryStorage"}]}\n' > "$work/plugins.json"

# plugboard serve on a free port; the port comes from its start-up line.
"$bin" serve --listen 127.0.0.1:0 --manifest "$work/plugins.json" --cache-dir "$work/cache" \
    --max-connections 1024 > "$work/serve.out" 2> "$work/serve.err" &
pids+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
plugboard_url=$(sed -n 's/^plugboard serve: listening on //p' "$work/serve.out")
[ -n "$plugboard_url" ] || { cat "$work/serve.err" >&2; exit 1; }
curl -sf -X PUT --data-binary @"$work/object.bin" "$plugboard_url/v1/objects/object.bin" >/dev/null

# nginx, unprivileged, with its own prefix, on a free port found by binding port 0.
nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx/html" "$work/nginx/logs" "$work/nginx/tmp"
cp "$work/object.bin" "$work/nginx/html/object.bin"
# nginx started by root runs its workers as nobody, who must reach the file (the plugin
# cache makes its parent folder private, so set the modes now).
chmod 755 "$work"
chmod -R a+rX "$work/nginx"
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes auto;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx/tmp/body;
    proxy_temp_path $work/nginx/tmp/proxy;
    fastcgi_temp_path $work/nginx/tmp/fastcgi;
    uwsgi_temp_path $work/nginx/tmp/uwsgi;
    scgi_temp_path $work/nginx/tmp/scgi;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nginx_port;
        root $work/nginx/html;
    }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" 2>"$work/nginx/logs/stderr" &
pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$nginx_port/object.bin" -o /dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$nginx_port/object.bin" -o /dev/null || {
    echo "nginx did not serve the file:" >&2; tail -3 "$work/nginx/logs/error.log" >&2; exit 1; }
cmp <(curl -sf "$plugboard_url/v1/objects/object.bin") <(curl -sf "http://127.0.0.1:$nginx_port/object.bin")

run() {  # name url -> "rps p99"
    local out
    out=$(wrk -t2 -c64 -d"${duration}s" --latency "$2")
    echo "$out" > "$work/wrk-$1.txt"
    local rps p99
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    echo "$rps $p99"
}
echo "machine: $(nproc) cores, $(uname -sr); wrk -t2 -c64 -d${duration}s --latency, GET of a 1 KiB object"
read -r p_rps p_p99 < <(run plugboard "$plugboard_url/v1/objects/object.bin")
read -r n_rps n_p99 < <(run nginx "http://127.0.0.1:$nginx_port/object.bin")
printf '%-16s %12s req/s   p99 %s\n' "plugboard serve" "$p_rps" "$p_p99"
printf '%-16s %12s req/s   p99 %s\n' "nginx" "$n_rps" "$n_p99"
ratio=$(awk -v a="$p_rps" -v b="$n_rps" 'BEGIN { printf "%.2f", a / b }')
goal=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.5) ? "met" : "NOT met" }')
echo "ratio: ${ratio}x nginx (goal >= 0.5x: $goal)"
