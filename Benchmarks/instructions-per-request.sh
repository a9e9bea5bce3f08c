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
# With --s3 it measures the S3 endpoint's GET instead (issue 25): serve --s3-listen over
# each storage, and in the same server the native GET of the same 1 KiB object, then the
# S3 GET of it signed once by botocore (from .venv) as boto3 signs it over http (the
# empty body's SHA-256 in x-amz-content-sha256) and replayed: a signature holds for 15
# minutes of clock skew and the server checks each one in full, as for any client.
#
# Usage: Benchmarks/instructions-per-request.sh [--s3] [N] [WARMUP]   (default 2000 300;
#        KEEP=1 keeps the callgrind files for callgrind_annotate; each measurement of a
#        server is its next numbered dump, callgrind.out.1, .2)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
s3=""
if [ "${1:-}" = "--s3" ]; then s3=1; shift; fi
n=${1:-2000}
warmup=${2:-300}
[[ "$n" =~ ^[1-9][0-9]*$ && "$warmup" =~ ^[0-9]+$ ]] || { echo "usage: $0 [--s3] [N] [WARMUP]" >&2; exit 2; }
for tool in valgrind callgrind_control callgrind_annotate curl python3; do
    command -v "$tool" >/dev/null || { echo "instructions-per-request.sh: $tool not found; install it: apt-get install -y valgrind curl python3" >&2; exit 1; }
done
python=$repo/.venv/bin/python3
if [ -n "$s3" ] && ! "$python" -c 'import botocore' 2>/dev/null; then
    echo "instructions-per-request.sh: --s3 signs with botocore, which $python cannot import; install it: .venv/bin/pip install -r Tests/requirements.txt" >&2; exit 1
fi
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
# requests COUNT URL [CURL ARGUMENTS...]: COUNT GETs of URL on one kept-alive connection.
requests() {
    local count=$1 url=$2
    shift 2
    [ "$count" -gt 0 ] || return 0
    curl -sf "$@" $(printf "$url %.0s" $(seq "$count")) > /dev/null
}

# counted NAME URL [CURL ARGUMENTS...]: the running server's instructions for N GETs of
# URL after WARMUP, a request.
counted() {
    local name=$1 url=$2
    shift 2
    requests "$warmup" "$url" "$@"
    callgrind_control -z "$server" > /dev/null
    requests "$n" "$url" "$@"
    callgrind_control -d "$server" > /dev/null
    # Each dump after a zeroing is the next numbered file; its total is the N requests'.
    dumps=$((dumps + 1))
    local total
    total=$(callgrind_annotate "$out.$dumps" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    printf "%-28s %9.0f instructions a request\n" "$name" "$(python3 -c "print($total / $n)")"
}

# signed ENDPOINT BODY: curl's -H arguments, one a line, for a GET of ENDPOINT/bench/object.bin
# signed as boto3 signs it, once the bucket and the object (the file BODY) are stored through S3.
signed() {
    "$python" - "$1" "$2" <<'EOF'
import hashlib, sys
import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
endpoint, path = sys.argv[1:3]
key_id, secret = "AKIDPLUGBOARDBENCH", "plugboard-bench-secret"
client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                      region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
client.create_bucket(Bucket="bench")
client.put_object(Bucket="bench", Key="object.bin", Body=open(path, "rb").read())
request = AWSRequest(method="GET", url=f"{endpoint}/bench/object.bin", data=b"")
request.headers["x-amz-content-sha256"] = hashlib.sha256(b"").hexdigest()
S3SigV4Auth(Credentials(key_id, secret), "s3", "us-east-1").add_auth(request)
for name, value in request.headers.items():
    if name.lower() in ("authorization", "x-amz-date", "x-amz-content-sha256"):
        print(f"-H\n{name}: {value}")
EOF
}

# measure NAME ENV PATH: the GET of PATH, and with --s3 the S3 GET of the same object after it.
measure() {
    local dir=$work/$1 port url s3port
    mkdir -p "$dir"
    cp "$repo/plugins.json" "$dir/plugins.json"
    port=$(free_port)
    url="http://127.0.0.1:$port"
    out=$dir/callgrind.out
    dumps=0
    local listen=(--listen "127.0.0.1:$port")
    if [ -n "$s3" ]; then
        s3port=$(free_port)
        listen+=(--s3-listen "127.0.0.1:$s3port")
    fi
    (cd "$dir" && PLUGBOARD_S3_ACCESS_KEY_ID=AKIDPLUGBOARDBENCH PLUGBOARD_S3_SECRET_ACCESS_KEY=plugboard-bench-secret \
        exec valgrind --tool=callgrind --callgrind-out-file="$out" "$bin/plugboard" serve \
        "${listen[@]}" --env "$2" --manifest plugins.json --cache-dir "$dir/cache" > serve.out 2> serve.err) &
    server=$!
    local tries=0
    until curl -sf "$url/readyz" > /dev/null 2>&1; do
        tries=$((tries + 1))
        [ "$tries" -lt 240 ] || { echo "instructions-per-request.sh: serve did not become ready:" >&2; tail -5 "$dir/serve.err" >&2; exit 1; }
        sleep 0.5
    done
    curl -sf -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$work/object.bin" \
        "$url/v1/objects/object.bin" > /dev/null
    counted "$1" "$url$3"
    if [ -n "$s3" ]; then
        local headers=()
        mapfile -t headers < <(signed "http://127.0.0.1:$s3port" "$work/object.bin")
        [ "${#headers[@]}" -eq 6 ] || { echo "instructions-per-request.sh: could not sign the S3 GET" >&2; exit 1; }
        curl -sf "${headers[@]}" "http://127.0.0.1:$s3port/bench/object.bin" | cmp -s - "$work/object.bin" \
            || { echo "instructions-per-request.sh: the S3 GET did not answer the object" >&2; exit 1; }
        counted "${1/GET/S3 GET}" "http://127.0.0.1:$s3port/bench/object.bin" "${headers[@]}"
    fi
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
}

echo "commit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo "?"), $n requests after $warmup, curl on one connection"
[ -n "$s3" ] || measure "GET /healthz" development /healthz
measure "GET 1 KiB, MemoryStorage" testing /v1/objects/object.bin
measure "GET 1 KiB, FileStorage" development /v1/objects/object.bin
