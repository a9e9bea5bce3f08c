@testable import PlugboardHost
import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC
import PlugboardTesting
import Testing

/// The worker protocol with the roles swapped, as an isolated layer uses it: the worker
/// calls the storage it wraps through the host (``HostStorage``), on the wire the host
/// calls it on, with the host's calls to the worker running at the same time. Both ends in
/// this process, over a real transport of each kind.
@Suite struct ReverseCallTests {
    /// Both ends of one wire: the host's connection serving `below` to the worker, and the
    /// worker's server (serving `served`, built over the worker's calls to the host).
    final class Wire: Sendable {
        let host: WorkerConnection
        let worker: WorkerConnection
        let server: WorkerServer

        init(_ kind: TransportKind, below: any ObjectStorage, served: @escaping @Sendable (HostStorage) -> any ObjectStorage) throws {
            let (hostEnd, child) = try Transports.make(kind)
            let workerEnd = try Transports.attach(kind, descriptors: child)
            let wrapped = WrappedStorages(owner: "Inner")
            wrapped.set(below, name: nil)
            host = WorkerConnection(transport: hostEnd, server: wrapped.server(on: hostEnd)) { _ in }
            worker = WorkerConnection(transport: workerEnd, origin: StreamOrigin.worker) { _ in }
            let storage = served(HostStorage(connection: worker, service: nil, wrapped: "Inner"))
            server = WorkerServer(transport: workerEnd, storage: { _ throws(PlugboardError) in storage }, health: { _ in nil },
                                  client: worker)
            #expect(host.start() && server.start())
        }

        /// What the host's layer proxy does, without a supervisor: the host's calls.
        var hostSide: Caller { Caller(connection: host) }

        func close() {
            host.close()
        }
    }

    /// The host's calls to the worker, as ``IsolatedStorage`` makes them.
    final class Caller: StorageOverWire {
        let connection: WorkerConnection
        init(connection: WorkerConnection) { self.connection = connection }
        func perform(_ call: WorkerCall, body: ObjectBody?) async throws -> WorkerConnection.Reply {
            try await connection.call(call, service: nil, body: body)
        }
        func unreadable(_ error: IPCError) -> PlugboardError { PlugboardError(.isolationProtocolViolation, "\(error)") }
        func lostMidBody(_ lost: WorkerLost) -> any Error { PlugboardError(.storageUnavailable, "lost \(lost.call.summary)") }
        var peer: String { "the worker" }
    }

    @Test(arguments: [TransportKind.ring, .socket])
    func theWorkersCallsToTheHost_passTheWholeConformanceSuite(_ kind: TransportKind) async throws {
        let wire = try Wire(kind, below: InMemoryObjectStorage()) { $0 }
        defer { wire.close() }
        let below = HostStorage(connection: wire.worker, service: nil, wrapped: "Inner")
        let report = await ObjectStorageConformance(makeStorage: { below }).run()
        try report.requireAllPassed()
    }

    @Test(arguments: [TransportKind.ring, .socket])
    func theHostsCallsThroughALayerThatCallsTheHost_passTheWholeConformanceSuite(_ kind: TransportKind) async throws {
        // Host -> worker -> host -> storage: both roles on each end of one wire at once.
        let wire = try Wire(kind, below: InMemoryObjectStorage()) { $0 }
        defer { wire.close() }
        let storage = wire.hostSide
        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        try report.requireAllPassed()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
    }

    @Test func aFailureBelow_reachesTheLayerWithItsCode_andTheWireStaysUp() async throws {
        let failing = FailingStorage()
        let wire = try Wire(.ring, below: failing) { $0 }
        defer { wire.close() }
        let storage = wire.hostSide
        await #expect(throws: PlugboardError.self) { _ = try await storage.head("a") }
        do {
            _ = try await storage.get("a", range: nil)
            Issue.record("the get should have failed")
        } catch let error as PlugboardError {
            #expect(error.code == .storageUnavailable && error.message.contains("the inner worker died"), "\(error)")
        }
        // The wire is up: the next call is served.
        failing.fails.withLock { $0 = false }
        _ = try await storage.put("a", data: Array("x".utf8), contentType: nil, metadata: [:])
        #expect(try await storage.get("a").data == Array("x".utf8))
    }

    @Test func aCallFromAWorkerThatWrapsNothing_endsItsWireAsAProtocolViolation() async throws {
        let (hostEnd, child) = try Transports.make(.socket)
        let workerEnd = try Transports.attach(.socket, descriptors: child)
        defer { workerEnd.close() }
        let (endings, ended) = AsyncStream.makeStream(of: WorkerConnection.Ending.self)
        let host = WorkerConnection(transport: hostEnd) { ended.yield($0) }
        #expect(host.start())
        try workerEnd.send(Frame(.call, stream: StreamOrigin.worker | 1, payload: WorkerCall.head(key: "a").encoded(service: nil)))
        for await ending in endings {
            if case .protocolViolation(let why) = ending {
                #expect(why.contains("wraps no storage"), "\(why)")
            } else {
                Issue.record("expected a protocol violation, found \(ending)")
            }
            break
        }
    }

    @Test func aHostCallWaitingOnItsCallBelow_isNotTakenForAHungWorker() async throws {
        let slow = SlowStorage()
        let wire = try Wire(.ring, below: slow) { $0 }
        defer { wire.close() }
        let storage = wire.hostSide
        let head = Task { try await storage.head("a") }
        for await _ in slow.entered { break }
        // The host serves the worker's call below: the host's own call waits on the host.
        #expect(wire.host.stalest() == nil)
        slow.releasedSink.yield()
        await #expect(throws: PlugboardError.self) { _ = try await head.value }
    }
}

/// Below a layer: reads fail as those of an isolated storage whose worker died do, until
/// told not to.
private final class FailingStorage: ForwardingStorage {
    let base = InMemoryObjectStorage()
    let fails = LockedValueBox(true)

    private func check() throws(PlugboardError) {
        if fails.withLock({ $0 }) { throw PlugboardError(.storageUnavailable, "the inner worker died") }
    }

    func head(_ key: String) async throws -> ObjectInfo {
        try check()
        return try await base.head(key)
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try check()
        return try await base.get(key, range: range)
    }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try check()
        return try base.getWithoutWaiting(key, range: range)
    }
}

/// Below a layer: a head that says when it has begun, then waits to be let go.
private final class SlowStorage: ForwardingStorage {
    let base = InMemoryObjectStorage()
    let (entered, enteredSink) = AsyncStream.makeStream(of: Void.self)
    let (released, releasedSink) = AsyncStream.makeStream(of: Void.self)

    func head(_ key: String) async throws -> ObjectInfo {
        enteredSink.yield()
        for await _ in released { break }
        return try await base.head(key)
    }

    /// Never at once: the head is to wait in a task.
    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? { nil }
}
