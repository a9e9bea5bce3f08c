import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport
import Testing

/// Remote plugin sources over real TLS: nginx with a self-signed certificate in front of a
/// plain HTTP server or moto_server, and the host trusting that certificate through
/// `SSL_CERT_FILE` of its captured environment (or not, when it is left out).
@Suite(.serialized, .enabled(if: TLSFront.toolsInstalled, "needs nginx and openssl (apt-get install -y nginx openssl)"), .pythonTools)
struct HTTPSSourceTests {
    /// A folder served over plain HTTP holding libMemoryStorage.so, behind nginx over TLS.
    static let files: Result<(front: TLSFront, url: String), any Error> = Result {
        let folder = BuildProducts.temporaryFolder("https-files")
        try FileManager.default.copyItem(atPath: RemoteSourceTests.plugin, toPath: "\(folder)/libMemoryStorage.so")
        let port = try ServerProcess.freePort()
        _ = try ServerProcess(try MotoServer.python(), ["-m", "http.server", "--bind", "127.0.0.1", "--directory", folder, String(port)],
                              port: port)
        let front = try TLSFront(upstreamPort: port)
        return (front, "https://127.0.0.1:\(front.port)/libMemoryStorage.so")
    }

    @Test func httpsSource_byDigest_isFetchedAndLoads() async throws {
        let (front, url) = try Self.files.get()
        let sha = try RemoteSourceTests.sha256(RemoteSourceTests.plugin)
        let (host, cache) = try await RemoteSourceTests.start(source: url, sha256: sha, environment: ["SSL_CERT_FILE": front.certificate])
        let record = try #require(host.records.first)
        #expect(record.state == .active, "\(record.error.map { "\($0)" } ?? "")")
        #expect(record.path == "\(cache)/\(sha).so")
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("greeting", data: Array("hello".utf8), contentType: "text/plain", metadata: [:])
        #expect(try await storage.get("greeting").data == Array("hello".utf8))
        await host.shutdown()
    }

    @Test func httpsSource_ofAnotherDigest_isRefusedAndNothingIsKept() async throws {
        let (front, url) = try Self.files.get()
        let wrong = try RemoteSourceTests.sha256(RemoteSourceTests.other)
        let cache = BuildProducts.temporaryFolder("https-cache")
        let (host, _) = try await RemoteSourceTests.start(source: url, sha256: wrong, environment: ["SSL_CERT_FILE": front.certificate],
                                                          cache: cache)
        let error = try #require(host.records.first?.error)
        #expect(error.code == .checksumMismatch && error.message.contains(url), "\(error)")
        #expect(RemoteSourceTests.entries(cache).isEmpty, "nothing of the wrong file stays in the cache")
    }

    @Test func untrustedCertificate_isRefusedNamingTLS_andTheCAFile() async throws {
        let (_, url) = try Self.files.get()
        let sha = try RemoteSourceTests.sha256(RemoteSourceTests.plugin)
        // Without SSL_CERT_FILE, libcurl's default bundle does not hold the test's certificate.
        let (host, cache) = try await RemoteSourceTests.start(source: url, sha256: sha, environment: [:])
        let error = try #require(host.records.first?.error)
        #expect(error.code == .sourceUnreachable && error.message.contains("TLS"), "\(error)")
        #expect(error.detail?.contains("TLS handshake failed") == true && error.detail?.contains("default bundle") == true, "\(error)")
        #expect(error.hint?.contains("SSL_CERT_FILE") == true)
        #expect(RemoteSourceTests.entries(cache).isEmpty)
    }

    @Test func redirect_isNotFollowed_butReportedAsTheStoresAnswer() async throws {
        let (front, url) = try Self.files.get()
        let moved = url.replacingOccurrences(of: "libMemoryStorage.so", with: "moved.so")
        let sha = try RemoteSourceTests.sha256(RemoteSourceTests.plugin)
        let (host, _) = try await RemoteSourceTests.start(source: moved, sha256: sha, environment: ["SSL_CERT_FILE": front.certificate])
        let error = try #require(host.records.first?.error)
        #expect(error.code == .sourceFailed && error.message.contains("302"), "\(error)")
    }

    @Test func publish_throughAnHTTPSEndpoint_putsAnEntryThatLoads() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("https-publish")
        let front = try TLSFront(upstreamPort: server.port)
        var environment = RemoteSourceTests.environment(endpoint: "https://127.0.0.1:\(front.port)")
        environment["SSL_CERT_FILE"] = front.certificate
        let printed = try RemoteSourceTests.publish(to: bucket, environment: environment)
        let entry = try #require(printed["entry"] as? [String: String])
        #expect(printed["uploaded"] as? Bool == true)
        let (host, _) = try await RemoteSourceTests.start(source: entry["source"] ?? "", sha256: entry["sha256"] ?? "", environment: environment)
        #expect(host.records.first?.state == .active, "\(host.records.first?.error.map { "\($0)" } ?? "")")
        await host.shutdown()
        let log = try String(contentsOfFile: "\(front.folder)/access.log", encoding: .utf8)
        #expect(log.contains("HEAD /\(bucket)/") && log.contains("PUT /\(bucket)/") && log.contains("GET /\(bucket)/"), "\(log)")
    }

    @Test func s3Source_throughAnHTTPSEndpoint_isSignedFetchedAndLoads() async throws {
        let server = try MotoServer.get()
        let (_, source) = try RemoteSourceTests.published(server, label: "https")
        let front = try TLSFront(upstreamPort: server.port)
        let sha = try RemoteSourceTests.sha256(RemoteSourceTests.plugin)
        var environment = RemoteSourceTests.environment(endpoint: "https://127.0.0.1:\(front.port)")
        environment["SSL_CERT_FILE"] = front.certificate
        let (host, cache) = try await RemoteSourceTests.start(source: source, sha256: sha, environment: environment)
        let record = try #require(host.records.first)
        #expect(record.state == .active, "\(record.error.map { "\($0)" } ?? "")")
        #expect(record.path == "\(cache)/\(sha).so")
        await host.shutdown()
        // The request went through nginx, signed for its authority.
        let log = try String(contentsOfFile: "\(front.folder)/access.log", encoding: .utf8)
        #expect(log.contains("GET /") && log.contains(" 200 "), "\(log)")
    }
}

extension HTTPSSourceTests {
    /// Runs `plugboard check --cache-dir CACHE` on a manifest of one MemoryStorage entry
    /// with the dynamic loader's `libs` trace on; returns its exit status and the trace.
    static func check(entry: String, environment: [String: String]) throws -> (status: Int32, trace: String) {
        let folder = BuildProducts.temporaryFolder("https-check")
        try #"{"schemaVersion": 1, "plugins": [{"name": "MemoryStorage", \#(entry)}]}"#
            .write(toFile: "\(folder)/plugins.json", atomically: true, encoding: .utf8)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "\(BuildProducts.folder)/plugboard")
        child.arguments = ["check", "--manifest", "\(folder)/plugins.json", "--cache-dir", "\(folder)/cache"]
        child.environment = environment.merging(["PATH": "/usr/bin:/bin", "HOME": folder, "LD_DEBUG": "libs"]) { a, _ in a }
        let trace = Pipe()
        child.standardError = trace
        child.standardOutput = FileHandle.nullDevice
        try child.run()
        let data = trace.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        return (child.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The CLI maps libcurl (and so a TLS library) only when a source needs https, and
    /// never Foundation: a check of a local plugin loads neither; a check of an https
    /// source loads libcurl, through `SSL_CERT_FILE` of its environment, and passes.
    @Test func plugboardCheck_mapsLibcurlOnlyForAnHTTPSSource_andNeverFoundation() throws {
        let local = try Self.check(entry: #""path": "\#(RemoteSourceTests.plugin)""#, environment: [:])
        #expect(local.status == 0, "\(local.trace.suffix(2000))")
        #expect(local.trace.contains("libPlugboardAPI.so"), "the trace is the dynamic loader's")
        #expect(!local.trace.contains("libcurl") && !local.trace.contains("libFoundation"))

        let (front, url) = try Self.files.get()
        let sha = try RemoteSourceTests.sha256(RemoteSourceTests.plugin)
        let remote = try Self.check(entry: #""source": "\#(url)", "sha256": "\#(sha)""#, environment: ["SSL_CERT_FILE": front.certificate])
        #expect(remote.status == 0, "\(remote.trace.suffix(2000))")
        #expect(remote.trace.contains("libcurl.so.4") && !remote.trace.contains("libFoundation"))
    }
}

/// nginx terminating TLS on a free loopback port with a fresh self-signed certificate for
/// 127.0.0.1, proxying to a plain HTTP server on `upstreamPort`; ended with the test process.
/// One process (no master): ServerProcess kills what it started with SIGKILL, and a
/// master's workers would outlive it.
struct TLSFront: Sendable {
    let port: Int
    let folder: String
    /// The certificate (PEM), which is its own CA.
    var certificate: String { "\(folder)/cert.pem" }

    static let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let openssl = ["/usr/bin/openssl", "/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var toolsInstalled: Bool { nginx != nil && openssl != nil }

    init(upstreamPort: Int) throws {
        guard let nginx = Self.nginx, let openssl = Self.openssl else { throw TestFailure("nginx or openssl is missing") }
        folder = BuildProducts.temporaryFolder("tls-front")
        let make = Process()
        make.executableURL = URL(fileURLWithPath: openssl)
        make.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                          "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                          "-keyout", "\(folder)/key.pem", "-out", "\(folder)/cert.pem"]
        make.standardOutput = FileHandle.nullDevice
        make.standardError = FileHandle.nullDevice
        try make.run()
        make.waitUntilExit()
        guard make.terminationStatus == 0 else { throw TestFailure("openssl could not make a certificate") }
        try FileManager.default.createDirectory(atPath: "\(folder)/tmp", withIntermediateDirectories: true)
        port = try ServerProcess.freePort()
        let configuration = """
            master_process off;
            \(geteuid() == 0 ? "user root;" : "")
            pid \(folder)/nginx.pid;
            error_log \(folder)/error.log info;
            daemon off;
            events { worker_connections 64; }
            http {
                access_log \(folder)/access.log;
                client_body_temp_path \(folder)/tmp/body;
                proxy_temp_path \(folder)/tmp/proxy;
                fastcgi_temp_path \(folder)/tmp/fastcgi;
                uwsgi_temp_path \(folder)/tmp/uwsgi;
                scgi_temp_path \(folder)/tmp/scgi;
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(folder)/cert.pem;
                    ssl_certificate_key \(folder)/key.pem;
                    location = /moved.so { return 302 /libMemoryStorage.so; }
                    location / {
                        proxy_pass http://127.0.0.1:\(upstreamPort);
                        proxy_set_header Host $http_host;
                        proxy_http_version 1.1;
                        client_max_body_size 0;
                    }
                }
            }
            """
        try configuration.write(toFile: "\(folder)/nginx.conf", atomically: true, encoding: .utf8)
        _ = try ServerProcess(nginx, ["-p", folder, "-e", "\(folder)/error.log", "-c", "\(folder)/nginx.conf"], port: port)
    }
}
