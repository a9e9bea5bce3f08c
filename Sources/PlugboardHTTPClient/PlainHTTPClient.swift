import Dispatch
import PlugboardConcurrency
import PlugboardHTTPCodec

/// HTTP/1.1 over plain TCP for `http://` endpoints, without URLSession's hops between
/// curl's event loop, dispatch sources and a delegate queue.
///
/// Each exchange runs its blocking socket calls on a serial Dispatch queue of its own and
/// resumes the caller from there: serial queues run on libdispatch's overcommitting threads,
/// which start at once when the others are blocked, so exchanges neither starve Swift's
/// cooperative pool nor wait on one another. (A concurrent queue would share the
/// non-overcommitting pool, one thread per core, and a third exchange would wait about a
/// second for libdispatch to add a thread.) Idle keep-alive connections wait in a small
/// pool per host.
public final class PlainHTTPClient: Sendable {
    public let timeoutSeconds: Double
    public let limits: PlainHTTPLimits
    let pool: PlainHTTPPool

    public init(timeoutSeconds: Double, limits: PlainHTTPLimits = PlainHTTPLimits(), maxIdlePerHost: Int = 4) {
        self.timeoutSeconds = timeoutSeconds
        self.limits = limits
        self.pool = PlainHTTPPool(maxIdlePerHost: maxIdlePerHost)
    }

    /// Closes the idle connections; running exchanges finish and close theirs.
    public func shutdown() {
        pool.close()
    }

    /// Sends `request` and reads the answer; cancelling the calling task shuts the socket
    /// down, which ends a blocked send or receive at once.
    ///
    /// - Throws: ``PlainHTTPError`` (`.cancelled` when the task was cancelled).
    public func perform(_ request: PlainHTTPRequest) async throws -> PlainHTTPResponse {
        try await open(request, streamingSuccess: false).response
    }

    /// Sends `request` and reads the answer's head; a 2xx answer's body is left on the
    /// connection as a ``PlainHTTPResponseBody`` when `streamingSuccess` is true, every
    /// other body is read whole (an error's body is small, and parsed whole). Cancelling
    /// the calling task shuts the socket down.
    ///
    /// - Throws: ``PlainHTTPError`` (`.cancelled` when the task was cancelled).
    public func open(_ request: PlainHTTPRequest, streamingSuccess: Bool) async throws -> PlainHTTPOpenedResponse {
        let box = PlainHTTPCancelBox()
        return try await withTaskCancellationHandler {
            try await Self.run(on: DispatchQueue(label: "plugboard.http-client")) { [self] () throws(PlainHTTPError) in
                try exchange(request, box, streamingSuccess: streamingSuccess)
            }
        } onCancel: {
            box.cancel()
        }
    }

    private func exchange(_ request: PlainHTTPRequest, _ box: PlainHTTPCancelBox,
                          streamingSuccess: Bool) throws(PlainHTTPError) -> PlainHTTPOpenedResponse {
        let key = "\(request.host):\(request.port)"
        let bytes = try Self.encode(request)
        while true {
            let pooled = pool.take(key)
            let socket: PlainHTTPSocket
            if let pooled {
                socket = pooled
            } else {
                socket = try PlainHTTPSocket.connect(host: request.host, port: request.port, timeoutSeconds: timeoutSeconds,
                                                     isCancelled: { box.isCancelled })
            }
            guard box.attach(socket) else { throw .cancelled }
            var reader = PlainHTTPResponseReader(PlainHTTPSocketSource(socket: socket), limits: limits)
            do throws(PlainHTTPError) {
                try socket.send(bytes)
                let head = try reader.readHead(method: request.method)
                if streamingSuccess, (200..<300).contains(head.status), !reader.bodyEnded {
                    // The box stays attached: the body's reads answer to cancellation too.
                    if box.isCancelled { throw .cancelled }
                    let body = PlainHTTPResponseBody(reader, key: key, pool: pool, box: box, length: head.contentLength)
                    return PlainHTTPOpenedResponse(
                        response: PlainHTTPResponse(status: head.status, headers: head.headers, body: [], reusable: false), body: body)
                }
                let response = try reader.readBody(of: head)
                // A cancellation that came as the last bytes did has shut the socket down.
                if box.detach(), response.reusable { pool.put(socket, key) }
                return PlainHTTPOpenedResponse(response: response, body: nil)
            } catch {
                if !box.detach() { throw .cancelled }
                // The server may close an idle connection just as it is reused: go again on a
                // new one when nothing came back. Only idempotent requests come here: an
                // upload, whose body cannot be sent twice, never takes a pooled connection.
                if pooled != nil, !reader.receivedAny, case .connectionLost = error { continue }
                throw error
            }
        }
    }

    /// Runs blocking socket work on `queue` and resumes the caller with its result.
    ///
    /// The result goes through a lock as well as the continuation: a continuation resumed
    /// before its task has suspended hands the value over with an atomic of the Swift
    /// runtime that ThreadSanitizer does not see (the runtime is not instrumented), and it
    /// then reports the value's fields, written on the queue's thread, as racing with their
    /// reads on the task's (CI saw it for a PlainHTTPResponseBody's `length`). The lock's
    /// release here and acquire there are what it sees.
    static func run<T: Sendable>(on queue: DispatchQueue,
                                 _ work: @escaping @Sendable () throws(PlainHTTPError) -> T) async throws(PlainHTTPError) -> T {
        let slot = LockedValueBox<Result<T, PlainHTTPError>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                let result: Result<T, PlainHTTPError>
                do throws(PlainHTTPError) {
                    result = .success(try work())
                } catch {
                    result = .failure(error)
                }
                slot.withLock { $0 = result }
                continuation.resume()
            }
        }
        // Set before the resume, so always there.
        guard let result = slot.withLock({ $0 }) else { throw .cancelled }
        return try result.get()
    }

    /// The request line, the headers and the body, in one buffer. A CR or LF in a name
    /// or value would end the header early and smuggle a second one: the writer refuses it.
    static func encode(_ request: PlainHTTPRequest) throws(PlainHTTPError) -> [UInt8] {
        var head = HTTPHeadWriter(reserving: 256 + request.body.count)
        do throws(HTTPSyntaxError) {
            try head.requestLine(method: request.method, target: request.target)
            try head.field("Host", request.hostHeader)
            for (name, value) in request.headers { try head.field(name, value) }
        } catch {
            throw .invalidRequest(error.summary)
        }
        if request.expectsContinue { head.field("Expect", replacingControls: "100-continue") }
        if request.chunked {
            head.field("Transfer-Encoding", replacingControls: "chunked")
        } else if let declared = request.declaredLength {
            head.field("Content-Length", decimal: declared)
        } else if request.sendsLength || !request.body.isEmpty {
            head.field("Content-Length", decimal: request.body.count)
        }
        head.end()
        var bytes = head.bytes
        bytes += request.body
        return bytes
    }
}

extension PlainHTTPClient {
    /// Sends `request`'s head (with its ``PlainHTTPRequest/declaredLength``) on a new
    /// connection, lets `send` write the body through the ``PlainHTTPUpload`` piece by
    /// piece, then reads the answer; cancelling the calling task shuts the socket down.
    ///
    /// A new connection, never a pooled one: a body is read once, so an upload cannot go
    /// again on another connection when a pooled one turns out to be closed. The
    /// connection is closed afterwards. When `send` throws, the connection closes with the
    /// body incomplete, and the server stores nothing.
    ///
    /// - Throws: ``PlainHTTPError``, or what `send` throws.
    public func upload(_ request: PlainHTTPRequest,
                _ send: (PlainHTTPUpload) async throws -> Void) async throws -> PlainHTTPResponse {
        let box = PlainHTTPCancelBox()
        let queue = DispatchQueue(label: "plugboard.http-client.upload")
        let timeoutSeconds = self.timeoutSeconds, limits = self.limits
        return try await withTaskCancellationHandler {
            let head = try Self.encode(request)
            let socket = try await Self.run(on: queue) { () throws(PlainHTTPError) -> PlainHTTPSocket in
                let socket = try PlainHTTPSocket.connect(host: request.host, port: request.port, timeoutSeconds: timeoutSeconds,
                                                         isCancelled: { box.isCancelled })
                guard box.attach(socket) else { throw .cancelled }
                try socket.send(head)
                return socket
            }
            let upload = PlainHTTPUpload(socket: socket, queue: queue, box: box, chunked: request.chunked)
            if request.expectsContinue, try await !upload.awaitContinue() {
                return try await upload.response(method: request.method, limits: limits)
            }
            do {
                try await send(upload)
                try await upload.finish()
            } catch let error as PlainHTTPError {
                // A server may answer (and close) before taking the whole body: that
                // answer says more than the broken send.
                if error != .cancelled, let early = try? await upload.response(method: request.method, limits: limits) {
                    return early
                }
                throw error
            }
            return try await upload.response(method: request.method, limits: limits)
        } onCancel: {
            box.cancel()
        }
    }
}
