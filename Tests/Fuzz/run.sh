#!/usr/bin/env bash
# Builds and runs every libFuzzer target for SECONDS each (default 60):
#     Tests/Fuzz/run.sh [SECONDS] [TARGET...]
# Each target starts from its committed seeds (Tests/Fuzz/<target>/corpus, read only: new
# inputs go to .build/fuzz/corpus/<target>, kept between runs). Exits 1 when any target
# crashed, hung (10 s on one input) or passed 2 GiB, naming the target and the input
# that did it; that input belongs in the target's corpus and in a unit test
# (docs/SECURITY.md).
# The mutations follow FUZZ_SEED (default 1), so that a run from the committed seeds is
# the same run on every machine: a crash CI finds is found again here, and CI does not
# fail on a new input that another seed happened upon. Another seed explores elsewhere:
#     FUZZ_SEED=$RANDOM Tests/Fuzz/run.sh 600
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(manifest http-request elf s3-xml s3-response s3-form)
out="${FUZZ_BUILD:-.build/fuzz}"
# A trapping Swift program would otherwise start swift-backtrace, which can hang under
# the fuzzer (docs/ARCHITECTURE.md); libFuzzer's own handler reports the crash.
export SWIFT_BACKTRACE=enable=no
# LeakSanitizer is off: the Swift runtime's caches (metadata, conformances) look like leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"

Tests/Fuzz/build.sh "${targets[@]}"

failed=()
for target in "${targets[@]}"; do
    work="$out/corpus/$target" artifacts="$out/artifacts/$target/" log="$out/fuzz-$target.run.log"
    mkdir -p "$work" "$artifacts"
    echo "fuzz: $target for ${seconds}s"
    status=0
    "$out/fuzz-$target" -max_total_time="$seconds" -seed="${FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts" "$work" "Tests/Fuzz/$target/corpus" >"$log" 2>&1 || status=$?
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    took=$(sed -n 's/^stat::.*//; s/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    echo "fuzz: $target: ${runs:-?} inputs in ${took:-?}s, ${done_line:-no DONE line}"
    if [ "$status" -ne 0 ]; then
        input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        echo "fuzz: $target FAILED (exit $status), input: ${input:-none written}; log: $log"
        grep -E 'ERROR: (libFuzzer|AddressSanitizer)|Fatal error|SUMMARY' "$log" | head -5 || true
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in: ${failed[*]}"
    exit 1
fi
echo "fuzz: no crash in ${targets[*]}"
