// swift-tools-version: 6.2
import PackageDescription

// PlugboardAPI comes from its own package, through its dynamic product, so that the host,
// the plugins and the tests share ONE libPlugboardAPI.so (docs/ARCHITECTURE.md, fact 1).
let api: Target.Dependency = .product(name: "PlugboardAPI", package: "PlugboardAPI")

let package = Package(
    name: "Plugboard",
    products: [
        .library(name: "PlugboardTesting", targets: ["PlugboardTesting"]),
        // For plugins that need SHA-256, MD5 or HMAC (the scaffold's ETags).
        .library(name: "PlugboardCrypto", targets: ["PlugboardCrypto"]),
        .executable(name: "plugboard", targets: ["plugboard"]),
        .library(name: "MemoryStorage", type: .dynamic, targets: ["MemoryStorage"]),
        .library(name: "FileStorage", type: .dynamic, targets: ["FileStorage"]),
        .library(name: "RESTStorage", type: .dynamic, targets: ["RESTStorage"]),
        .library(name: "S3Storage", type: .dynamic, targets: ["S3Storage"]),
        .library(name: "QuotaStorage", type: .dynamic, targets: ["QuotaStorage"]),
        .library(name: "MirrorStorage", type: .dynamic, targets: ["MirrorStorage"]),
        .executable(name: "plugboard-bench", targets: ["plugboard-bench"]),
        // A test fixture: a plugin that crashes, hangs, exits or fails its health check as
        // its config says (preflight and hot-swap tests load the real .so).
        .library(name: "MisbehavingPlugin", type: .dynamic, targets: ["MisbehavingPlugin"]),
        // A test fixture: a storage that throws error codes of its own, mapped to answers as
        // its config says (both front ends' mapping of a plugin's codes).
        .library(name: "CodedErrorPlugin", type: .dynamic, targets: ["CodedErrorPlugin"]),
        // A test fixture: a layer that allows only the content types its config lists, as a
        // plugin author's policy layer would (what the S3 front end's own records do to it).
        .library(name: "ContentTypePolicyPlugin", type: .dynamic, targets: ["ContentTypePolicyPlugin"]),
    ],
    dependencies: [
        .package(path: "Sources/PlugboardAPI"),
        .package(path: "Benchmarks/BenchFloor"),
    ],
    targets: [
        // SHA-256, MD5 and HMAC from OpenSSL's libcrypto, loaded at run time (no headers).
        .target(name: "PlugboardCrypto", dependencies: ["PlugboardBytes"]),
        // A value kept with its pthread lock (NIO's NIOLockedValueBox idea), shared by the
        // host, the test kit and the plugins.
        .target(name: "PlugboardConcurrency"),
        // The byte helpers written once: a descriptor read to its end and written whole
        // (EINTR retried), RFC 3986 percent-encoding and decoding, base64 (standard and
        // URL-safe), hex digits, ASCII text and trimming. The host, the CLI, the server and
        // the plugins link it (the plugins statically, like PlugboardConcurrency), so it has
        // no dependency at all.
        .target(name: "PlugboardBytes"),
        // JSON written once: the strict parser whose errors say where (`plugins.json:4:19: ...`),
        // its values with their locations and paths, the output the CLI and the HTTP API
        // write, and which keys are secret-looking. The host, the etcd client, the fleet, the
        // front ends and RESTStorage read and write JSON with it; PlugboardAPI gives it its
        // errors and ConfigValue, so it links no host code.
        .target(name: "PlugboardJSON", dependencies: [api, "PlugboardBytes"]),
        // HTTP/1.1 over plain TCP for http:// endpoints: blocking sockets on Dispatch queues,
        // keep-alive, bodies streamed both ways; the one retry policy and the checked streamed
        // body. S3Storage's, RESTStorage's and `plugboard reload`'s client; linked statically
        // into each plugin, so none of its types crosses a plugin boundary, and without
        // PlugboardAPI, so that it stays a transport and nothing more.
        .target(name: "PlugboardHTTPClient", dependencies: ["PlugboardHTTPCodec", "PlugboardConcurrency", "PlugboardCrypto"]),
        // PlugboardHTTPClient's transport for https:// (URLSession brings TLS), a target of
        // its own because it needs Foundation and FoundationNetworking: `plugboard reload`
        // uses the plain client, and the CLI loads no Foundation.
        .target(name: "PlugboardURLSession", dependencies: ["PlugboardHTTPClient"]),
        // The HTTP/1.1 grammar both directions read and write: field lines, the numbers that
        // frame a body, status lines, persistence, a head writer that refuses header
        // injection. The server (PlugboardHTTP) and the client (PlugboardHTTPClient) each
        // frame messages their own way (push and pull) over it. Only PlugboardBytes (hex digits).
        .target(name: "PlugboardHTTPCodec", dependencies: ["PlugboardBytes"]),
        // AWS Signature Version 4's shared parts (signing key, canonical query and request,
        // string to sign, the signer): S3Storage signs with them and the S3 front end verifies
        // with them, as NIOHTTP1 serves client and server. With them the AWS settings, the
        // credential chain and the S3 endpoint, which S3Storage and the host's remote plugin
        // sources share. Linked statically wherever it is used.
        .target(name: "PlugboardSigV4", dependencies: ["PlugboardBytes", "PlugboardCrypto"]),
        // The reference ObjectStorage, kept in memory: MemoryStorage's backend and the test
        // kit's stand-in. Its own target so that a plugin using it links no host code.
        .target(name: "InMemoryStorage", dependencies: [api, "PlugboardCrypto", "PlugboardConcurrency"]),
        // The kit for plugin authors: load a plugin .so through the host's checks, the
        // ObjectStorage conformance suite, the in-memory storage, and the doubles front-end
        // tests share (ForwardingStorage, ContainerProvider).
        .target(name: "PlugboardTesting",
                dependencies: [api, "InMemoryStorage", "PlugboardHost", "PlugboardCrypto", "PlugboardConcurrency"]),
        // System calls Glibc's overlay does not expose (prctl), and the crash line naming
        // the plugin whose code was running.
        .target(name: "CPlugboardSystem"),
        // What a worker's wire needs that the Glibc overlay cannot express (a descriptor in
        // a control message, futexes).
        .target(name: "CPlugboardIPC"),
        // The wire between the host and an isolated plugin's worker child: frames, the
        // transports that carry them (a Unix socket; a shared-memory ring), their payloads'
        // coding. No PlugboardAPI: it carries bytes, the worker protocol gives them meaning.
        .target(name: "PlugboardIPC", dependencies: ["CPlugboardIPC", "PlugboardConcurrency"]),
        // The isolated plugin's sandbox: no_new_privs, descriptors, rlimits, capabilities,
        // Landlock and a seccomp filter built from the kernel's headers (no libseccomp).
        .target(name: "CPlugboardSandbox"),
        // The host: manifest, loader, plugin registry, hot swap. The CLI is a thin layer over it.
        // A remote plugin source is fetched with the plain HTTP client, signed by SigV4;
        // over https with libcurl, loaded on the first https fetch (no link-time dependency).
        .target(name: "PlugboardHost", dependencies: [api, "PlugboardJSON", "PlugboardBytes", "PlugboardCrypto", "PlugboardConcurrency", "CPlugboardSystem",
                                                      "CPlugboardSandbox", "PlugboardHTTPClient", "PlugboardSigV4", "PlugboardIPC"]),
        // epoll, eventfd, accept4 and the systemd notify datagram, which Glibc's Swift overlay
        // does not expose.
        .target(name: "CPlugboardNetwork"),
        // HTTP/1.1 on epoll event loops: the incremental request decoder with its limits,
        // responses, streamed bodies with backpressure, the server core, and what both front
        // ends need beside it (cached date texts, the latency histogram, path scrubbing).
        .target(name: "PlugboardHTTP", dependencies: [api, "PlugboardBytes", "PlugboardHTTPCodec", "PlugboardConcurrency", "CPlugboardNetwork",
                                                      "CPlugboardFileSystem"]),
        // `plugboard serve`: the HTTP API's routes over the bound ObjectStorage, metrics, admin.
        .target(name: "PlugboardServer", dependencies: [api, "PlugboardJSON", "PlugboardBytes", "PlugboardHost", "PlugboardHTTP", "PlugboardConcurrency", "CPlugboardNetwork"]),
        // `serve --s3-listen`: the S3 REST API (SigV4, aws-chunked bodies, buckets as key
        // prefixes, multipart) over the same bound ObjectStorage and per-request lease as the
        // native API (docs/S3_API.md).
        .target(name: "PlugboardS3Server", dependencies: [api, "PlugboardJSON", "PlugboardBytes", "PlugboardCrypto", "PlugboardSigV4", "PlugboardHost",
                                                          "PlugboardHTTP", "PlugboardConcurrency"]),
        // The etcd v3 client (keys, transactions, leases, watches that resume, a session's
        // lease kept alive, the fleet URL) over etcd's JSON gateway with PlainHTTPClient:
        // HTTP/1.1 and JSON, no gRPC library. The fleet's store.
        .target(name: "PlugboardEtcd", dependencies: [api, "PlugboardJSON", "PlugboardHTTPClient", "PlugboardBytes", "PlugboardConcurrency"]),
        // The fleet (docs/FLEET.md): the key layout, the host's agent, the rollout's state
        // machine and controller, over a store protocol (etcd, or in memory for tests).
        .target(name: "PlugboardFleet", dependencies: [api, "PlugboardJSON", "PlugboardBytes", "PlugboardHost", "PlugboardConcurrency", "PlugboardEtcd",
                                                "PlugboardHTTPClient"]),
        // The command line over PlugboardHost, in swift-argument-parser's shape.
        .target(name: "PlugboardCLI", dependencies: [api, "PlugboardJSON", "PlugboardBytes", "PlugboardConcurrency", "PlugboardCrypto", "PlugboardHost", "PlugboardHTTP", "PlugboardHTTPClient", "PlugboardServer", "PlugboardIPC",
                                                    "PlugboardS3Server", "PlugboardEtcd", "PlugboardFleet"]),
        .executableTarget(name: "plugboard", dependencies: ["PlugboardCLI"]),
        // In-tree plugins: each builds lib<Name>.so.
        .target(name: "MemoryStorage", dependencies: [api, "InMemoryStorage", "PlugboardConcurrency"],
                path: "Plugins/MemoryStorage"),
        // openat2(RESOLVE_CACHED) and preadv2(RWF_NOWAIT): FileStorage's reads that never
        // wait for the disk, tried on the asking thread before a hop to a blocking one.
        .target(name: "CPlugboardFileSystem"),
        .target(name: "FileStorage", dependencies: [api, "PlugboardBytes", "PlugboardCrypto", "PlugboardConcurrency", "CPlugboardFileSystem"],
                path: "Plugins/FileStorage"),
        // RESTStorage: the client (PlugboardHTTPClient for http://, URLSession for https://)
        // in its own target so that unit tests can link it without the plugin's entry point;
        // the plugin target is the entry point alone.
        .target(name: "RESTStorageClient", dependencies: [api, "PlugboardJSON", "PlugboardBytes", "PlugboardCrypto", "PlugboardConcurrency", "PlugboardHTTPClient",
                                                   "PlugboardURLSession", "PlugboardHTTPCodec"],
                path: "Plugins/RESTStorage/Client"),
        .target(name: "RESTStorage", dependencies: [api, "RESTStorageClient"],
                path: "Plugins/RESTStorage/Plugin"),
        // ObjectStorage over the S3 REST API (PlugboardHTTPClient for http://, URLSession
        // for https://). As with RESTStorage, the client is a target of its own so that
        // the tests link it without the plugin's entry point, which is the plugin target alone.
        .target(name: "S3StorageClient", dependencies: [api, "PlugboardBytes", "PlugboardCrypto", "PlugboardConcurrency", "PlugboardHTTPClient",
                                                 "PlugboardURLSession", "PlugboardSigV4"],
                path: "Plugins/S3Storage", exclude: ["Plugin"]),
        .target(name: "S3Storage", dependencies: [api, "S3StorageClient"],
                path: "Plugins/S3Storage/Plugin"),
        // A layer over another plugin's ObjectStorage (its manifest entry's "wraps") that
        // refuses puts past its limits.
        .target(name: "QuotaStorage", dependencies: [api, "PlugboardConcurrency"],
                path: "Plugins/QuotaStorage"),
        // A layer that moves a store from the storage it wraps to another plugin's while
        // serving it; its logic in a target of its own, so that its tests drive the copier
        // without the plugin's entry point.
        .target(name: "MirrorStorageCore", dependencies: [api, "PlugboardBytes", "PlugboardConcurrency"],
                path: "Plugins/MirrorStorage/Core"),
        .target(name: "MirrorStorage", dependencies: [api, "MirrorStorageCore"],
                path: "Plugins/MirrorStorage/Plugin"),
        .target(name: "MisbehavingPlugin", dependencies: [api, "InMemoryStorage"],
                path: "Tests/Fixtures/MisbehavingPlugin"),
        .target(name: "CodedErrorPlugin", dependencies: [api, "InMemoryStorage"],
                path: "Tests/Fixtures/CodedErrorPlugin"),
        .target(name: "ContentTypePolicyPlugin", dependencies: [api], path: "Tests/Fixtures/ContentTypePolicyPlugin"),
        // Loads libFileStorage.so and writes in a loop until killed: the crash test's child.
        .executableTarget(name: "filestorage-crash-writer", dependencies: [api, "PlugboardHost"],
                          path: "Tests/Tools/filestorage-crash-writer"),
        // Applies a sandbox policy given on its command line, then tries what it is told
        // (execve, writes outside its grant, allocations, threads, dlopen): SandboxProbeTests' child.
        .executableTarget(name: "sandbox-probe", dependencies: [api, "PlugboardHost", "PlugboardBytes", "CSandboxProbe"],
                          path: "Tests/Tools/sandbox-probe"),
        // The probe's system calls Swift cannot make (unshare, ptrace, a raw clone).
        .target(name: "CSandboxProbe", path: "Tests/Tools/CSandboxProbe"),
        // The far end of a worker's wire without a plugin: answers calls, echoes frames.
        // The ring transport's child-process test and `plugboard-bench ipc` run it.
        .executableTarget(name: "ipc-echo", dependencies: ["PlugboardIPC"], path: "Tests/Tools/ipc-echo"),
        // Becomes another user, then executes what it is given: how tests of permission
        // bits run their subject where they run as root (CI), which passes every such check.
        .executableTarget(name: "as-user", path: "Tests/Tools/as-user"),
        .executableTarget(
            name: "plugboard-bench",
            dependencies: [api, "PlugboardHost", "PlugboardIPC", .product(name: "BenchFloor", package: "BenchFloor")],
            path: "Benchmarks/plugboard-bench"),
        // What several test targets need alike (the build products folder, fresh /tmp
        // folders, a seeded generator, etcd, the Python tools' .venv made on first use);
        // Foundation-free, as the loader tests are.
        .target(name: "PlugboardTestSupport", dependencies: ["PlugboardConcurrency", "PlugboardBytes"], path: "Tests/PlugboardTestSupport"),
        .testTarget(name: "PlugboardAPITests", dependencies: [api, "PlugboardTesting"]),
        .testTarget(name: "PluginContractTests", dependencies: [api]),
        .testTarget(name: "PlugboardHostTests", dependencies: [api, "PlugboardJSON", "PlugboardHost", "PlugboardIPC", "PlugboardTesting", "PlugboardConcurrency", "PlugboardTestSupport",
                                                           "PlugboardCrypto", "PlugboardBytes"]),
        .testTarget(name: "PlugboardTestingTests", dependencies: [api, "PlugboardTesting", "PlugboardCrypto"]),
        .testTarget(name: "CLITests", dependencies: [api, "PlugboardJSON", "PlugboardHost", "PlugboardBytes", "CPlugboardNetwork", "CPlugboardSandbox", "PlugboardTestSupport"]),
        .testTarget(name: "PlugboardHTTPTests", dependencies: [api, "PlugboardHTTP", "PlugboardBytes", "PlugboardConcurrency", "PlugboardTestSupport"]),
        // The API router in process: leases per request across a storage swap.
        .testTarget(name: "PlugboardServerTests", dependencies: [api, "PlugboardServer", "PlugboardHTTP", "PlugboardHost",
                                                             "InMemoryStorage", "PlugboardTesting"]),
        // The real plugin .so files, loaded through PluginLoader: conformance, faults, crashes, link audit.
        .testTarget(name: "PluginTests", dependencies: [api, "PlugboardHost", "PlugboardTesting", "PlugboardCrypto", "PlugboardTestSupport"]),
        // RESTStorage: unit tests of the client, and libRESTStorage.so against a real `plugboard serve`.
        .testTarget(name: "RESTStorageTests",
                    dependencies: [api, "PlugboardJSON", "PlugboardHost", "PlugboardTesting", "PlugboardCrypto", "PlugboardConcurrency",
                                   "RESTStorageClient", "PlugboardHTTPClient", "PlugboardURLSession", "PlugboardTestSupport"]),
        // S3Storage's signing, XML, errors and credentials, and libS3Storage.so against moto_server.
        .testTarget(name: "S3StorageTests", dependencies: [api, "PlugboardJSON", "S3StorageClient", "PlugboardHost", "PlugboardTesting", "PlugboardCrypto",
                                                     "PlugboardConcurrency", "PlugboardHTTPClient", "PlugboardSigV4", "PlugboardTestSupport"],
                    exclude: ["Python"]),
        // The plain-HTTP client's reader, streamed bodies, pool, timeouts and cancellation,
        // against scripted loopback servers; the retry policy both storage plugins share.
        .testTarget(name: "PlugboardHTTPClientTests", dependencies: ["PlugboardHTTPClient", "PlugboardConcurrency", "PlugboardTestSupport"]),
        .testTarget(name: "PlugboardHTTPCodecTests", dependencies: ["PlugboardHTTPCodec"]),
        // The worker wire's frames and transports, between two threads and two processes.
        .testTarget(name: "PlugboardIPCTests", dependencies: ["PlugboardIPC", "CPlugboardIPC", "PlugboardConcurrency", "PlugboardTestSupport"]),
        // MirrorStorage's writes, reads, listing and copier over two in-memory backends.
        .testTarget(name: "MirrorStorageTests", dependencies: [api, "MirrorStorageCore", "InMemoryStorage", "PlugboardTesting",
                                                         "PlugboardConcurrency", "PlugboardTestSupport"]),
        // The etcd client's gateway parsing and retry rules (against fake members), and the
        // client against a real three-member cluster on loopback (EtcdCluster in
        // PlugboardTestSupport; skipped without etcd).
        .testTarget(name: "PlugboardEtcdTests", dependencies: [api, "PlugboardJSON", "PlugboardEtcd", "PlugboardHost", "PlugboardHTTPClient", "PlugboardConcurrency",
                                                             "PlugboardTestSupport"]),
        // The rollout's state machine, the waves, the records and the host's agent over the
        // in-memory store.
        .testTarget(name: "PlugboardFleetTests", dependencies: [api, "PlugboardJSON", "PlugboardFleet", "PlugboardHost", "PlugboardTestSupport"]),
        // The S3 front end in process (signatures, aws-chunked, XML, operations over
        // InMemoryStorage); the real clients run against `plugboard serve` in Tests/e2e.
        .testTarget(name: "PlugboardS3ServerTests", dependencies: [api, "PlugboardS3Server", "PlugboardBytes", "PlugboardHTTP", "PlugboardHost",
                                                                   "InMemoryStorage", "PlugboardCrypto", "PlugboardTestSupport", "PlugboardTesting"]),
    ]
)

// One strictness setting for every target (swift-log's habit).
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .swiftLanguageMode(.v6),
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]
}

// The request path's async functions run on their caller's executor (SE-0461) instead of
// hopping to the generic one at every call: each hop asked the runtime for the task's
// executor under a lock, about a tenth of a GET's CPU in the benchmark. Only in the
// server's own targets: in PlugboardAPI it would change how plugins are called (their ABI).
for target in package.targets where ["PlugboardHTTP", "PlugboardServer", "PlugboardS3Server"].contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}

// Release builds of the request path check exclusive access statically only: the runtime
// check of every access to a class's stored property (the connection's buffers and state
// machine, the loop's queue) is the cost docs/BENCHMARKS.md measures under "Runtime
// exclusivity checks", on a path that is single-threaded by construction (every
// connection is its loop's, checked by EventLoop.assertInLoop in debug builds). Debug
// builds, which the tests and the sanitizers run, keep the checks.
for target in package.targets where ["PlugboardHTTP", "PlugboardHTTPCodec", "PlugboardServer", "PlugboardConcurrency"].contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
}
