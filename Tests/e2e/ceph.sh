#!/usr/bin/env bash
# A one-node Ceph cluster with a RADOS Gateway on loopback: a real S3 implementation for
# S3Storage's tests (Tests/S3StorageTests/S3StorageRGWTests.swift) and for Plugboard as a
# gateway in front of it (Tests/e2e/s3-gateway-ceph.sh). One monitor, one manager, one OSD
# on memstore (objects in memory, no disk), authentication `none` (loopback only), pools
# of size 1, and radosgw (beast) on a free port with one S3 user of a known key pair.
#
# Usage: Tests/e2e/ceph.sh start DIR   boots the cluster in DIR (new or empty), writes DIR/env
#        Tests/e2e/ceph.sh stop DIR    stops every daemon DIR/pids names; removes nothing
#
# CEPH_RGW_FRONTEND_OPTIONS, when set, is appended to radosgw's `rgw frontends = beast ...`
# line (for example `tcp_nodelay=1`, which Benchmarks/s3-gateway-rgw.py compares).
#
# DIR/env is for `source` (or `set -a; . DIR/env`): PLUGBOARD_RGW_ENDPOINT,
# PLUGBOARD_RGW_ACCESS_KEY_ID, PLUGBOARD_RGW_SECRET_ACCESS_KEY, CEPH_CONF (for `ceph` and
# `radosgw-admin` by hand) and the daemons' pids. Logs are in DIR/log.
# Needs Debian's ceph-mon, ceph-mgr, ceph-osd, radosgw and ceph-common (Ceph 16.2).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
command=$1
dir=$2

# The whole boot takes about 20 s on two idle cores; the bound is for a loaded CI machine.
deadline_seconds=${CEPH_START_TIMEOUT:-240}
access_key=PLUGBOARDRGWTEST0001
secret_key=plugboard-rgw-test-secret-0123456789

# One "name pid" line per daemon, written as each starts, so that `stop` finds them even
# when `start` itself was killed before it wrote DIR/env.
pids_file() { echo "$dir/pids"; }

# Whether pid is still one of this cluster's daemons: alive, not a zombie (a daemon whose
# parent shell has exited is reaped by whoever adopted it, maybe late), and its command
# line names this folder's ceph.conf, so that a recycled pid is never signalled.
is_ours() {
    local pid=$1 state
    [ -r "/proc/$pid/stat" ] || return 1
    state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ] || return 1
    { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$conf"
}

# Each daemon in turn, newest first (radosgw before the OSD it writes to, the monitor
# last): SIGTERM, then SIGKILL if it still runs after the bound. In turn, because an OSD
# waits for the monitor to acknowledge its going down, 5 s when the monitor is going too.
stop_all() {
    local file pids=() names=() i waited
    file=$(pids_file)
    [ -f "$file" ] || return 0
    while read -r name pid; do names+=("$name"); pids+=("$pid"); done < "$file"
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        is_ours "${pids[i]}" || continue
        kill -TERM "${pids[i]}" 2>/dev/null || true
        waited=0
        while is_ours "${pids[i]}" && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
        if is_ours "${pids[i]}"; then
            echo "ceph.sh: ${names[i]} (pid ${pids[i]}) still running 30 s after SIGTERM; sending SIGKILL" >&2
            kill -KILL "${pids[i]}" 2>/dev/null || true
        fi
    done
}

conf="$(cd "$(dirname "$dir")" 2>/dev/null && pwd)/$(basename "$dir")/ceph.conf"

if [ "$command" = stop ]; then
    [ -d "$dir" ] || { echo "ceph.sh stop: no folder $dir; expected the DIR given to ceph.sh start" >&2; exit 1; }
    [ -f "$(pids_file)" ] || { echo "ceph.sh stop: $dir/pids not found: nothing was started in $dir (expected the DIR given to ceph.sh start)" >&2; exit 1; }
    stop_all
    echo "ceph.sh: stopped the cluster in $dir (logs kept in $dir/log)"
    exit 0
fi
[ "$command" = start ] || usage

missing=()
for tool in ceph-mon ceph-mgr ceph-osd radosgw radosgw-admin monmaptool ceph python3; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "ceph.sh: ${missing[*]} not found; install Ceph with: apt-get install -y ceph-mon ceph-mgr ceph-osd radosgw ceph-common" >&2
    exit 1
fi
mkdir -p "$dir"
if [ -n "$(ls -A "$dir")" ]; then
    echo "ceph.sh start: $dir is not empty; expected a new or empty folder (stop a cluster there with: $0 stop $dir, then use another folder)" >&2
    exit 1
fi
dir=$(cd "$dir" && pwd)
conf=$dir/ceph.conf
mkdir -p "$dir/log" "$dir/run" "$dir/mon" "$dir/mgr" "$dir/osd" "$dir/rgw"
: > "$(pids_file)"
export CEPH_CONF=$conf

# What start is doing, and whose log tells why it failed: the failure report names both.
step="checking the folder" step_log=""
on_exit() {
    local status=$?
    [ $status -ne 0 ] || return 0
    echo "ceph.sh start: failed while $step (exit $status)" >&2
    if [ -n "$step_log" ] && [ -f "$step_log" ]; then
        echo "---- last lines of $step_log" >&2
        tail -n 30 "$step_log" >&2
    fi
    stop_all
    echo "ceph.sh start: stopped what was started; logs and data kept in $dir" >&2
}
trap on_exit EXIT

# Two loopback ports free a moment ago, held together so that they differ.
read -r mon_port rgw_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
fsid=$(cat /proc/sys/kernel/random/uuid)

cat > "$conf" <<EOF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
public addr = 127.0.0.1
# Loopback only, so no keys: every daemon and client trusts every other.
auth cluster required = none
auth service required = none
auth client required = none
keyring = $dir/keyring
# v1 only: the monitor listens on the one port named above.
ms bind msgr2 = false
run dir = $dir/run
log file = $dir/log/\$name.log
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
mon data = $dir/mon/\$name
mgr data = $dir/mgr/\$name
osd data = $dir/osd/\$name
rgw data = $dir/rgw/\$name
# One OSD: pools of size 1, placement across OSDs rather than hosts, few placement groups
# (the gateway creates about eight pools), and no autoscaler changing them mid-test.
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
osd crush chooseleaf type = 0
# The OSD is placed in the CRUSH map by the script (under host node0), not by itself: a
# daemon's first command can reach a monitor that has just started with a zero fsid
# ("handle_command on fsid 00000000-... != ...", "wrong fsid"; seen twice in fifteen
# boots here), and the OSD's start-up commands then end it. The script's are sent again.
osd crush update on start = false
osd class update on start = false
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
# Objects in the OSD's memory: no disk, nothing left behind; the tests write well under 2 GiB.
osd objectstore = memstore
memstore device bytes = 2147483648
EOF
# So that a test that lost its folder can still find what it ran against.
: > "$dir/keyring"

# Starts daemon NAME (its executable and arguments follow) in the foreground of a
# background job, its output in DIR/log/NAME.out, and records its pid.
start_daemon() {
    local name=$1
    shift
    "$@" -c "$conf" -f > "$dir/log/$name.out" 2>&1 < /dev/null &
    echo "$name $!" >> "$(pids_file)"
    eval "pid_${name//[.-]/_}=$!"
}

started=$SECONDS
# Polls `check` (a command) every 0.5 s until it succeeds (a `ceph` command costs about
# 0.3 s of CPU, which the daemons booting beside it need); fails when the daemon `pid` has
# exited or the overall deadline has passed.
wait_for() {
    local what=$1 pid=$2
    shift 2
    while ! "$@" > /dev/null 2>&1; do
        if ! is_ours "$pid"; then
            echo "ceph.sh start: the daemon exited while waiting for $what (pid $pid)" >&2
            return 1
        fi
        if [ $((SECONDS - started)) -ge "$deadline_seconds" ]; then
            echo "ceph.sh start: $what: not reached within ${deadline_seconds}s of the start (CEPH_START_TIMEOUT)" >&2
            return 1
        fi
        sleep 0.5
    done
}
ceph_cli() { timeout 20 ceph --connect-timeout 15 "$@"; }
# A command that must succeed once: a client's first exchange with a monitor that has just
# started is now and then refused ("problem getting command descriptions from mon", the
# command arriving with a zero fsid), so it is sent again, a few times, before giving up.
# Each command used with it does nothing when what it asks for is already done.
ceph_again() {
    local attempt
    for attempt in 1 2 3 4 5; do
        ceph_cli "$@" 2> "$dir/log/ceph-cli.err" && return 0
        sleep 0.5
    done
    echo "ceph.sh start: \`ceph $*\` failed 5 times; the last time: $(cat "$dir/log/ceph-cli.err")" >&2
    return 1
}

step="creating the monitor (monmaptool, ceph-mon --mkfs)" step_log="$dir/log/mon.a.log"
monmaptool --create --fsid "$fsid" --addv a "[v1:127.0.0.1:$mon_port]" "$dir/monmap" > "$dir/log/monmaptool.out" 2>&1
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" > "$dir/log/mon-mkfs.out" 2>&1 \
    || { step_log="$dir/log/mon-mkfs.out"; false; }

step="starting the monitor mon.a on 127.0.0.1:$mon_port"
start_daemon mon.a ceph-mon -i a
step="waiting for the monitor mon.a to answer (ceph mon stat)"
wait_for "the monitor's answer" "$pid_mon_a" ceph_cli mon stat

step="starting the manager mgr.x" step_log="$dir/log/mgr.x.log"
mkdir -p "$dir/mgr/mgr.x"
start_daemon mgr.x ceph-mgr -i x

step="creating the OSD (ceph osd create, ceph-osd --mkfs)" step_log="$dir/log/osd.0.log"
osd_uuid=$(cat /proc/sys/kernel/random/uuid)
osd_id=$(ceph_again osd create "$osd_uuid")
mkdir -p "$dir/osd/osd.$osd_id"
# The OSD must be made with the UUID it was created with, or it refuses with "wrong fsid".
ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" > "$dir/log/osd-mkfs.out" 2>&1 \
    || { step_log="$dir/log/osd-mkfs.out"; false; }
step="placing osd.$osd_id in the CRUSH map under host node0" step_log="$dir/log/mon.a.log"
ceph_again osd crush add-bucket node0 host > /dev/null
ceph_again osd crush move node0 root=default > /dev/null
ceph_again osd crush add "osd.$osd_id" 1.0 host=node0 > /dev/null
step="starting the OSD osd.$osd_id"
start_daemon "osd.$osd_id" ceph-osd -i "$osd_id"
osd_pid=$(awk -v n="osd.$osd_id" '$1 == n { print $2 }' "$(pids_file)")
osd_up() {
    ceph_cli osd stat -f json | python3 -c 'import json, sys; s = json.load(sys.stdin); sys.exit(0 if s["num_up_osds"] == 1 and s["num_in_osds"] == 1 else 1)'
}
step="waiting for the OSD osd.$osd_id to be up and in (ceph osd stat)"
wait_for "osd.$osd_id up and in" "$osd_pid" osd_up

step="starting radosgw client.rgw.a on 127.0.0.1:$rgw_port" step_log="$dir/log/client.rgw.a.log"
mkdir -p "$dir/rgw/client.rgw.a"
cat >> "$conf" <<EOF

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port${CEPH_RGW_FRONTEND_OPTIONS:+ $CEPH_RGW_FRONTEND_OPTIONS}
# Deleted objects' data is freed by the gateway's collector, by default two hours later;
# within minutes here, so that a cluster kept for many test runs does not fill memstore.
rgw gc obj min wait = 60
rgw gc processor period = 60
EOF
start_daemon client.rgw.a radosgw -n client.rgw.a
rgw_answers() {
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' "http://127.0.0.1:$rgw_port/"
}
step="waiting for radosgw to answer on http://127.0.0.1:$rgw_port/ (it creates its pools first)"
wait_for "radosgw's answer" "$pid_client_rgw_a" rgw_answers

step="creating the S3 user (radosgw-admin user create)" step_log="$dir/log/radosgw-admin.out"
timeout 60 radosgw-admin -c "$conf" user create --uid plugboard-tests --display-name "Plugboard tests" \
    --access-key "$access_key" --secret-key "$secret_key" > "$dir/log/radosgw-admin.out" 2>&1

# The gateway's pools were made as it started; once their placement groups are all
# active+clean, nothing is peering or recovering under the tests.
all_active_clean() {
    ceph_cli pg stat -f json | python3 -c '
import json, sys
s = json.load(sys.stdin)
states = {x["name"]: x["num"] for x in s.get("pg_summary", s).get("num_pg_by_state", [])}
total = s.get("pg_summary", s).get("num_pgs", 0)
sys.exit(0 if total > 0 and states.get("active+clean", 0) == total else 1)'
}
step="waiting for every placement group to be active+clean (ceph pg stat)" step_log="$dir/log/osd.$osd_id.log"
wait_for "active+clean" "$osd_pid" all_active_clean

cat > "$dir/env.tmp" <<EOF
PLUGBOARD_RGW_ENDPOINT=http://127.0.0.1:$rgw_port
PLUGBOARD_RGW_ACCESS_KEY_ID=$access_key
PLUGBOARD_RGW_SECRET_ACCESS_KEY=$secret_key
CEPH_CONF=$conf
CEPH_MON_PID=$pid_mon_a
CEPH_MGR_PID=$pid_mgr_x
CEPH_OSD_PID=$osd_pid
CEPH_RGW_PID=$pid_client_rgw_a
EOF
mv "$dir/env.tmp" "$dir/env"
step="done"
echo "ceph.sh: cluster up in $((SECONDS - started))s: radosgw on http://127.0.0.1:$rgw_port, monitor on 127.0.0.1:$mon_port; settings in $dir/env"
