#!/bin/bash
# The isolated plugin's wire, beside its floor and its peer, in one run (docs/BENCHMARKS.md,
# "The isolated plugin's wire"):
#   1. shared/tools/ipc-rtt.c: one byte each way between two processes over a socketpair,
#      a pipe pair, a futex, spin-then-futex: what the machine allows;
#   2. plugboard-bench ipc: a call-sized frame (64 bytes out, 256 back) to ipc-echo in a child
#      over the socket and the ring transport (latency, paced latency, 16 in flight from 4
#      threads, CPU time a call);
#   3. HashiCorp go-plugin's per-call cost (shared/tools/go-plugin-kv, Debian's go-plugin);
# then 1-3 again with both processes on one CPU (taskset -c 0).
#
# Usage: Benchmarks/ipc-vs-go-plugin.sh [--no-build]
# The shared tools are found in $PLUGBOARD_SHARED_TOOLS (default ../shared/tools). go-plugin
# needs: apt-get install -y golang-go golang-github-hashicorp-go-plugin-dev golang-google-grpc-dev \
#            golang-github-golang-protobuf-1-5-dev golang-golang-x-net-dev
set -euo pipefail
cd "$(dirname "$0")/.."
tools=${PLUGBOARD_SHARED_TOOLS:-../shared/tools}
work=$(mktemp -d /tmp/plugboard-ipc-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" != "--no-build" ]; then
    swift build -c release --product plugboard-bench >/dev/null
    swift build -c release --product ipc-echo >/dev/null
fi
bench=.build/release/plugboard-bench

cc -O2 -o "$work/ipc-rtt" "$tools/ipc-rtt.c"
kvbench=""
if command -v go >/dev/null && [ -d /usr/share/gocode/src/github.com/hashicorp/go-plugin ]; then
    mkdir -p "$work/go/src/kvbench"
    cp "$tools"/go-plugin-kv/*.go "$work/go/src/kvbench/"
    (cd "$work/go/src/kvbench" && GO111MODULE=off GOPATH="$work/go:/usr/share/gocode" GOCACHE="$work/gocache" go build -o kvbench .)
    kvbench="$work/go/src/kvbench/kvbench"
else
    echo "go-plugin: skipped (Go or Debian's go-plugin sources are missing; see the usage above)"
fi

echo "machine: nproc $(nproc), kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
for pin in "" "taskset -c 0"; do
    echo
    echo "=== ${pin:-both vCPUs} ==="
    echo "--- ipc-rtt (one byte each way, 20,000 trips)"
    $pin "$work/ipc-rtt"
    echo "--- plugboard-bench ipc"
    if [ -z "$pin" ]; then
        $bench ipc
    else
        # On one CPU a spinning side only delays the side it waits for: the spinning cases
        # are left out.
        $pin $bench ipc --only socket,ring-spin0,socket-paced,ring-spin0-paced,socket-16x4,ring-spin0-16x4
    fi
    if [ -n "$kvbench" ]; then
        echo "--- go-plugin (net/rpc over a Unix socket, 20,000 calls of a one-string Get)"
        (cd "$work" && $pin "$kvbench" 2>/dev/null)
    fi
done
