#!/usr/bin/env bash
# Instructions an S3 GET costs plugboard serve in user space, beside the native GET of the
# same 1 KiB object in the same run: instructions-per-request.sh's method (callgrind, a
# release build without debug info, N requests with curl on one kept-alive connection
# after WARMUP), for the S3 endpoint (issue 25: S3 GET >= 0.9x the native API).
#
# The S3 GET is signed once by botocore (from .venv) as boto3 signs it over http (the
# empty body's SHA-256 in x-amz-content-sha256) and replayed: a signature holds for 15
# minutes of clock skew and the server checks each one in full, so every request pays the
# whole verification, as with any client.
#
# For each storage (MemoryStorage with --env testing, FileStorage with the shipped
# plugins.json) it starts serve --s3-listen under callgrind, stores the object through
# both APIs, and prints instructions a request for the native and the S3 GET. Under
# valgrind FileStorage reads on a blocking thread (see instructions-per-request.sh), for
# both APIs alike; MemoryStorage's figures are the ones answered on the loop.
#
# Usage: Benchmarks/s3-instructions-per-request.sh [N] [WARMUP]   (default 2000 300;
#        KEEP=1 keeps the callgrind files for callgrind_annotate, SCRATCH as in
#        instructions-per-request.sh)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2000}
warmup=${2:-300}
[[ "$n" =~ ^[1-9][0-9]*$ && "$warmup" =~ ^[0-9]+$ ]] || { echo "usage: $0 [N] [WARMUP]" >&2; exit 2; }
for tool in valgrind callgrind_control callgrind_annotate curl python3; do
    command -v "$tool" >/dev/null || { echo "s3-instructions-per-request.sh: $tool not found; install it: apt-get install -y valgrind curl python3" >&2; exit 1; }
done
python=$repo/.venv/bin/python3
"$python" -c 'import botocore' 2>/dev/null || { echo "s3-instructions-per-request.sh: $python cannot import botocore; pip install boto3 into .venv" >&2; exit 1; }
scratch=${SCRATCH:-/tmp/plugboard-nodebug}
echo "building a release without debug info into $scratch ..." >&2
(cd "$repo" && swift build -c release --scratch-path "$scratch" -Xswiftc -gnone -Xcc -g0 >&2)
bin=$scratch/release

key_id=AKIDPLUGBOARDBENCH
secret=plugboard-bench-secret
work=$(mktemp -d /tmp/plugboard-s3-instructions-XXXXXX)
server=""
cleanup() {
    [ -z "$server" ] || { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
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
# counted NAME OUT COUNT URL [CURL ARGUMENTS...]: the instructions of COUNT requests, a request.
counted() {
    local name=$1 out=$2 url=$3
    shift 3
    requests "$warmup" "$url" "$@"
    callgrind_control -z "$server" > /dev/null 2>&1
    requests "$n" "$url" "$@"
    callgrind_control -d "$server" > /dev/null 2>&1
    # Each dump after a zeroing is the next numbered file; its total is the N requests'.
    local last total
    last=$(ls "$out".* | sort -t. -k3 -n | tail -1)
    total=$(callgrind_annotate "$last" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    printf "%-36s %9.0f instructions a request   (%s)\n" "$name" "$(python3 -c "print($total / $n)")" "$(basename "$last")"
}

# measure LABEL ENV
measure() {
    local dir=$work/$1 port s3port url s3 out
    mkdir -p "$dir"
    cp "$repo/plugins.json" "$dir/plugins.json"
    port=$(free_port)
    s3port=$(free_port)
    url="http://127.0.0.1:$port"
    s3="http://127.0.0.1:$s3port"
    out=$dir/callgrind.out
    (cd "$dir" && PLUGBOARD_S3_ACCESS_KEY_ID=$key_id PLUGBOARD_S3_SECRET_ACCESS_KEY=$secret \
        exec valgrind --tool=callgrind --callgrind-out-file="$out" "$bin/plugboard" serve \
        --listen "127.0.0.1:$port" --s3-listen "127.0.0.1:$s3port" --env "$2" --manifest plugins.json \
        --cache-dir "$dir/cache" > serve.out 2> serve.err) &
    server=$!
    local tries=0
    until curl -sf "$url/readyz" > /dev/null 2>&1; do
        tries=$((tries + 1))
        [ "$tries" -lt 240 ] || { echo "s3-instructions-per-request.sh: serve did not become ready:" >&2; tail -5 "$dir/serve.err" >&2; exit 1; }
        sleep 0.5
    done
    curl -sf -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$work/object.bin" \
        "$url/v1/objects/object.bin" > /dev/null
    # The bucket and the object through S3, then one GET signed as boto3 signs it, as curl -H arguments.
    local signed=()
    mapfile -t signed < <("$python" - "$s3" "$key_id" "$secret" "$work/object.bin" <<'EOF'
import hashlib, sys
import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
endpoint, key_id, secret, path = sys.argv[1:5]
client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                      region_name="us-east-1", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
client.create_bucket(Bucket="bench")
client.put_object(Bucket="bench", Key="object.bin", Body=open(path, "rb").read())
request = AWSRequest(method="GET", url=f"{endpoint}/bench/object.bin", data=b"")
request.headers["x-amz-content-sha256"] = hashlib.sha256(b"").hexdigest()
S3SigV4Auth(Credentials(key_id, secret), "s3", "us-east-1").add_auth(request)
for name, value in request.headers.items():
    if name.lower() in ("authorization", "x-amz-date", "x-amz-content-sha256"):
        print("-H")
        print(f"{name}: {value}")
EOF
)
    [ "${#signed[@]}" -eq 6 ] || { echo "s3-instructions-per-request.sh: could not sign the S3 GET" >&2; exit 1; }
    curl -sf "${signed[@]}" "$s3/bench/object.bin" | cmp -s - "$work/object.bin" \
        || { echo "s3-instructions-per-request.sh: the S3 GET did not answer the object" >&2; exit 1; }
    counted "native GET 1 KiB, $1" "$out" "$url/v1/objects/object.bin"
    counted "S3 GET 1 KiB, $1" "$out" "$s3/bench/object.bin" "${signed[@]}"
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
}

echo "commit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo "?"), $n requests after $warmup, curl on one connection"
measure MemoryStorage testing
measure FileStorage development
