#!/usr/bin/env bash
# Builds the libFuzzer targets into .build/fuzz/ (or $FUZZ_BUILD): Tests/Fuzz/build.sh [TARGET...]
#
# SwiftPM cannot build a fuzzer (its --sanitize=fuzzer would put libFuzzer's main into
# every executable of the package), so each target is one swiftc run: the harness in
# Tests/Fuzz/<target>/ compiled into one module with the source files it tests, which
# keeps their internal types reachable without @testable. The modules those files import
# (PlugboardAPI, PlugboardBytes, PlugboardConcurrency, PlugboardCrypto, PlugboardHTTPCodec,
# PlugboardIPC, PlugboardJSON) are compiled once beforehand, each into a module and one object file, with the
# same sanitizers, so that their code is fuzzed too.
# docs/SECURITY.md says what each target covers. The linker's "Cannot export local
# symbol '__asan_...'" warnings are ASan's and harmless; they go to the log files.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${FUZZ_BUILD:-.build/fuzz}"
mkdir -p "$out/modules"

thread_local=Sources/PlugboardAPI/Sources/CPlugboardThreadLocal
# -O: a fuzzer's worth is executions per second; overflow and bounds checks stay on.
swift_flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6
             -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
             -I "$thread_local/include" -I "$out/modules" -I "$out/modules/CPlugboardIPC" -I "$out/modules/CPlugboardSandbox")

sources() { find "$@" -name '*.swift' | sort; }

# Runs a compiler command with its output in a log, shown only when it fails.
quietly() {
    local log=$1; shift
    if ! "$@" >"$log" 2>&1; then
        grep -v "Cannot export local symbol" "$log" >&2
        echo "fuzz build: failed, full output in $log" >&2
        return 1
    fi
}

# A library module as one object file, rebuilt only when one of its files is newer.
module() {
    local name=$1 dir=$2 object="$out/modules/$1.o"
    if [ -f "$object" ] && [ -z "$(find "$dir" -newer "$object" -type f | head -1)" ]; then return; fi
    echo "fuzz build: module $name"
    # shellcheck disable=SC2046
    quietly "$out/modules/$name.log" swiftc "${swift_flags[@]}" -module-name "$name" -wmo -emit-module \
        -emit-module-path "$out/modules/$name.swiftmodule" -c -o "$object" $(sources "$dir")
}

if [ ! -f "$out/modules/ThreadLocal.o" ]; then
    clang -c -O1 -g -fsanitize=fuzzer-no-link,address -I "$thread_local/include" \
        "$thread_local/ThreadLocal.c" -o "$out/modules/ThreadLocal.o"
fi
# A C target of the package as an object and a module map (SwiftPM makes the map; here it
# is written beside the object), rebuilt only when one of its files is newer.
c_module() {
    local name=$1 dir=$2 object="$out/modules/$1.o"
    if [ -f "$object" ] && [ -z "$(find "$dir" -newer "$object" -type f | head -1)" ]; then return; fi
    echo "fuzz build: module $name"
    mkdir -p "$out/modules/$name"
    printf 'module %s {\n    header "%s"\n    export *\n}\n' "$name" "$PWD/$dir/include/$name.h" >"$out/modules/$name/module.modulemap"
    # shellcheck disable=SC2046
    quietly "$out/modules/$name.log" clang -c -O1 -g -fsanitize=fuzzer-no-link,address -I "$dir/include" $(find "$dir" -name '*.c') \
        -o "$object"
}

module PlugboardAPI Sources/PlugboardAPI/Sources/PlugboardAPI
module PlugboardConcurrency Sources/PlugboardConcurrency
# The byte helpers (percent-encoding, hex digits, trimming, base64) that most targets'
# files import, and that PlugboardCrypto and PlugboardHTTPCodec are built over.
module PlugboardBytes Sources/PlugboardBytes
module PlugboardCrypto Sources/PlugboardCrypto
# The JSON parser the manifest is read with, a module of its own as in the package.
module PlugboardJSON Sources/PlugboardJSON
# The HTTP grammar both http-request and s3-response read by.
module PlugboardHTTPCodec Sources/PlugboardHTTPCodec
# An isolated plugin's settings: the wire's transport (TransportKind) and its sandbox's
# policy, which finds the loaded Swift runtime's folder through the sandbox's C part.
c_module CPlugboardIPC Sources/CPlugboardIPC
module PlugboardIPC Sources/PlugboardIPC
c_module CPlugboardSandbox Sources/CPlugboardSandbox

# The files each target compiles with its harness: the code under test and what it
# needs of its own module to compile.
target_sources() {
    case "$1" in
        # The decoder (over PlugboardJSON's parser), with the two loader types an entry holds (a remote source, a signature)
        # and what an isolated entry's settings are (PluginIsolation, the sandbox's grants).
        manifest) sources Sources/PlugboardHost/Manifest
            echo Sources/PlugboardHost/Loader/Remote/RemoteSource.swift Sources/PlugboardHost/Loader/PluginSignature.swift \
                Sources/PlugboardHost/Isolation/PluginIsolation.swift Sources/PlugboardHost/Isolation/SandboxPolicy.swift ;;
        # The decoder and the messages; the event loops (and their C module) stay out.
        http-request) sources Sources/PlugboardHTTP/Parsing Sources/PlugboardHTTP/Messages Sources/PlugboardHTTP/Streaming ;;
        elf) echo Sources/PlugboardHost/Loader/ELFImage.swift Sources/PlugboardHost/Loader/Toolchain.swift ;;
        s3-xml) echo Plugins/S3Storage/S3XML.swift Plugins/S3Storage/S3URIEncoding.swift ;;
        # The plain-HTTP client S3Storage and RESTStorage share: its whole module (the
        # target keeps its name from when the client was S3Storage's alone).
        s3-response) sources Sources/PlugboardHTTPClient ;;
        # PostObject's form reader, with the error type its refusals are.
        s3-form) echo Sources/PlugboardS3Server/Wire/MultipartParser.swift Sources/PlugboardS3Server/Wire/S3Error.swift ;;
        *) echo "fuzz build: unknown target $1" >&2; return 1 ;;
    esac
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(manifest http-request elf s3-xml s3-response s3-form)
for target in "${targets[@]}"; do
    files=$(target_sources "$target")
    binary="$out/fuzz-$target"
    # shellcheck disable=SC2086
    if [ -f "$binary" ] && [ -z "$(find "Tests/Fuzz/$target/" $files "$out/modules/" -name '*.swift' -newer "$binary" -o -name '*.o' -newer "$binary" | head -1)" ]; then
        continue
    fi
    echo "fuzz build: $target"
    # shellcheck disable=SC2086
    quietly "$out/fuzz-$target.log" swiftc "${swift_flags[@]}" -module-name "Fuzz_${target//-/_}" \
        "Tests/Fuzz/$target/"Fuzz*.swift $files \
        "$out/modules/PlugboardAPI.o" "$out/modules/PlugboardBytes.o" "$out/modules/PlugboardConcurrency.o" \
        "$out/modules/PlugboardCrypto.o" "$out/modules/PlugboardHTTPCodec.o" "$out/modules/PlugboardJSON.o" "$out/modules/PlugboardIPC.o" "$out/modules/CPlugboardIPC.o" \
        "$out/modules/CPlugboardSandbox.o" \
        "$out/modules/ThreadLocal.o" \
        -o "$binary"
done
