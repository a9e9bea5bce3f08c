#!/usr/bin/env bash
# A fleet host's start, timed (issue 36, item 0): from `plugboard serve --fleet` to its
# "listening" line, or to its exit, for
#   1. a first start on a good stable manifest (MemoryStorage);
#   2. three restarts after `fleet set` of a manifest whose plugin traps at load
#      (MisbehavingPlugin, fatalError: SIGILL), written past the preflight of `fleet set`
#      where it has one;
#   3. a start on the good one again, then a restart with two of etcd's three members
#      stopped (no quorum), the local copy in place.
# Usage: Benchmarks/fleet-start.sh PLUGBOARD   (libMemoryStorage.so and
#        libMisbehavingPlugin.so beside it: swift build --build-tests puts them there)
# Needs etcd (Debian's etcd-server) and bc.
set -u
plugboard=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/fleet-start-XXXXXX)
trap '"$here/Tests/e2e/etcd.sh" stop "$work/etcd" >/dev/null 2>&1; rm -rf "$work"' EXIT
"$here/Tests/e2e/etcd.sh" start "$work/etcd" >/dev/null
. "$work/etcd/env"
fleet=etcd://$PLUGBOARD_ETCD_ENDPOINTS/start
manifest='{"schemaVersion": 1, "environment": "testing", "plugins": [{"name": "Mem", "product": "MemoryStorage"}%s]}\n'
printf "$manifest" "" > "$work/good.json"
printf "$manifest" ', {"name": "Bad", "product": "MisbehavingPlugin", "config": {"fault": "fatalError"}}' > "$work/crash.json"
export HOME=$work XDG_CACHE_HOME=$work/cache SWIFT_BACKTRACE=enable=no

start() {
    local began=$(date +%s.%N) pid
    "$plugboard" serve --fleet "$fleet" --host-id h1 --fleet-state "$work/state" --listen 127.0.0.1:0 \
        --log-level notice > "$work/out" 2>> "$work/log" &
    pid=$!
    while kill -0 $pid 2>/dev/null && ! grep -q listening "$work/out"; do sleep 0.02; done
    local took=$(echo "$(date +%s.%N) - $began" | bc)
    if grep -q listening "$work/out"; then
        echo "listening after $took s"
        kill $pid; wait $pid
    else
        wait $pid; echo "exited with status $? after $took s"
    fi
    : > "$work/out"
}

"$plugboard" fleet set "$work/good.json" --fleet "$fleet" > /dev/null
echo "first start on good.json: $(start)"
if "$plugboard" fleet set --help | grep -q -- --no-preflight; then
    "$plugboard" fleet set "$work/crash.json" --fleet "$fleet" > /dev/null 2>&1
    echo "fleet set crash.json: exit $?"
    "$plugboard" fleet set "$work/crash.json" --fleet "$fleet" --no-preflight > /dev/null
else
    "$plugboard" fleet set "$work/crash.json" --fleet "$fleet" > /dev/null
    echo "fleet set crash.json: exit $?"
fi
for i in 1 2 3; do echo "restart $i onto crash.json: $(start)"; done
"$plugboard" fleet set "$work/good.json" --fleet "$fleet" > /dev/null
echo "start on good.json: $(start)"
"$here/Tests/e2e/etcd.sh" stop "$work/etcd" m1 > /dev/null
"$here/Tests/e2e/etcd.sh" stop "$work/etcd" m2 > /dev/null
echo "restart with 1 of 3 members (no quorum): $(start)"
