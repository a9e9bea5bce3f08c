#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardIPC

/// An `ObjectStorage` whose calls cross the worker protocol: the one place where a call is
/// checked and encoded and its answer read, for both proxies, the host's
/// ``IsolatedStorage`` (calls to a worker) and a layer's worker's ``HostStorage`` (calls
/// back to the host, the roles swapped). Each says only how a call is sent and what its
/// failures become.
protocol StorageOverWire: ObjectStorage {
    /// Sends a call (with a put's body) to whoever serves it and returns its answer.
    func perform(_ call: WorkerCall, body: ObjectBody?) async throws -> WorkerConnection.Reply
    /// The error for an answer that cannot be read (the proxy may act on it first).
    func unreadable(_ error: IPCError) -> PlugboardError
    /// The error a get body's reader sees when the side sending it ended midway.
    func lostMidBody(_ lost: WorkerLost) -> any Error
    /// Who answers, for errors: `plugin "Files"'s worker`, `the host`.
    var peer: String { get }
}

extension StorageOverWire {
    func head(_ key: String) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let reply = try await perform(.head(key: key), body: nil)
        return try decoded { () throws(IPCError) in try WorkerAnswer.infoOnly(reply.frame.payload) }
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try ObjectKey.validate(key)
        let reply = try await perform(.get(key: key, range: range), body: nil)
        let head: WorkerAnswer.Stream
        do {
            head = try decoded { () throws(IPCError) in try WorkerAnswer.Stream.decode(reply.frame.payload) }
        } catch {
            if reply.frame.descriptor >= 0 { Glibc.close(reply.frame.descriptor) }
            throw error
        }
        if reply.frame.descriptor >= 0 {
            // The other side's open file: sent with sendfile (or read) here, as one of this
            // process's own would be.
            let region = try ObjectFileRegion(descriptor: reply.frame.descriptor, offset: head.fileOffset ?? 0, length: head.length)
            return ObjectStream(info: head.info, range: head.range, body: ObjectBody(region))
        }
        guard let body = reply.objectBody(length: head.length, lost: { lostMidBody($0) }) else {
            throw PlugboardError(.isolationProtocolViolation, "\(peer) answered a get without a body")
        }
        return ObjectStream(info: head.info, range: head.range, body: body)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        switch condition {
        case .none, .absent, .matches: break
        @unknown default:
            throw PlugboardError(.storageUnsupported, "condition \(condition) cannot cross to \(peer)",
                detail: "The worker protocol carries .none, .absent and .matches(etag:); this host was built before the condition \(condition).",
                hint: "Run the plugin in process, or use a host built with this PlugboardAPI.")
        }
        let reply = try await perform(.put(key: key, contentType: contentType, metadata: metadata, condition: condition,
                                           length: body.length), body: body)
        return try decoded { () throws(IPCError) in try WorkerAnswer.infoOnly(reply.frame.payload) }
    }

    func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        _ = try await perform(.delete(key: key), body: nil)
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        let reply = try await perform(.list(prefix: prefix, limit: limit, continuationToken: continuationToken), body: nil)
        return try decoded { () throws(IPCError) in try WorkerAnswer.listing(reply.frame.payload) }
    }

    func get(_ key: String) async throws -> StoredObject {
        let stream = try await get(key, range: nil)
        return StoredObject(info: stream.info, data: try await stream.body.collect(upTo: ObjectBody.wholeObjectLimit))
    }

    /// Nil: the answer is in another process. The side that serves it answers such a read
    /// from its wire's reader thread, without a task.
    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? { nil }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await put(key, body: ObjectBody(data), contentType: contentType, metadata: metadata, condition: .none)
    }

    private func decoded<T>(_ read: () throws(IPCError) -> T) throws(PlugboardError) -> T {
        do {
            return try read()
        } catch {
            throw unreadable(error)
        }
    }
}
