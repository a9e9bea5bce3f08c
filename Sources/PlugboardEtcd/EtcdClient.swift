import PlugboardAPI
import PlugboardConcurrency
import PlugboardHTTPClient
import PlugboardJSON

/// A client of an etcd 3.4 cluster through its JSON gateway: keys, transactions, leases
/// and watches over HTTP/1.1 with the project's own ``PlainHTTPClient`` (no gRPC library).
///
/// Requests go to the member that answered last. A member that cannot be reached, or does
/// not answer within `requestTimeout`, is passed over for the next one: every member's
/// gateway forwards to the Raft leader, so any healthy member will do. While the cluster
/// cannot serve (no leader during an election, the leader changed under the request, too
/// many requests) the request is sent again after a backoff (``RetryPolicy``), to the next
/// member. When every attempt failed, the error is `etcd.unreachable`, naming every
/// endpoint tried and the last failure.
///
/// Reads, puts, deletions and lease calls are sent again after a connection broke or
/// timed out mid-request (each does the same the second time). A transaction is sent
/// again only when it certainly did not reach the cluster; otherwise the caller gets
/// `etcd.outcome_unknown` and reads to learn whether it applied.
///
/// ```swift
/// let client = EtcdClient(endpoints: url.endpoints, logger: logger)
/// let revision = try await client.put("/fleet/hosts/a", Array("{}".utf8))
/// ```
///
/// - Important: There is no authentication (etcd's `--client-cert-auth`, users and
///   roles) and no TLS: the client speaks plain `http://` to endpoints on a trusted
///   network, as the fleet's tests and documentation set etcd up.
public final class EtcdClient: Sendable {
    /// The cluster's members, in the order given.
    public let endpoints: [EtcdEndpoint]
    /// The bound on each exchange with one member (connect, and each wait for data).
    public let requestTimeout: Duration
    let logger: Logger
    let http: PlainHTTPClient
    /// Watches wait for events for as long as nothing changes: their own client, whose
    /// timeout is how long a silent stream is trusted before it is opened again.
    let watchHTTP: PlainHTTPClient
    let retry: RetryPolicy
    /// The index in ``endpoints`` of the member that answered last.
    private let preferred = LockedValueBox(0)

    /// - Parameters:
    ///   - endpoints: the members' client addresses; at least one.
    ///   - requestTimeout: the bound on each exchange with one member.
    ///   - watchIdleTimeout: how long a watch's stream may stay silent before it is
    ///     opened again (quietly: a watch on keys that do not change is silent).
    ///   - retry: the backoff between rounds of every endpoint while the cluster cannot
    ///     serve or cannot be reached. No round starts once three request timeouts have
    ///     passed since the first, so that members that accept and never answer make a
    ///     request fail in bounded time too.
    public init(endpoints: [EtcdEndpoint], requestTimeout: Duration = .seconds(5), watchIdleTimeout: Duration = .seconds(60),
                retry: RetryPolicy = RetryPolicy(maxRetries: 6, baseDelay: .milliseconds(200), maxDelay: .seconds(2)),
                logger: Logger) {
        self.endpoints = endpoints
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.retry = retry
        let limits = PlainHTTPLimits(maxHeaderBytes: 64 * 1024, maxBodyBytes: 64 << 20)
        http = PlainHTTPClient(timeoutSeconds: Self.seconds(requestTimeout), limits: limits, maxIdlePerHost: 4)
        watchHTTP = PlainHTTPClient(timeoutSeconds: Self.seconds(watchIdleTimeout), limits: limits, maxIdlePerHost: 0)
    }

    deinit {
        http.shutdown()
        watchHTTP.shutdown()
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The member requests go to first: the one that answered last.
    var preferredIndex: Int { preferred.withLock { $0 } }

    func answered(_ index: Int) {
        preferred.withLock { $0 = index }
    }

    /// The wire request for `path` with the JSON `body` to the member at `endpoint`.
    static func request(_ path: String, _ body: [UInt8], to endpoint: EtcdEndpoint) -> PlainHTTPRequest {
        PlainHTTPRequest(method: "POST", host: endpoint.host, port: endpoint.port, hostHeader: endpoint.description, target: path,
                         headers: [("Content-Type", "application/json")], body: body, sendsLength: true)
    }

    /// Sends `body` to `path` on the members in turn, from the preferred one, until one
    /// answers 2xx; rounds of every member are repeated with backoff while failures are
    /// transient.
    ///
    /// - Parameters:
    ///   - idempotent: whether sending it twice does no harm, so that it may go again
    ///     after the connection broke or timed out once it was sent.
    ///   - only: one member to ask, once, instead of the cluster.
    /// - Returns: the answer's JSON and the member that gave it.
    func call(_ path: String, _ body: JSONOutput, idempotent: Bool = true,
              only: EtcdEndpoint? = nil) async throws(PlugboardError) -> (JSONValue, EtcdEndpoint) {
        var failures: [(EtcdEndpoint, String)] = []
        let members = only.map { [$0] } ?? endpoints
        let bytes = Array(body.render(pretty: false).utf8)
        let budget = ContinuousClock.now + requestTimeout * 3
        for round in 0...(only == nil ? retry.maxRetries : 0) {
            if round > 0 {
                guard ContinuousClock.now < budget else { break }
                do {
                    try await Task.sleep(for: retry.delay(beforeRetry: round - 1))
                } catch {
                    throw .etcdCancelled(path)
                }
            }
            let start = only == nil ? preferredIndex : 0
            for step in 0..<members.count {
                let index = (start + step) % members.count
                let endpoint = members[index]
                let response: PlainHTTPResponse
                do {
                    response = try await http.perform(Self.request(path, bytes, to: endpoint))
                } catch let error as PlainHTTPError {
                    switch error {
                    case .cancelled:
                        throw .etcdCancelled(path)
                    case .cannotConnect, .invalidRequest:
                        break
                    // Each may come after the member took the request.
                    case .timedOut, .connectionLost, .badResponse, .tooLarge:
                        if !idempotent { throw .etcdOutcomeUnknown(path, endpoint, error.description) }
                    }
                    logger.debug("etcd \(path): \(endpoint) failed, trying the next member", metadata: ["error": "\(error)"])
                    failures.append((endpoint, error.description))
                    continue
                } catch {
                    throw .etcdCancelled(path)
                }
                let root: JSONValue
                do throws(EtcdGateway.Malformed) {
                    root = try EtcdGateway.parse(response.body)
                } catch {
                    if (200..<300).contains(response.status) {
                        throw .etcdMalformed(path, endpoint, expected: error.expected, found: error.found)
                    }
                    failures.append((endpoint, "HTTP \(response.status) without an etcd error"))
                    continue
                }
                if (200..<300).contains(response.status), EtcdGateway.error(root, status: response.status) == nil {
                    if only == nil { answered(index) }
                    return (root, endpoint)
                }
                guard let refusal = EtcdGateway.error(root, status: response.status) else {
                    throw .etcdMalformed(path, endpoint, expected: "an error object with HTTP \(response.status)", found: "none")
                }
                guard refusal.isTransient else { throw Self.refused(path, endpoint, refusal) }
                // "leader changed", "request timed out": the proposal may still apply.
                if !idempotent, !refusal.certainlyNotApplied {
                    throw .etcdOutcomeUnknown(path, endpoint, "etcd answered \"\(refusal.message)\"")
                }
                logger.debug("etcd \(path): \(endpoint) cannot serve now", metadata: ["error": "\(refusal.message)"])
                failures.append((endpoint, "\(refusal.message) (gRPC \(refusal.codeName))"))
            }
        }
        throw .etcdUnreachable(path, tried: failures)
    }

    /// The error for a gateway's refusal that is not transient.
    static func refused(_ path: String, _ endpoint: EtcdEndpoint, _ refusal: GatewayError) -> PlugboardError {
        if refusal.isCompacted {
            return PlugboardError(.etcdCompacted, "etcd revision compacted: \(path) asked for a revision older than the oldest kept",
                detail: "The member at \(endpoint) answered: \(refusal.message).",
                hint: "Read the current state (no revision) and go on from its revision.")
        }
        if refusal.isLeaseNotFound {
            return PlugboardError(.etcdLeaseExpired, "etcd lease expired: \(path) named a lease etcd does not know",
                detail: "The member at \(endpoint) answered: \(refusal.message).",
                hint: "Grant a new lease and put the keys again under it.")
        }
        return .etcdRequestFailed(path, endpoint, refusal)
    }

    /// Runs `parse` on an answer, its malformation reported against `endpoint`.
    func decode<T>(_ path: String, _ endpoint: EtcdEndpoint,
                   _ parse: () throws(EtcdGateway.Malformed) -> T) throws(PlugboardError) -> T {
        do throws(EtcdGateway.Malformed) {
            return try parse()
        } catch {
            throw .etcdMalformed(path, endpoint, expected: error.expected, found: error.found)
        }
    }
}
