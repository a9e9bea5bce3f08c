import PlugboardAPI
import PlugboardHTTPClient
import PlugboardJSON

/// The changes of a key, or of every key under a prefix, as etcd's watch streams them:
/// an `AsyncSequence` of ``EtcdWatchEvent`` that ends only when the task iterating it is
/// cancelled.
///
/// The watch holds one streamed answer of `POST /v3/watch` open and reads its messages as
/// they come. When the stream breaks (the member stopped or was killed, the network
/// failed, the cluster lost its leader), it opens a new one on the next member, with
/// backoff, from the revision after the last change it delivered: no change is lost and
/// none comes twice. When that revision has been compacted away, it reads the watched
/// keys as they are now and delivers them as ``EtcdWatchEvent/resynced(_:revision:)``,
/// then goes on from there. A lost stream is logged once as a warning, and so is the
/// reconnection; a stream that stays silent for the client's `watchIdleTimeout` is opened
/// again quietly (a watched key that does not change is silent).
///
/// ```swift
/// for await event in client.watch(key: "/fleet/manifest", fromRevision: revision + 1) {
///     switch event {
///     case .changes(let changes, _): apply(changes)
///     case .resynced(let current, _): replaceAll(with: current)
///     }
/// }
/// ```
///
/// - Important: Iterate it from one task; each iterator holds its own stream.
public struct EtcdWatch: AsyncSequence, Sendable {
    public typealias Element = EtcdWatchEvent
    /// A watch does not fail: it reconnects until its task is cancelled.
    public typealias Failure = Never

    let client: EtcdClient
    let key: String
    let prefix: Bool
    let fromRevision: Int64?

    /// An iterator with a stream of its own, opened at its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(self)
    }

    /// Reads the watch's stream; see ``EtcdWatch``.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = EtcdWatchEvent
        public typealias Failure = Never

        private let watch: EtcdWatch
        private var stream: WatchStream?
        /// The revision the next stream starts from; nil until the first stream said
        /// where "now" is.
        private var nextRevision: Int64?
        private var endpointIndex: Int
        /// Failed attempts since the last stream that worked: the backoff's exponent.
        private var failures = 0
        /// Why the stream was lost, while the watch has not reconnected (logged once).
        private var lost: String?
        /// Whether a stream was ever open: before that, a failure is not a loss.
        private var connected = false
        /// The watch's revision was compacted and the keys must be read again.
        private var resyncPending = false

        init(_ watch: EtcdWatch) {
            self.watch = watch
            nextRevision = watch.fromRevision
            endpointIndex = watch.client.preferredIndex
        }

        /// The next event; nil only once the calling task is cancelled.
        public mutating func next() async -> EtcdWatchEvent? {
            while !Task.isCancelled {
                if failures > 0, stream == nil {
                    let delay = watch.client.retry.delay(beforeRetry: failures - 1)
                    try? await Task.sleep(for: delay)
                    if Task.isCancelled { break }
                }
                if resyncPending {
                    if let event = await resync() { return event }
                    continue
                }
                if stream == nil {
                    await open()
                    continue
                }
                guard let message = await readMessage() else { continue }
                if let event = handle(message) { return event }
            }
            stream = nil
            return nil
        }

        private var client: EtcdClient { watch.client }
        private var endpoint: EtcdEndpoint { client.endpoints[endpointIndex % client.endpoints.count] }
        private var what: String { watch.prefix ? "prefix \"\(watch.key)\"" : "key \"\(watch.key)\"" }

        private mutating func open() async {
            let endpoint = self.endpoint
            let body = EtcdGateway.watch(watch.key, prefix: watch.prefix, fromRevision: nextRevision)
            do {
                let request = EtcdClient.request("/v3/watch", Array(body.render(pretty: false).utf8), to: endpoint)
                let opened = try await client.watchHTTP.open(request, streamingSuccess: true)
                guard let streamed = opened.body else {
                    let refusal = (try? EtcdGateway.parse(opened.response.body)).flatMap { EtcdGateway.error($0, status: opened.response.status) }
                    failed(refusal.map { "\($0.message) (gRPC \($0.codeName))" } ?? "HTTP \(opened.response.status)")
                    return
                }
                stream = WatchStream(body: streamed, endpoint: endpoint)
            } catch {
                if Task.isCancelled { return }
                failed("\(error)")
            }
        }

        /// The next message of the stream, or nil when the stream broke (already handled).
        private mutating func readMessage() async -> JSONValue? {
            guard var current = stream else { return nil }
            stream = nil
            do {
                let line = try await current.nextLine()
                guard let line else {
                    failed("the member closed the stream")
                    return nil
                }
                stream = current
                do throws(EtcdGateway.Malformed) {
                    return try EtcdGateway.parse(line)
                } catch {
                    failed("a malformed message: expected \(error.expected), found \(error.found)")
                    return nil
                }
            } catch PlainHTTPError.timedOut {
                // Silence on a watch is normal; open it again, from where it was, quietly.
                client.logger.debug("etcd watch on \(what): no message within the idle timeout; opening it again",
                                    metadata: ["etcd.endpoint": "\(current.endpoint)"])
                return nil
            } catch {
                if Task.isCancelled { return nil }
                failed("\(error)")
                return nil
            }
        }

        private mutating func handle(_ root: JSONValue) -> EtcdWatchEvent? {
            if let refusal = EtcdGateway.error(root, status: 0) {
                failed("\(refusal.message) (gRPC \(refusal.codeName))")
                return nil
            }
            let message: EtcdGateway.WatchMessage
            do throws(EtcdGateway.Malformed) {
                message = try EtcdGateway.watchMessage(root)
            } catch {
                failed("a malformed message: expected \(error.expected), found \(error.found)")
                return nil
            }
            if message.created {
                if nextRevision == nil { nextRevision = message.revision + 1 }
                if let lost {
                    client.logger.warning("etcd watch on \(what) reconnected after a failed stream (\(lost))",
                                          metadata: ["etcd.endpoint": "\(endpoint)", "etcd.revision": "\(nextRevision ?? 0)"])
                }
                lost = nil
                failures = 0
                connected = true
            }
            if message.canceled {
                stream = nil
                if message.compactRevision > 0 {
                    client.logger.notice("etcd watch on \(what): revision \(nextRevision ?? 0) was compacted (oldest kept \(message.compactRevision)); reading the keys again")
                    resyncPending = true
                } else {
                    failed("etcd cancelled the watch: \(message.cancelReason.isEmpty ? "no reason given" : message.cancelReason)")
                }
                return nil
            }
            let fresh = message.changes.filter { $0.modRevision >= (nextRevision ?? 0) }
            guard let last = fresh.last else {
                // A progress notification: every change up to its revision was sent.
                if !message.created, message.revision > 0 { nextRevision = Swift.max(nextRevision ?? 0, message.revision + 1) }
                return nil
            }
            nextRevision = last.modRevision + 1
            return .changes(fresh, revision: last.modRevision)
        }

        /// The watched keys as they are now, after a compaction; nil when they could not
        /// be read (counted as a failure, tried again after the backoff).
        private mutating func resync() async -> EtcdWatchEvent? {
            do throws(PlugboardError) {
                let kvs: [EtcdKeyValue]
                let revision: Int64
                if watch.prefix {
                    (kvs, revision) = try await client.range(prefix: watch.key)
                } else {
                    let (kv, at) = try await client.get(watch.key)
                    (kvs, revision) = (kv.map { [$0] } ?? [], at)
                }
                resyncPending = false
                failures = 0
                nextRevision = revision + 1
                return .resynced(kvs, revision: revision)
            } catch {
                if Task.isCancelled { return nil }
                failed(error.message)
                return nil
            }
        }

        /// Counts a failed attempt, moves to the next member, and warns once per loss.
        private mutating func failed(_ why: String) {
            stream = nil
            if lost == nil {
                let state = connected ? "lost its stream" : "could not open its stream"
                client.logger.warning("etcd watch on \(what) \(state): \(why); reconnecting with backoff",
                                      metadata: ["etcd.endpoint": "\(endpoint)", "etcd.revision": "\(nextRevision ?? 0)"])
                lost = why
            } else {
                client.logger.debug("etcd watch on \(what): attempt \(failures + 1) failed: \(why)", metadata: ["etcd.endpoint": "\(endpoint)"])
            }
            failures += 1
            endpointIndex += 1
        }
    }
}

/// A watch's open stream: its body and the bytes of a message not yet complete.
struct WatchStream {
    let body: PlainHTTPResponseBody
    let endpoint: EtcdEndpoint
    private var buffer: [UInt8] = []

    init(body: PlainHTTPResponseBody, endpoint: EtcdEndpoint) {
        self.body = body
        self.endpoint = endpoint
    }

    /// The next newline-delimited message (the gateway ends each with a newline), or nil
    /// when the stream ended.
    mutating func nextLine() async throws -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) { continue }
                return line
            }
            guard let piece = try await body.nextArrived() else {
                return nil
            }
            buffer += piece
        }
    }
}

extension EtcdClient {
    /// Watches `key` (or every key under it, with `prefix`) from `fromRevision`, or from
    /// now when nil; see ``EtcdWatch``.
    public func watch(key: String, prefix: Bool = false, fromRevision: Int64?) -> EtcdWatch {
        EtcdWatch(client: self, key: key, prefix: prefix, fromRevision: fromRevision)
    }
}
