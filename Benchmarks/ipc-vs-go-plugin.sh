#!/bin/bash
# The isolated plugin's wire, beside its floor and its peer, in one run (docs/BENCHMARKS.md,
# "The isolated plugin's wire"):
#   1. shared/tools/ipc-rtt.c: one byte each way between two processes over a socketpair,
#      a pipe pair, a futex, spin-then-futex: what the machine allows;
#   2. plugboard-bench ipc: a call-sized frame (64 bytes out, 256 back) to ipc-echo in a child
#      over the socket and the ring transport (latency, paced latency, 16 in flight from 4
#      threads, CPU time a call);
#   3. HashiCorp go-plugin's per-call cost (shared/tools/go-plugin-kv, Debian's go-plugin);
# where the scheduler puts the processes, with the two sides on distinct vCPUs (pinned), and
# with both on one vCPU (taskset -c 0).
#
# With --isolated, part 2 is `plugboard-bench isolated` instead (docs/BENCHMARKS.md,
# "Isolated plugins"): head and a 1 KiB get through a PluginHost, MemoryStorage in process
# and isolated over both transports; where the scheduler puts them and on one vCPU (the
# worker inherits the host's affinity, so the across-vCPU placement is left out).
#
# Usage: Benchmarks/ipc-vs-go-plugin.sh [--no-build] [--isolated]
# The shared tools are found in $PLUGBOARD_SHARED_TOOLS (default ../shared/tools). go-plugin
# needs: apt-get install -y golang-go golang-github-hashicorp-go-plugin-dev golang-google-grpc-dev \
#            golang-github-golang-protobuf-1-5-dev golang-golang-x-net-dev
set -euo pipefail
cd "$(dirname "$0")/.."
tools=${PLUGBOARD_SHARED_TOOLS:-../shared/tools}
build=yes isolated=""
for arg in "$@"; do
    case $arg in
    --no-build) build="" ;;
    --isolated) isolated=yes ;;
    *) echo "usage: $0 [--no-build] [--isolated]" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d /tmp/plugboard-ipc-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ -n "$build" ]; then
    if [ -n "$isolated" ]; then
        # The host's worker is `plugboard worker`, the plugin MemoryStorage's .so.
        swift build -c release >/dev/null
    else
        swift build -c release --product plugboard-bench >/dev/null
        swift build -c release --product ipc-echo >/dev/null
    fi
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

# On a builder shared with compilers, the benchmark runs first when it may (root: nice -20),
# which is as near an idle machine as such a builder gets; the "noisy" flags still say how
# much CPU the others took.
nice=""
[ "$(id -u)" = 0 ] && nice="nice -n -20"

echo "machine: nproc $(nproc), kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), loadavg: $(cut -d' ' -f1-3 /proc/loadavg), priority: ${nice:-normal}"
placements="scheduler across one"
[ -n "$isolated" ] && placements="scheduler one"
for placement in $placements; do
    echo
    case $placement in
    scheduler)
        echo "=== where the scheduler puts them ==="
        pin=""; childcpu=(); only=() ;;
    across)
        # Host on vCPU 0, child on vCPU 1: every wake-up crosses vCPUs (an idle machine's case).
        echo "=== across vCPUs: host on 0, child on 1 (plugboard-bench only: the others fork their child) ==="
        pin="taskset -c 0"; childcpu=(--child-cpu 1); only=() ;;
    one)
        # On one CPU a spinning side only delays the side it waits for: the spinning cases
        # are left out.
        echo "=== both on vCPU 0 ==="
        pin="taskset -c 0"; childcpu=()
        only=(--only socket,ring-spin0,socket-paced,ring-spin0-paced,socket-16x4,ring-spin0-16x4) ;;
    esac
    if [ $placement != across ]; then
        echo "--- ipc-rtt (one byte each way, 20,000 trips)"
        $nice $pin "$work/ipc-rtt"
    fi
    if [ -n "$isolated" ]; then
        echo "--- plugboard-bench isolated"
        $nice $pin $bench isolated 2>&1 | grep -v '^  \(measuring\|starting\)'
    else
        echo "--- plugboard-bench ipc"
        $nice $pin $bench ipc "${childcpu[@]}" "${only[@]}" 2>&1 | grep -v '^  measuring'
    fi
    if [ -n "$kvbench" ] && [ $placement != across ]; then
        echo "--- go-plugin (net/rpc over a Unix socket, 20,000 calls of a one-string Get)"
        (cd "$work" && $nice $pin "$kvbench" 2>/dev/null)
    fi
done
