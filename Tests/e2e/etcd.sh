#!/usr/bin/env bash
# A real etcd cluster on loopback (Debian's etcd-server 3.4): the fleet's store for the
# end-to-end tests and the README. Each member has its own client and peer port (free
# ones, picked at start) and its own data folder under DIR.
#
# Usage: Tests/e2e/etcd.sh start DIR [MEMBERS]   starts MEMBERS (default 3) in DIR (new or
#                                                empty), waits until each is healthy,
#                                                writes DIR/env
#        Tests/e2e/etcd.sh stop DIR [NAME]       stops every member DIR/pids names (or
#                                                member NAME alone: m0, m1, ...) with SIGTERM
#        Tests/e2e/etcd.sh kill DIR NAME         kills member NAME with SIGKILL
#        Tests/e2e/etcd.sh restart DIR NAME      starts a stopped member NAME again, with its
#                                                data, and waits until it is healthy
#        Tests/e2e/etcd.sh leader DIR            prints the leader's name, pid and client
#                                                port ("m1 1234 2379"), waiting for one
#
# DIR/env is for `source` (or `set -a; . DIR/env; set +a`): PLUGBOARD_ETCD_ENDPOINTS
# (127.0.0.1:PORT,... as --fleet etcd://$PLUGBOARD_ETCD_ENDPOINTS/PREFIX takes them) and
# ETCD_MEMBER_<i>_PID (as started; `restart` makes a new one) and _CLIENT_PORT. DIR/pids
# has one "name pid" line per member started (the Swift harness,
# Tests/PlugboardTestSupport/EtcdCluster.swift, writes the same, and its watchdog runs
# `stop` on its folder). Logs are in DIR/<name>.log.
set -euo pipefail

usage() { echo "usage: $0 start DIR [MEMBERS] | stop DIR [NAME] | kill DIR NAME | restart DIR NAME | leader DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
command=$1
dir=$2

# A three-member election takes a few seconds on an idle machine; the bound is for a
# loaded CI machine.
deadline_seconds=${ETCD_START_TIMEOUT:-90}

# Whether pid is still a member of this folder: alive, not a zombie, and its command line
# names this folder (so that a recycled pid is never signalled).
is_ours() {
    local pid=$1 state
    [ -r "/proc/$pid/stat" ] || return 1
    state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ] || return 1
    { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$abs/"
}

stop_all() {
    local name pid waited
    [ -f "$dir/pids" ] || return 0
    while read -r name pid; do
        is_ours "$pid" || continue
        kill -TERM "$pid" 2>/dev/null || true
    done < "$dir/pids"
    while read -r name pid; do
        waited=0
        while is_ours "$pid" && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
        if is_ours "$pid"; then
            echo "etcd.sh: $name (pid $pid) still running 30 s after SIGTERM; sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done < "$dir/pids"
}

# The pid of member $1 as DIR/pids last recorded it, if it still runs.
member_pid() {
    local name pid found=""
    while read -r name pid; do [ "$name" = "$1" ] && found=$pid; done < "$dir/pids"
    [ -n "$found" ] && is_ours "$found" && echo "$found"
}

# Waits until member $1 (client port $2) answers /health with true.
wait_healthy() {
    local name=$1 port=$2 started=$SECONDS pid
    until curl -fsS --max-time 2 "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"health":"true"'; do
        if ! pid=$(member_pid "$name"); then
            echo "etcd.sh: member $name exited while starting; its log ($abs/$name.log) ends:" >&2
            tail -n 20 "$abs/$name.log" >&2
            return 1
        fi
        if [ $((SECONDS - started)) -ge "$deadline_seconds" ]; then
            echo "etcd.sh: member $name not healthy within ${deadline_seconds} s (logs in $abs)" >&2
            return 1
        fi
        sleep 0.1
    done
}

# Starts member $1 from the arguments DIR/$1.args holds (one a line), appending its pid.
launch() {
    local args=()
    mapfile -t args < "$abs/$1.args"
    env -u NOTIFY_SOCKET etcd "${args[@]}" < /dev/null >> "$abs/$1.log" 2>&1 &
    echo "$1 $!" >> "$dir/pids"
}

if [ "$command" != start ]; then
    [ -d "$dir" ] || { echo "etcd.sh $command: no folder $dir; expected the DIR given to etcd.sh start" >&2; exit 1; }
    abs=$(cd "$dir" && pwd)
    [ -f "$dir/pids" ] || { echo "etcd.sh $command: $dir/pids not found: nothing was started in $dir" >&2; exit 1; }
    name=${3:-}
    if [ -n "$name" ] && [ ! -f "$abs/$name.args" ]; then
        echo "etcd.sh $command: no member \"$name\" in $dir; expected one of: $(cd "$abs" && ls -- *.args | sed 's/\.args$//' | tr '\n' ' ')" >&2
        exit 1
    fi
fi
case "$command" in
stop)
    [ $# -le 3 ] || usage
    if [ -z "$name" ]; then
        stop_all
        echo "etcd.sh: stopped the etcd members in $dir (logs kept there)"
        exit 0
    fi
    pid=$(member_pid "$name") || { echo "etcd.sh: $name does not run"; exit 0; }
    kill -TERM "$pid"
    waited=0
    while is_ours "$pid" && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
    if is_ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    echo "etcd.sh: stopped $name (pid $pid)"
    exit 0 ;;
kill)
    [ $# -eq 3 ] || usage
    pid=$(member_pid "$name") || { echo "etcd.sh kill: $name does not run" >&2; exit 1; }
    kill -KILL "$pid"
    while is_ours "$pid"; do sleep 0.05; done
    echo "etcd.sh: killed $name (pid $pid)"
    exit 0 ;;
restart)
    [ $# -eq 3 ] || usage
    if pid=$(member_pid "$name"); then echo "etcd.sh restart: $name runs already (pid $pid)" >&2; exit 1; fi
    launch "$name"
    port=$(grep -A1 -x -- "--listen-client-urls" "$abs/$name.args" | tail -n 1 | sed 's/.*://')
    wait_healthy "$name" "$port" || exit 1
    echo "etcd.sh: $name runs again (pid $(member_pid "$name"))"
    exit 0 ;;
leader)
    [ $# -eq 2 ] || usage
    started=$SECONDS
    while true; do
        for args in "$abs"/*.args; do
            name=$(basename "$args" .args)
            pid=$(member_pid "$name") || continue
            port=$(grep -A1 -x -- "--listen-client-urls" "$args" | tail -n 1 | sed 's/.*://')
            status=$(curl -fsS --max-time 2 -X POST -d '{}' "http://127.0.0.1:$port/v3/maintenance/status" 2>/dev/null) || continue
            own=$(printf '%s' "$status" | grep -o '"member_id":"[0-9]*"' | grep -o '[0-9][0-9]*')
            leader=$(printf '%s' "$status" | grep -o '"leader":"[0-9]*"' | grep -o '[0-9][0-9]*')
            if [ -n "$own" ] && [ "$own" = "$leader" ]; then echo "$name $pid $port"; exit 0; fi
        done
        if [ $((SECONDS - started)) -ge "$deadline_seconds" ]; then
            echo "etcd.sh leader: no running member is the leader after ${deadline_seconds} s" >&2
            exit 1
        fi
        sleep 0.1
    done ;;
start) ;;
*) usage ;;
esac
members=${3:-3}
[[ "$members" =~ ^[1-9][0-9]?$ ]] || { echo "etcd.sh start: MEMBERS must be a number from 1 to 99, found \"$members\"" >&2; exit 2; }
command -v etcd >/dev/null || { echo "etcd.sh: etcd not installed: apt-get install etcd-server" >&2; exit 1; }
command -v curl >/dev/null || { echo "etcd.sh: curl not installed: apt-get install curl" >&2; exit 1; }
mkdir -p "$dir"
abs=$(cd "$dir" && pwd)
if [ -f "$dir/pids" ]; then
    while read -r _ pid; do
        if is_ours "$pid"; then echo "etcd.sh start: $dir already has a running member (pid $pid); stop it first" >&2; exit 1; fi
    done < "$dir/pids"
fi
# A stopped cluster's data names its old ports: members started on new ones would wait
# for peers that never answer until the deadline. Only `restart` starts a member again.
for data in "$abs"/m*.data; do
    if [ -d "$data" ] && [ -n "$(ls -A "$data" 2>/dev/null)" ]; then
        echo "etcd.sh start: $dir holds the data of a cluster started before ($data); expected a new or empty folder." >&2
        echo "  Give another folder (DIR=\$(mktemp -d)), remove this one, or start its members again with: $0 restart $dir NAME" >&2
        exit 1
    fi
done
: > "$dir/pids"

# Free loopback ports, two a member, asked of the kernel at once so that none repeats.
read -r -a ports <<< "$(python3 -c '
import socket, sys
held = []
for _ in range(int(sys.argv[1]) * 2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
' "$members")"

cluster=""
for ((i = 0; i < members; i++)); do
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${ports[2 * i + 1]}"
done
token="plugboard-e2e-$(basename "$abs")-$$"

# In parallel: each member waits for the others to elect a leader. Each member's
# arguments are kept in DIR/mI.args, so that `restart` starts it the same way.
trap 'stop_all' ERR
for ((i = 0; i < members; i++)); do
    client=${ports[2 * i]} peer=${ports[2 * i + 1]}
    mkdir -p -m 700 "$abs/m$i.data"
    printf '%s\n' --name "m$i" --data-dir "$abs/m$i.data" \
        --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "$token" \
        --logger zap --log-outputs stderr --log-level warn > "$abs/m$i.args"
    : > "$abs/m$i.log"
    launch "m$i"
done

started=$SECONDS
for ((i = 0; i < members; i++)); do
    wait_healthy "m$i" "${ports[2 * i]}" || { stop_all; exit 1; }
done

endpoints=""
for ((i = 0; i < members; i++)); do endpoints+="${endpoints:+,}127.0.0.1:${ports[2 * i]}"; done
{
    echo "PLUGBOARD_ETCD_ENDPOINTS=$endpoints"
    i=0
    while read -r name pid; do
        echo "ETCD_MEMBER_${i}_PID=$pid"
        echo "ETCD_MEMBER_${i}_CLIENT_PORT=${ports[2 * i]}"
        i=$((i + 1))
    done < "$dir/pids"
} > "$dir/env"
echo "etcd.sh: $members members healthy in $((SECONDS - started)) s: $endpoints (source $dir/env)"
