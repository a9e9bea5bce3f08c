#!/usr/bin/env bash
# A real etcd cluster on loopback (Debian's etcd-server 3.4): the fleet's store for the
# end-to-end tests and the README. Each member has its own client and peer port (free
# ones, picked at start) and its own data folder under DIR.
#
# Usage: Tests/e2e/etcd.sh start DIR [MEMBERS]   starts MEMBERS (default 3) in DIR (new or
#                                                empty), waits until each is healthy,
#                                                writes DIR/env
#        Tests/e2e/etcd.sh stop DIR              stops every member DIR/pids names
#
# DIR/env is for `source` (or `set -a; . DIR/env; set +a`): PLUGBOARD_ETCD_ENDPOINTS
# (127.0.0.1:PORT,... as --fleet etcd://$PLUGBOARD_ETCD_ENDPOINTS/PREFIX takes them) and
# ETCD_MEMBER_<i>_PID / _CLIENT_PORT. DIR/pids has one "name pid" line per member started
# (the Swift harness, Tests/PlugboardTestSupport/EtcdCluster.swift, writes the same, and
# its watchdog runs `stop` on its folder). Logs are in DIR/<name>.log.
set -euo pipefail

usage() { echo "usage: $0 start DIR [MEMBERS] | stop DIR" >&2; exit 2; }
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

if [ "$command" = stop ]; then
    [ $# -eq 2 ] || usage
    [ -d "$dir" ] || { echo "etcd.sh stop: no folder $dir; expected the DIR given to etcd.sh start" >&2; exit 1; }
    abs=$(cd "$dir" && pwd)
    [ -f "$dir/pids" ] || { echo "etcd.sh stop: $dir/pids not found: nothing was started in $dir" >&2; exit 1; }
    stop_all
    echo "etcd.sh: stopped the etcd members in $dir (logs kept there)"
    exit 0
fi
[ "$command" = start ] || usage
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

# In parallel: each member waits for the others to elect a leader.
trap 'stop_all' ERR
for ((i = 0; i < members; i++)); do
    client=${ports[2 * i]} peer=${ports[2 * i + 1]}
    mkdir -p -m 700 "$abs/m$i.data"
    env -u NOTIFY_SOCKET etcd --name "m$i" --data-dir "$abs/m$i.data" \
        --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "$token" \
        --logger zap --log-outputs stderr --log-level warn \
        < /dev/null > "$abs/m$i.log" 2>&1 &
    echo "m$i $!" >> "$dir/pids"
done

started=$SECONDS
for ((i = 0; i < members; i++)); do
    client=${ports[2 * i]}
    until curl -fsS --max-time 2 "http://127.0.0.1:$client/health" 2>/dev/null | grep -q '"health":"true"'; do
        pid=$(sed -n "$((i + 1))p" "$dir/pids" | cut -d' ' -f2)
        if ! is_ours "$pid"; then
            echo "etcd.sh: member m$i exited while starting; its log ($abs/m$i.log) ends:" >&2
            tail -n 20 "$abs/m$i.log" >&2
            stop_all
            exit 1
        fi
        if [ $((SECONDS - started)) -ge "$deadline_seconds" ]; then
            echo "etcd.sh: member m$i not healthy within ${deadline_seconds} s (logs in $abs)" >&2
            stop_all
            exit 1
        fi
        sleep 0.1
    done
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
