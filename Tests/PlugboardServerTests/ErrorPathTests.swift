#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardServer
import Testing

/// Error answers never show the server's file system paths (FileStorage's root, its object
/// files) to HTTP clients; the code and a message still reach them, and the request's log
/// keeps the whole error.
@Suite struct ErrorPathTests {
    @Test func aDamagedFileStorageObject_answersWithoutTheRoot_andTheLogKeepsIt() async throws {
        let folder = try LeasePerRequestTests.temporaryFolder()
        let root = "\(folder)/storage root"  // a space: a quoted path runs to its closing quote
        let host = try await LeasePerRequestTests.host(
            plugins: #"[{"name": "FileStorage", "product": "FileStorage", "config": {"root": "\#(root)"}}]"#, in: folder)
        #expect(host.records.first?.state == .active, "\(host.records)")
        let lines = Lines()
        let router = APIRouter(host: host, apiToken: nil, adminToken: nil, metrics: ServerMetrics(),
                               logger: Logger(label: "test", logLevel: .trace, handler: LinesHandler(lines: lines)),
                               openConnections: { 0 })
        let put = HTTPRequest(head: RequestHead(method: "PUT", target: "/v1/objects/k", version: .http11,
                                                headers: HTTPHeaders([("host", "test"), ("content-type", "text/plain")]),
                                                framing: .length(5), keepAlive: true, expectsContinue: false),
                              body: Array("hello".utf8))
        let stored = await router.respond(to: put)
        #expect((200...201).contains(stored.status), "\(String(decoding: stored.body, as: UTF8.self))")
        // Cut the object's file short: FileStorage reports it damaged, naming the file and its root.
        let objectFile = "\(root)/objects/_6b"
        #expect(truncate(objectFile, 3) == 0, "\(objectFile): \(String(cString: strerror(errno)))")

        let answer = await router.respond(to: LeasePerRequestTests.get("/v1/objects/k"))
        let body = String(decoding: answer.body, as: UTF8.self)
        #expect(answer.status == 502, "\(body)")
        #expect(answer.headers.contains { $0.0 == "X-Plugboard-Error-Code" && $0.1 == "storage.failed" })
        #expect(body.contains(#""code":"storage.failed""#), "\(body)")
        #expect(body.contains("is damaged"), "\(body)")
        #expect(body.contains(ServerPaths.placeholder), "\(body)")
        for hidden in [folder, root, "/tmp/", "storage root", "objects/_6b"] {
            #expect(!body.contains(hidden), "\(hidden) in \(body)")
        }
        // The operator still finds the file in the log.
        #expect(lines.all.contains { $0.contains("storage.failed") && $0.contains(objectFile) && $0.contains("status=502") },
                "\(lines.all)")
        await host.shutdown()
    }

    @Test func scrubbing_replacesAbsolutePaths_andKeepsKeysURLsAndRequestErrors() {
        let cases: [(String, String)] = [
            (#"could not open FileStorage root "/srv/my data" (EACCES)"#, #"could not open FileStorage root "<server path>" (EACCES)"#),
            (#"object file "/srv/a/objects/_6b \"x\"" is damaged"#, #"object file "<server path>" is damaged"#),
            ("The rename of /srv/data/tmp/x.tmp failed.", "The rename of <server path> failed."),
            ("root=/var/lib/plugboard, then (/etc/x): done", "root=<server path>, then (<server path>): done"),
            ("/abs at the start", "<server path> at the start"),
            (#"could not write object "docs/a/b""#, #"could not write object "docs/a/b""#),
            ("GET http://10.0.0.1:8080/v1/objects/k failed", "GET http://10.0.0.1:8080/v1/objects/k failed"),
            ("a / b and 1/2", "a / b and 1/2"),
        ]
        for (text, expected) in cases { #expect(ServerPaths.scrubbed(text) == expected) }

        let storage = PlugboardError(.storageAccessDenied, #"could not read object "k": Permission denied"#,
                                     detail: #"The open of "/srv/data/objects/_6b" failed with EACCES."#,
                                     hint: #"Make FileStorage's root "/srv/data" and everything in it readable."#)
        let shown = ErrorResponses.clientView(of: storage)
        #expect(shown.code == .storageAccessDenied)
        #expect(shown.message == storage.message)
        #expect(shown.detail == #"The open of "<server path>" failed with EACCES."#)
        #expect(shown.hint == #"Make FileStorage's root "<server path>" and everything in it readable."#)
        // The server's own errors are about the request: its path is the client's own.
        let route = PlugboardError(.httpNotFound, "no route for /v2/x", hint: "The API serves /v1/objects.")
        #expect(ErrorResponses.clientView(of: route).message == "no route for /v2/x")
    }
}

final class Lines: @unchecked Sendable {
    // @unchecked Sendable: `list` is only touched under `lock`.
    private let lock = TestMutex()
    private var list: [String] = []
    func append(_ line: String) { lock.locked { list.append(line) } }
    var all: [String] { lock.locked { list } }
}

struct LinesHandler: LogHandler {
    let lines: Lines
    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        lines.append("\(level) \(message) " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }
}
