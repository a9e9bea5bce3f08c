import PlugboardAPI
import PlugboardHTTPClient
import RESTStorageClient
import Synchronization

/// A transport that answers from a script, one outcome per request, and records the
/// requests; the last outcome repeats once the script is used up.
actor ScriptedTransport: HTTPTransport {
    private var script: [Result<HTTPResponse, TransportFailure>]
    private(set) var requests: [HTTPRequest] = []

    init(_ script: [Result<HTTPResponse, TransportFailure>]) {
        self.script = script
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        requests.append(request)
        let outcome = script.count > 1 ? script.removeFirst() : script[0]
        return try outcome.get()
    }
}

/// Records every wait and returns at once.
final class RecordingSleeper: RetrySleeper {
    private let waits = Mutex<[Duration]>([])

    func sleep(for duration: Duration) async throws {
        waits.withLock { $0.append(duration) }
        try Task.checkCancellation()
    }

    var recorded: [Duration] { waits.withLock { $0 } }
}

/// Keeps every log line, to check what is (and is not) logged.
final class CapturingLogHandler: LogHandler {
    private let lines = Mutex<[String]>([])

    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        let text = "\(level) \(message) " + metadata.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        lines.withLock { $0.append(text) }
    }

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// Builders for the server's answers, as the HTTP contract has them.
enum Responses {
    static let helloETag = "5d41402abc4b2a76b9719d911017c592"  // MD5("hello")
    static let modified = "2026-11-29T20:42:08.123Z"

    static func json(_ status: Int, _ text: String, headers: [String: String] = [:]) -> Result<HTTPResponse, TransportFailure> {
        var all = headers
        all["Content-Type"] = "application/json"
        return .success(HTTPResponse(status: status, headers: all, body: Array(text.utf8)))
    }

    static func error(_ status: Int, _ code: String, _ message: String = "refused",
                      headers: [String: String] = [:]) -> Result<HTTPResponse, TransportFailure> {
        json(status, #"{"error": {"code": "\#(code)", "message": "\#(message)", "detail": "server detail", "hint": null}}"#,
             headers: ["X-Plugboard-Error-Code": code].merging(headers) { $1 })
    }

    static func info(key: String = "k", size: Int = 5, etag: String = helloETag, contentType: String = "text/plain",
                     metadata: String = #"{"owner": "me"}"#) -> String {
        #"{"key": "\#(key)", "size": \#(size), "etag": "\#(etag)", "contentType": "\#(contentType)", "lastModified": "\#(modified)", "metadata": \#(metadata)}"#
    }

    static func object(_ body: String = "hello", etag: String = helloETag,
                       extra: [String: String] = [:]) -> Result<HTTPResponse, TransportFailure> {
        var headers = ["ETag": "\"\(etag)\"", "Content-Type": "text/plain", "Content-Length": "\(body.utf8.count)",
                       "Last-Modified": "Sun, 29 Nov 2026 20:42:08 GMT", "X-Plugboard-Last-Modified": modified,
                       "X-Plugboard-Meta-Owner": "me", "X-Plugboard-Key": "k"]
        for (name, value) in extra { headers[name] = value }
        return .success(HTTPResponse(status: 200, headers: headers, body: Array(body.utf8)))
    }

    static let refused: Result<HTTPResponse, TransportFailure> = .failure(TransportFailure(.cannotConnect, "Could not connect to the server."))
}

/// A RESTStorage over a scripted transport.
struct ScriptedStorage {
    let storage: RESTStorage
    let transport: ScriptedTransport
    let sleeper: RecordingSleeper
    let log: CapturingLogHandler

    init(_ script: [Result<HTTPResponse, TransportFailure>], token: String? = nil, maxRetries: Int = 3,
         base: String = "http://127.0.0.1:9") {
        transport = ScriptedTransport(script)
        sleeper = RecordingSleeper()
        log = CapturingLogHandler()
        let configuration = RESTStorage.Configuration(endpoint: Endpoint(base: base), token: token, maxRetries: maxRetries)
        storage = RESTStorage(configuration: configuration, transport: transport, plugin: "Remote",
                              logger: Logger(label: "test", logLevel: .trace, handler: log),
                              sleeper: sleeper, random: { 1.0 })
    }

    var requests: [HTTPRequest] { get async { await transport.requests } }
}

/// The error a call threw, or a test failure when it threw none or another type.
func thrownError(_ call: () async throws -> Void) async -> PlugboardError? {
    do {
        try await call()
        return nil
    } catch let error as PlugboardError {
        return error
    } catch {
        return PlugboardError(.init("test.unexpected_error_type"), "\(type(of: error)): \(error)")
    }
}
