#!/usr/bin/env bash
# Instructions a request costs plugboard serve in user space, counted by valgrind's
# callgrind: a figure that neither the machine's load nor its speed moves, so a change
# worth a few percent can be judged on a noisy machine where requests/s cannot.
#
# For each of /healthz, a GET of a 1 KiB object through MemoryStorage (--env testing) and
# through FileStorage (the shipped plugins.json), it starts serve under callgrind, sends
# WARMUP requests, zeroes the counters, sends N requests with curl on one kept-alive
# connection, and prints the instructions executed by every thread of the server divided
# by N (the kernel's work is not counted; strace's count is serve-vs-nginx.sh's last step).
#
# Needs valgrind (apt-get install -y valgrind) and a release build without debug info:
# valgrind 3.19 (Debian 12) cannot read the DWARF 5 that Swift 6 writes. It builds one
# into SCRATCH (default /tmp/plugboard-nodebug; a few minutes the first time).
# Under valgrind, openat2 and preadv2(RWF_NOWAIT) are unknown system calls, so FileStorage
# reads on a blocking thread instead of the loop's: its figure includes that hand-over,
# which a real run of a cached object does not make.
#
# Usage: Benchmarks/instructions-per-request.sh [N] [WARMUP]      (default 2000 300;
#        KEEP=1 keeps the callgrind files for callgrind_annotate)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2000}
warmup=${2:-300}
[[ "$n" =~ ^[1-9][0-9]*$ && "$warmup" =~ ^[0-9]+$ ]] || { echo "usage: $0 [N] [WARMUP]" >&2; exit 2; }
for tool in valgrind callgrind_control callgrind_annotate curl python3; do
    command -v "$tool" >/dev/null || { echo "instructions-per-request.sh: $tool not found; install it: apt-get install -y valgrind curl python3" >&2; exit 1; }
done
scratch=${SCRATCH:-/tmp/plugboard-nodebug}
echo "building a release without debug info into $scratch ..." >&2
(cd "$repo" && swift build -c release --scratch-path "$scratch" -Xswiftc -gnone -Xcc -g0 >&2)
bin=$scratch/release

work=$(mktemp -d /tmp/plugboard-instructions-XXXXXX)
server=""
cleanup() {
    [ -z "$server" ] || { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
    # KEEP=1 keeps the callgrind files for callgrind_annotate (the folder is printed).
    if [ -n "${KEEP:-}" ]; then echo "profiles kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
head -c 1024 /dev/urandom > "$work/object.bin"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# requests COUNT URL: COUNT GETs of URL on one kept-alive connection.
requests() {
    [ "$1" -gt 0 ] || return 0
    curl -sf $(printf "$2 %.0s" $(seq "$1")) > /dev/null
}

# measure NAME ENV PATH
measure() {
    local dir=$work/$1 port url out
    mkdir -p "$dir"
    cp "$repo/plugins.json" "$dir/plugins.json"
    port=$(free_port)
    url="http://127.0.0.1:$port"
    out=$dir/callgrind.out
    (cd "$dir" && exec valgrind --tool=callgrind --callgrind-out-file="$out" "$bin/plugboard" serve \
        --listen "127.0.0.1:$port" --env "$2" --manifest plugins.json --cache-dir "$dir/cache" > serve.out 2> serve.err) &
    server=$!
    local tries=0
    until curl -sf "$url/readyz" > /dev/null 2>&1; do
        tries=$((tries + 1))
        [ "$tries" -lt 240 ] || { echo "instructions-per-request.sh: serve did not become ready:" >&2; tail -5 "$dir/serve.err" >&2; exit 1; }
        sleep 0.5
    done
    curl -sf -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$work/object.bin" \
        "$url/v1/objects/object.bin" > /dev/null
    requests "$warmup" "$url$3"
    callgrind_control -z "$server" > /dev/null
    requests "$n" "$url$3"
    callgrind_control -d "$server" > /dev/null
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
    # The dump after zeroing is the second file (out.1); its total is the N requests'.
    local total
    total=$(callgrind_annotate "$out.1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    printf "%-28s %9.0f instructions a request\n" "$1" "$(python3 -c "print($total / $n)")"
}

echo "commit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo "?"), $n requests after $warmup, curl on one connection"
measure "GET /healthz" development /healthz
measure "GET 1 KiB, MemoryStorage" testing /v1/objects/object.bin
measure "GET 1 KiB, FileStorage" development /v1/objects/object.bin
