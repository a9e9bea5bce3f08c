import PlugboardAPI
import PlugboardIPC

/// The worker protocol's payloads: what a call asks of an isolated plugin's
/// `ObjectStorage` and what it answers, over ``PlugboardIPC/Frame``s.
///
/// A call is one stream: the host's `call` frame (``WorkerCall``), then for a put the
/// body's `chunk` frames and its `end`; the worker's `answer` (``WorkerAnswer``) or
/// `failure` (an encoded ``PlugboardError``), then for a get the body's `chunk`s and `end`.
/// Either side grants the other `credit` for body bytes it has taken, so that neither
/// holds more than a window of a body in memory. A `cancel` from the caller ends the work.
///
/// The same calls go the other way, with the roles swapped, for an isolated layer: its
/// worker calls the storage it wraps, which the host serves (``StreamOrigin``).
enum WorkerCall: Sendable {
    case head(key: String)
    case get(key: String, range: ByteRange?)
    /// A streamed put; its body follows as chunks. `length` is the body's announced one.
    case put(key: String, contentType: String?, metadata: [String: String], condition: WriteCondition, length: Int?)
    case delete(key: String)
    case list(prefix: String, limit: Int, continuationToken: String?)
    /// The plugin's `HealthChecking` service under `name`.
    case healthCheck(name: String?)

    /// The service the call goes to: the storage registered under this name (nil: unnamed).
    /// Kept beside the call so that a plugin registering several named storages is served.
    struct Target: Sendable { var name: String? }

    /// Whether a call that was in flight when its worker died can be sent again to the
    /// next one: it cannot have changed anything.
    var isRetryable: Bool {
        switch self {
        case .head, .get, .list, .healthCheck: true
        case .put, .delete: false
        }
    }

    /// What a crash report names: the method and the key, never a body or a config.
    var summary: String {
        switch self {
        case .head(let key): "head \(key)"
        case .get(let key, let range): "get \(key)" + (range.map { " range \($0)" } ?? "")
        case .put(let key, _, _, _, _): "put \(key)"
        case .delete(let key): "delete \(key)"
        case .list(let prefix, _, _): "list prefix \(prefix)"
        case .healthCheck: "health check"
        }
    }

    func encoded(service name: String?) -> [UInt8] {
        var w = WireWriter(capacity: 96)
        w.optionalString(name)
        switch self {
        case .head(let key):
            w.u8(1); w.string(key)
        case .get(let key, let range):
            w.u8(2); w.string(key); Self.write(range, &w)
        case .put(let key, let contentType, let metadata, let condition, let length):
            w.u8(3); w.string(key); w.optionalString(contentType); w.strings(metadata)
            switch condition {
            case .none: w.u8(0)
            case .absent: w.u8(1)
            case .matches(let etag): w.u8(2); w.string(etag)
            // ``IsolatedStorage`` refuses a condition it does not know before it calls;
            // the worker refuses this byte should one get here.
            @unknown default: w.u8(255)
            }
            w.i64(Int64(length ?? -1))
        case .delete(let key):
            w.u8(4); w.string(key)
        case .list(let prefix, let limit, let token):
            w.u8(5); w.string(prefix); w.int(limit); w.optionalString(token)
        case .healthCheck:
            w.u8(6)
        }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(IPCError) -> (service: String?, call: WorkerCall) {
        var r = WireReader(bytes)
        let service = try r.optionalString("the service name")
        let call: WorkerCall
        switch try r.u8("the operation") {
        case 1: call = .head(key: try r.string("the key"))
        case 2: call = .get(key: try r.string("the key"), range: try readRange(&r))
        case 3:
            let key = try r.string("the key")
            let contentType = try r.optionalString("the content type")
            let metadata = try r.strings("the metadata")
            let condition: WriteCondition
            switch try r.u8("the condition") {
            case 0: condition = .none
            case 1: condition = .absent
            case 2: condition = .matches(etag: try r.string("the condition's ETag"))
            case let other: throw .malformed("expected a condition 0 to 2, found \(other)")
            }
            let length = try r.i64("the body's length")
            call = .put(key: key, contentType: contentType, metadata: metadata, condition: condition,
                        length: length < 0 ? nil : Int(length))
        case 4: call = .delete(key: try r.string("the key"))
        case 5: call = .list(prefix: try r.string("the prefix"), limit: try r.int("the limit"),
                             continuationToken: try r.optionalString("the continuation token"))
        case 6: call = .healthCheck(name: service)
        case let other: throw .malformed("expected an operation 1 to 6, found \(other)")
        }
        guard r.isAtEnd else { throw .malformed("bytes after a \(call.summary) call") }
        return (service, call)
    }

    static func write(_ range: ByteRange?, _ w: inout WireWriter) {
        switch range {
        case nil: w.u8(0)
        case .closed(let first, let last)?: w.u8(1); w.int(first); w.int(last)
        case .from(let first)?: w.u8(2); w.int(first)
        case .suffix(let count)?: w.u8(3); w.int(count)
        }
    }

    static func readRange(_ r: inout WireReader) throws(IPCError) -> ByteRange? {
        switch try r.u8("the range's form") {
        case 0: return nil
        case 1: return .closed(first: try r.int("the range's first"), last: try r.int("the range's last"))
        case 2: return .from(try r.int("the range's first"))
        case 3: return .suffix(try r.int("the range's length"))
        case let other: throw .malformed("expected a range form 0 to 3, found \(other)")
        }
    }
}

/// Which side opened a stream: every frame of a call belongs to the side that made it,
/// so one bit of its stream number tells a reader whether it serves the frame or awaits it.
enum StreamOrigin {
    /// Set on the streams a worker opens: an isolated layer's calls to the storage it
    /// wraps, which the host serves. The host's own calls have it clear.
    static let worker: UInt32 = 1 << 31

    static func isWorkers(_ stream: UInt32) -> Bool { stream & worker != 0 }
}

/// What a worker answers, before any body.
enum WorkerAnswer {
    static func info(_ info: ObjectInfo, _ w: inout WireWriter) {
        w.string(info.key); w.int(info.size); w.string(info.etag); w.string(info.contentType)
        w.i64(info.lastModified.seconds); w.i64(Int64(info.lastModified.nanoseconds)); w.strings(info.metadata)
        w.u8(info.unknown.rawValue)
    }

    static func info(_ r: inout WireReader) throws(IPCError) -> ObjectInfo {
        let key = try r.string("the object's key")
        let size = try r.int("the object's size")
        let etag = try r.string("the object's ETag")
        let contentType = try r.string("the object's content type")
        let seconds = try r.i64("the object's time")
        let nanoseconds = try r.i64("the object's time")
        let metadata = try r.strings("the object's metadata")
        let unknown = ObjectInfo.Fields(rawValue: try r.u8("the object's unknown fields"))
        guard size >= 0, (0..<1_000_000_000).contains(nanoseconds) else {
            throw .malformed("expected a size of 0 or more and nanoseconds below 10^9, found \(size) and \(nanoseconds)")
        }
        return ObjectInfo(key: key, size: size, etag: etag, contentType: contentType,
                          lastModified: Timestamp(secondsSince1970: seconds, nanoseconds: Int32(nanoseconds)),
                          metadata: metadata, unknown: unknown)
    }

    /// A get's head: the info, the resolved range, the body's length, and where the body is:
    /// in chunks that follow, or in the descriptor of the answer's frame at `offset`.
    struct Stream {
        var info: ObjectInfo
        var range: Range<Int>?
        var length: Int
        var fileOffset: Int?

        func encoded() -> [UInt8] {
            var w = WireWriter(capacity: 160)
            WorkerAnswer.info(info, &w)
            w.bool(range != nil)
            if let range { w.int(range.lowerBound); w.int(range.upperBound) }
            w.int(length)
            w.bool(fileOffset != nil)
            if let fileOffset { w.int(fileOffset) }
            return w.bytes
        }

        static func decode(_ bytes: [UInt8]) throws(IPCError) -> Stream {
            var r = WireReader(bytes)
            let info = try WorkerAnswer.info(&r)
            var range: Range<Int>?
            if try r.bool("whether a range follows") {
                let lower = try r.int("the range's start"), upper = try r.int("the range's end")
                guard 0 <= lower, lower <= upper else { throw .malformed("expected a range with 0 <= start <= end, found \(lower)..<\(upper)") }
                range = lower..<upper
            }
            let length = try r.int("the body's length")
            let offset = try r.bool("whether a file offset follows") ? try r.int("the file offset") : nil
            guard length >= 0, (offset ?? 0) >= 0 else { throw .malformed("expected a length and offset of 0 or more, found \(length) and \(offset ?? 0)") }
            return Stream(info: info, range: range, length: length, fileOffset: offset)
        }
    }

    static func listing(_ listing: ObjectListing) -> [UInt8] {
        var w = WireWriter(capacity: 64 + listing.objects.count * 120)
        w.u32(UInt32(listing.objects.count))
        for object in listing.objects { info(object, &w) }
        w.optionalString(listing.nextContinuationToken)
        return w.bytes
    }

    static func listing(_ bytes: [UInt8]) throws(IPCError) -> ObjectListing {
        var r = WireReader(bytes)
        let count = Int(try r.u32("the listing's size"))
        guard count <= 1000 else { throw .malformed("expected at most 1000 objects in a page, found \(count)") }
        var objects: [ObjectInfo] = []
        objects.reserveCapacity(count)
        for _ in 0..<count { objects.append(try info(&r)) }
        return ObjectListing(objects: objects, nextContinuationToken: try r.optionalString("the continuation token"))
    }

    static func infoOnly(_ value: ObjectInfo) -> [UInt8] {
        var w = WireWriter(capacity: 128)
        info(value, &w)
        return w.bytes
    }

    static func infoOnly(_ bytes: [UInt8]) throws(IPCError) -> ObjectInfo {
        var r = WireReader(bytes)
        return try info(&r)
    }

    /// A failure: the plugin's error as its code and texts (its `underlying` stays in the
    /// worker: it is not Sendable across processes and may hold what must not leave),
    /// or a cancellation.
    static func failure(_ error: any Error) -> [UInt8] {
        var w = WireWriter(capacity: 128)
        if error is CancellationError {
            w.u8(1)
            return w.bytes
        }
        let e = (error as? PlugboardError) ?? PlugboardError(.storageFailed, "the plugin threw \(type(of: error))",
            detail: "Expected a PlugboardError or a CancellationError, found \(String(describing: error).prefix(500)).",
            hint: "A storage throws PlugboardError with a storage.* code (docs/OBJECT_STORAGE.md).")
        w.u8(0)
        w.string(e.code.rawValue); w.string(e.message); w.optionalString(e.detail); w.optionalString(e.hint)
        return w.bytes
    }

    static func failure(_ bytes: [UInt8]) throws(IPCError) -> any Error {
        var r = WireReader(bytes)
        if try r.u8("the failure's kind") == 1 { return CancellationError() }
        return PlugboardError(PlugboardError.Code(try r.string("the error's code")), try r.string("the error's message"),
                              detail: try r.optionalString("the error's detail"), hint: try r.optionalString("the error's hint"))
    }
}

/// The host's first frame: the plugin to load (as a preflight child's request, with one
/// plugin) and the sandbox the worker applies to itself before it maps anything.
struct WorkerLoad: Sendable {
    var request: PreflightRequest
    var sandbox: SandboxPolicy
    /// For a layer (its plugin `wraps` another): the names of the storages the wrapped
    /// plugin provides in the host (nil: unnamed), which the worker registers as proxies
    /// that call back to the host (``HostStorage``).
    var below: [String?] = []

    func encoded() -> [UInt8] {
        var w = WireWriter(capacity: 1024)
        w.data(request.encoded())
        w.i64(Int64(bitPattern: sandbox.memoryLimitBytes))
        w.i64(Int64(bitPattern: sandbox.openFiles))
        for paths in [sandbox.readWritePaths, sandbox.readOnlyPaths] {
            w.u32(UInt32(paths.count))
            for path in paths { w.string(path) }
        }
        w.u32(UInt32(below.count))
        for name in below { w.optionalString(name) }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(PlugboardError) -> WorkerLoad {
        let parts: (request: [UInt8], memory: UInt64, openFiles: UInt64, lists: [[String]], below: [String?])
        do throws(IPCError) {
            var r = WireReader(bytes)
            let request = try r.data("the load request")
            let memory = UInt64(bitPattern: try r.i64("the sandbox's memory limit"))
            let openFiles = UInt64(bitPattern: try r.i64("the sandbox's open files"))
            var lists: [[String]] = []
            for what in ["read-write", "read-only"] {
                let count = Int(try r.u32("the number of \(what) paths"))
                guard count <= 4096 else { throw IPCError.malformed("expected at most 4096 \(what) paths, found \(count)") }
                var paths: [String] = []
                for _ in 0..<count { paths.append(try r.string("a \(what) path")) }
                lists.append(paths)
            }
            let count = Int(try r.u32("the number of storages below"))
            guard count <= 1024 else { throw IPCError.malformed("expected at most 1024 storages below, found \(count)") }
            var below: [String?] = []
            for _ in 0..<count { below.append(try r.optionalString("a storage below's name")) }
            parts = (request, memory, openFiles, lists, below)
        } catch {
            throw PlugboardError(.isolationProtocolViolation, "the worker could not read its load request: \(error)",
                                 hint: "The host and its worker are the same plugboard executable; run it again.")
        }
        return WorkerLoad(request: try PreflightRequest.decode(parts.request),
                          sandbox: SandboxPolicy(memoryLimitBytes: parts.memory, openFiles: parts.openFiles,
                                                 readWritePaths: parts.lists[0], readOnlyPaths: parts.lists[1]),
                          below: parts.below)
    }
}
