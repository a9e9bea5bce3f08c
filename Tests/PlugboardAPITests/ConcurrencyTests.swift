import Foundation
import PlugboardAPI
import Synchronization
import Testing

/// Stress tests: many readers while the registrations change underneath them. They must
/// also pass under `swift test --sanitize=thread`.
@Suite("Concurrency and stress")
struct ConcurrencyTests {
    /// How long each stress test keeps the readers and writers going. Every loop runs at
    /// least once, so a task that the busy pool starts late still does its checks.
    static let stressDuration: Duration = .milliseconds(600)

    static func deadline() -> ContinuousClock.Instant { ContinuousClock.now + stressDuration }

    /// A container whose "base" owner always provides every key, so that every resolve
    /// must succeed whatever the "swap" owner does on top of it.
    static func baseContainer() throws -> Container {
        let c = Container()
        try c.register((any Greeter).self, owner: "base") { _ in English() }
        try c.register((any Greeter).self, name: "formal", owner: "base") { _ in German() }
        try c.register((any Store).self, owner: "base", scope: .transient) { _ in MemoryStore("base") }
        try c.register((any Mailer).self, owner: "base", scope: .transient) { r in SMTPMailer(store: try r.resolve()) }
        return c
    }

    /// Changes what "swap" provides, in every way the container allows, until `deadline`.
    static func mutate(_ c: Container, until deadline: ContinuousClock.Instant, failures: Collected<String>) -> Int {
        var i = 0
        let scopes: [Scope] = [.singleton, .transient, .weak]
        repeat {
            i += 1
            do {
                let word = "swap-\(i)"
                try c.replace((any Greeter).self, rank: 10, owner: "swap", scope: scopes[i % 3]) { _ in Parrot(word) }
                try c.replace((any Greeter).self, name: "formal", rank: 10, owner: "swap",
                              instance: Parrot("formal-\(i)"))
                if i % 2 == 0 {
                    try c.replace((any Store).self, rank: 10, owner: "swap", scope: .transient) { _ in MemoryStore(word) }
                }
                if i % 3 == 0 { try c.unregister((any Greeter).self, owner: "swap") }
                if i % 5 == 0 { c.unregisterAll(owner: "swap") }
                if i % 7 == 0 {
                    try c.register((any Greeter).self, owner: "extra-\(i)", instance: Parrot("swap-extra"))
                    try c.unregister((any Greeter).self, owner: "extra-\(i)")
                }
            } catch {
                failures.append("mutator: \(error)")
            }
        } while ContinuousClock.now < deadline
        return i
    }

    /// One round of every kind of read, checking each value is usable and expected.
    static func readOnce(_ c: Container, handle: ServiceHandle<any Greeter>, failures: Collected<String>) {
        func check(_ what: String, _ ok: Bool, _ got: String) {
            if !ok { failures.append("\(what) gave \(got)") }
        }
        do {
            let g = try c.resolve((any Greeter).self).greet()
            check("resolve", g == "hello" || g.hasPrefix("swap-"), g)
            let inferred: any Greeter = try c.resolve()
            let gi = inferred.greet()
            check("inferred resolve", gi == "hello" || gi.hasPrefix("swap-"), gi)
            let h = try handle.current.greet()
            check("handle", h == "hello" || h.hasPrefix("swap-"), h)
            let f = try c.resolve((any Greeter).self, name: "formal").greet()
            check("named resolve", f == "hallo" || f.hasPrefix("formal-"), f)
            let m = try c.resolve((any Mailer).self).store.label
            check("transient with dependency", m == "base" || m.hasPrefix("swap-"), m)
            let all = try c.resolveAll((any Greeter).self).map { $0.greet() }
            check("resolveAll", all.contains("hello") && all.allSatisfy { $0 == "hello" || $0.hasPrefix("swap-") },
                  "\(all)")
            try c.withLeaseSync { lease in
                let first = try lease.resolve((any Greeter).self).greet()
                let second = try lease.resolve((any Greeter).self).greet()
                check("lease stability", first == second, "\(first) then \(second)")
            }
        } catch {
            failures.append("reader: \(error)")
        }
    }

    @Test func resolvesStayValid_whileAnotherThreadReplacesUnregistersAndRegisters() async throws {
        let c = try Self.baseContainer()
        let handle = c.handle((any Greeter).self)
        let failures = Collected<String>()
        let reads = Calls()
        let writes = Calls()
        let deadline = Self.deadline()

        async let threadsDone = onThreads(4, timeout: 30) { i in
            if i == 0 {
                for _ in 0..<Self.mutate(c, until: deadline, failures: failures) { writes.hit() }
            } else {
                repeat {
                    Self.readOnce(c, handle: handle, failures: failures)
                    reads.hit()
                } while ContinuousClock.now < deadline
            }
        }
        // Readers on the concurrency pool too, and transactions from an async writer.
        async let taskReads: Int = withTaskGroup(of: Int.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    var n = 0
                    repeat {
                        Self.readOnce(c, handle: handle, failures: failures)
                        n += 1
                        await Task.yield()
                    } while ContinuousClock.now < deadline
                    return n
                }
            }
            return await group.reduce(0, +)
        }
        async let commits: Int = {
            var n = 0
            repeat {
                n += 1
                do {
                    try await c.transaction(owner: "tx", rank: 20) { tx in
                        try tx.replace((any Greeter).self, instance: Parrot("swap-tx-\(n)"))
                        try tx.replace((any Store).self, scope: .transient) { _ in MemoryStore("swap-tx") }
                    }
                    if n % 2 == 0 { c.unregisterAll(owner: "tx") }
                } catch {
                    failures.append("transaction: \(error)")
                }
                await Task.yield()
            } while ContinuousClock.now < deadline
            return n
        }()

        let finished = await threadsDone
        let readsOnTasks = await taskReads
        let transactions = await commits
        #expect(finished, "a reader or the writer hung")
        #expect(failures.all.isEmpty, "\(failures.all.prefix(10))")
        #expect(reads.count > 0 && readsOnTasks > 0)
        #expect(writes.count > 0 && transactions > 0)
        // The base provider is still there once everything has settled.
        c.unregisterAll(owner: "swap")
        c.unregisterAll(owner: "tx")
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func manyRounds_ofThreadsRacingTheFirstResolve_buildEachSingletonOnce() async throws {
        let rounds = 20
        let threads = 6
        let extraCalls = Collected<Int>()
        for round in 0..<rounds {
            let c = Container()
            let calls = Calls()
            try c.register((any Greeter).self) { _ in calls.hit(); return Parrot("round-\(round)") }
            try c.register((any Store).self) { r in
                calls.hit()
                return MemoryStore(try r.resolve((any Greeter).self).greet())
            }
            let barrier = Barrier(parties: threads)
            let seen = Collected<ObjectIdentifier>()
            let finished = await onThreads(threads) { i in
                barrier.arrive()
                // Half start with the dependent, so both builds race each other as well.
                let store = i % 2 == 0 ? try? c.resolve((any Store).self) : nil
                if let g = try? c.resolve((any Greeter).self) { seen.append(ObjectIdentifier(g as AnyObject)) }
                if let s = store ?? (try? c.resolve((any Store).self)), s.label != "round-\(round)" {
                    extraCalls.append(-1)
                }
            }
            #expect(finished)
            if calls.count != 2 { extraCalls.append(calls.count) }
            #expect(Set(seen.all).count == 1 && seen.all.count == threads)
        }
        #expect(extraCalls.all.isEmpty, "factory call counts other than once per singleton: \(extraCalls.all)")
    }

    @Test func singletonWaitingForAnotherThreadsBuild_waits_insteadOfReportingACycle() async throws {
        // A (thread 0) needs B while thread 1 is still building B: a wait, not a cycle.
        let c = Container()
        let calls = Calls()
        let bothRunning = Barrier(parties: 2)
        try c.register((any Mailer).self) { r in
            bothRunning.arrive()
            return SMTPMailer(store: try r.resolve())
        }
        try c.register((any Store).self) { _ in
            calls.hit()
            bothRunning.arrive()
            usleep(30_000)  // keep B's build going while A asks for it; not synchronization
            return MemoryStore("slow")
        }
        let labels = Collected<String>()
        let finished = await onThreads(2) { i in
            do {
                labels.append(i == 0 ? try c.resolve((any Mailer).self).store.label
                                     : try c.resolve((any Store).self).label)
            } catch {
                labels.append("\(error)")
            }
        }
        #expect(finished)
        #expect(labels.all.sorted() == ["slow", "slow"])
        #expect(calls.count == 1)
    }

    @Test func sharedDependencyOfSingletonsBuiltOnManyThreads_isBuiltOnce() async throws {
        let c = Container()
        let storeCalls = Calls()
        try c.register((any Store).self) { _ in
            storeCalls.hit()
            usleep(10_000)
            return MemoryStore("shared")
        }
        for i in 0..<6 {
            try c.register((any Mailer).self, name: "m\(i)") { r in SMTPMailer(store: try r.resolve()) }
        }
        let barrier = Barrier(parties: 6)
        let stores = Collected<ObjectIdentifier>()
        let finished = await onThreads(6) { i in
            barrier.arrive()
            if let m = try? c.resolve((any Mailer).self, name: "m\(i)") {
                stores.append(ObjectIdentifier(m.store as AnyObject))
            }
        }
        #expect(finished)
        #expect(storeCalls.count == 1)
        #expect(stores.all.count == 6 && Set(stores.all).count == 1)
    }

    @Test func oneThreadUsingManyContainers_alwaysReadsEachContainersOwnServices() throws {
        // More containers than a thread caches snapshots for, read in turns and changed.
        let containers = (0..<20).map { _ in Container() }
        for (i, c) in containers.enumerated() {
            try c.register((any Greeter).self, owner: "p") { _ in Parrot("c\(i)") }
        }
        for round in 0..<5 {
            for (i, c) in containers.enumerated() {
                #expect(try c.resolve((any Greeter).self).greet() == "c\(i)" + (round == 0 ? "" : "-r\(round)"))
            }
            for (i, c) in containers.enumerated() {
                let word = "c\(i)-r\(round + 1)"
                try c.replace((any Greeter).self, owner: "p") { _ in Parrot(word) }
            }
        }
    }

    @Test func weakServiceRacedByManyHolders_isOneSharedObject() async throws {
        let c = Container()
        try c.register((any Greeter).self, scope: .weak) { _ in Parrot("weak") }
        let threads = 6
        let resolved = Barrier(parties: threads)
        let start = Barrier(parties: threads)
        let seen = Collected<ObjectIdentifier>()
        let finished = await onThreads(threads) { _ in
            start.arrive()
            guard let g = try? c.resolve((any Greeter).self) else { return }
            seen.append(ObjectIdentifier(g as AnyObject))
            resolved.arrive()  // everyone holds their value until all have resolved
            withExtendedLifetime(g) {}
        }
        #expect(finished)
        #expect(seen.all.count == threads)
        #expect(Set(seen.all).count == 1)
    }

    /// A container whose owner "p" runs the managed worker "v0".
    static func containerWithManagedWorker(_ journal: Journal) async throws -> Container {
        let c = Container()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, managed: true) { _ in JournalWorker("v0", journal: journal) }
        }
        return c
    }

    /// Replaces "p"'s worker with a new one named `name`, retiring the old one.
    static func swapWorker(_ c: Container, to name: String, _ journal: Journal) async throws {
        try await c.transaction(owner: "p") { tx in
            try tx.replace((any Worker).self, managed: true) { _ in JournalWorker(name, journal: journal) }
        }
    }

    @Test func leasedManagedServices_areNeverStoppedWhileInUse_underConcurrentSwaps() async throws {
        let journal = Journal()
        let c = try await Self.containerWithManagedWorker(journal)
        let failures = Collected<String>()
        let deadline = Self.deadline()
        async let users: Int = withTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    var n = 0
                    repeat {
                        n += 1
                        do {
                            try await c.withLease { lease in
                                let worker = try lease.resolve((any Worker).self)
                                if worker.stopCount != 0 { failures.append("\(worker.name) stopped before use") }
                                await Task.yield()
                                if worker.stopCount != 0 { failures.append("\(worker.name) stopped during use") }
                            }
                        } catch {
                            failures.append("lease user: \(error)")
                        }
                    } while ContinuousClock.now < deadline
                    return n
                }
            }
            return await group.reduce(0, +)
        }
        var swaps = 0
        repeat {
            swaps += 1
            let name = "v\(swaps)"
            try await Self.swapWorker(c, to: name, journal)
            await Task.yield()
        } while ContinuousClock.now < deadline
        let uses = await users
        await c.awaitPendingStops()
        #expect(failures.all.isEmpty, "\(failures.all.prefix(10))")
        #expect(uses > 0 && swaps > 0)
        let stops = journal.entries(startingWith: "stop")
        #expect(stops.count == swaps, "every replaced worker stops once the leases are gone")
        #expect(Set(stops).count == stops.count, "no worker stops twice")
        #expect(!stops.contains("stop v\(swaps)"), "the current worker keeps running")
        #expect(try c.resolve((any Worker).self).stopCount == 0)
        await c.shutdown()
        #expect(journal.entries(startingWith: "stop").count == swaps + 1)
    }

    @Test func leasesOnManyThreads_whileManagedServicesAreSwapped_neverSeeAStoppedOne_andLeaveNoCount() async throws {
        let journal = Journal()
        let c = try await Self.containerWithManagedWorker(journal)
        let failures = Collected<String>()
        let done = Flag()
        let leases = Atomic<Int>(0)
        // Plain threads, each taking and ending leases as fast as it can, so that a lease
        // often counts itself while a swap publishes and checks what has drained.
        let readers = Task {
            await onThreads(3) { _ in
                repeat {
                    let lease = c.lease()
                    do {
                        let worker = try lease.resolve((any Worker).self)
                        if worker.stopCount != 0 { failures.append("\(worker.name) stopped while leased") }
                    } catch {
                        failures.append("lease user: \(error)")
                    }
                    lease.release()
                    leases.add(1, ordering: .relaxed)
                } while !done.isSet
            }
        }
        var swaps = 0
        let deadline = Self.deadline()
        repeat {
            swaps += 1
            let name = "v\(swaps)"
            try await Self.swapWorker(c, to: name, journal)
        } while ContinuousClock.now < deadline
        done.set()
        #expect(await readers.value, "the lease threads finished")
        await c.awaitPendingStops()
        #expect(failures.all.isEmpty, "\(failures.all.prefix(10))")
        #expect(leases.load(ordering: .relaxed) > 0 && swaps > 0)
        #expect(c.outstandingLeases().isEmpty, "every lease ended, so no generation counts one")
        #expect(c.retiredServicesWaiting(through: c.generation) == 0)
        let stops = journal.entries(startingWith: "stop")
        #expect(stops.count == swaps, "every replaced worker stops once the leases are gone")
        #expect(Set(stops).count == stops.count, "no worker stops twice")
        await c.shutdown()
    }

    @Test func concurrentTransactionsByManyOwners_eachPublishExactlyOneGeneration() async throws {
        let c = Container()
        let owners = 40
        let before = c.generation
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<owners {
                group.addTask {
                    try await c.transaction(owner: "owner-\(i)", rank: i) { tx in
                        try tx.register((any Greeter).self) { _ in Parrot("owner-\(i)") }
                        try tx.register((any Store).self, name: "s\(i)") { _ in MemoryStore("s\(i)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(c.generation == before + UInt64(owners))
        #expect(c.registrations().count == owners * 2)
        #expect(try c.resolve((any Greeter).self).greet() == "owner-\(owners - 1)")
        #expect(try c.resolveAll((any Greeter).self).count == owners)
    }

    @Test func events_stayInGenerationOrder_whenSeveralThreadsChangeTheContainer() async throws {
        let c = Container()
        let events = c.events()
        let perThread = 50
        let threads = 3
        let finished = await onThreads(threads) { t in
            for i in 0..<perThread {
                let owner = "t\(t)"
                _ = try? c.replace((any Greeter).self, owner: owner) { _ in Parrot("\(owner)-\(i)") }
            }
            _ = try? c.unregister((any Greeter).self, owner: "t\(t)")
        }
        #expect(finished)
        // Each thread: 1 registered, (perThread - 1) x (unregistering + replaced), 1 unregistering.
        let expected = threads * (1 + 2 * (perThread - 1) + 1)
        let got = await nextEvents(events, expected)
        #expect(got.count == expected)
        #expect(zip(got, got.dropFirst()).allSatisfy { $0.generation <= $1.generation },
                "generations out of order")
        #expect(got.last?.generation == c.generation)
        // Within a generation, unregistering comes before what replaces it.
        for (earlier, later) in zip(got, got.dropFirst()) where earlier.generation == later.generation {
            #expect(!(earlier.kind == .replaced && later.kind == .unregistering))
        }
    }

    @Test func overlayResolvingAParentSingleton_whileTheParentIsInspected_isRaceFree() async throws {
        // Building a parent's singleton through an overlay records its implementation on
        // the parent's registration; `registrations()` on the parent reads it meanwhile.
        for _ in 0..<10 {
            let parent = Container()
            try parent.register((any Greeter).self) { _ in English() }
            let overlay = parent.overlay()
            let barrier = Barrier(parties: 2)
            let finished = await onThreads(2) { i in
                barrier.arrive()
                if i == 0 {
                    _ = try? overlay.resolve((any Greeter).self)
                } else {
                    for _ in 0..<20 { _ = parent.registrations() }
                }
            }
            #expect(finished)
            #expect(parent.registrations().first?.implementation == "PlugboardAPITests.English")
        }
    }

    @Test func threadsThatExit_releaseTheirCachedSnapshots_andOthersKeepWorking() async throws {
        let c = try Self.baseContainer()
        let handle = c.handle((any Greeter).self)
        let failures = Collected<String>()
        for round in 0..<10 {
            #expect(await onThreads(4) { _ in Self.readOnce(c, handle: handle, failures: failures) })
            try c.replace((any Greeter).self, rank: 10, owner: "swap") { _ in Parrot("swap-\(round)") }
        }
        #expect(failures.all.isEmpty, "\(failures.all.prefix(10))")
        #expect(try handle.current.greet() == "swap-9")
    }
}
