import Dispatch
import Foundation
import PlugboardAPI
import Synchronization

/// Thrown when something the test waited for did not happen in time.
struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body(i)` for `i` in `0..<count`, each on a new thread, and returns whether all
/// of them finished within `timeout`. Never blocks a thread of the concurrency pool, so a
/// hung body fails the test instead of stalling the run.
func onThreads(_ count: Int, timeout: Double = 20, _ body: @escaping @Sendable (Int) -> Void) async -> Bool {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
    return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let once = Once()
        group.notify(queue: .global()) { if once.claim() { continuation.resume(returning: true) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            if once.claim() { continuation.resume(returning: false) }
        }
    }
}

/// Runs `operation` in a task of its own and returns whether it finished within
/// `timeout`; for operations that might deadlock (a deadlocked task cannot be cancelled).
func finishes(within timeout: Double, _ operation: @escaping @Sendable () async -> Void) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let once = Once()
        Task.detached {
            await operation()
            if once.claim() { continuation.resume(returning: true) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            if once.claim() { continuation.resume(returning: false) }
        }
    }
}

/// True for the first caller only.
final class Once: Sendable {
    private let done = Atomic<Bool>(false)
    func claim() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}

/// A flag one thread raises and others read.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    func set() { raised.store(true, ordering: .releasing) }
    var isSet: Bool { raised.load(ordering: .acquiring) }
}

/// A barrier for threads: `arrive` waits until `parties` threads have arrived (or
/// `timeout` has passed, so a broken test cannot hang). Once open it stays open.
final class Barrier: @unchecked Sendable {
    // @unchecked Sendable: `arrived` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var arrived = 0
    let parties: Int

    init(parties: Int) { self.parties = parties }

    /// Returns false if the barrier did not open in time.
    @discardableResult
    func arrive(timeout: Double = 5) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        if arrived >= parties {
            condition.broadcast()
            return true
        }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while arrived < parties {
            if !condition.wait(until: deadline) { return arrived >= parties }
        }
        return true
    }
}

/// Values collected from many threads.
final class Collected<Value>: @unchecked Sendable {
    // @unchecked Sendable: `values` is only touched with `lock` held.
    private let lock = NSLock()
    private var values: [Value] = []

    func append(_ value: Value) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }

    var all: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }
}

/// The next `count` events of `stream`, or fewer if they do not all come within `timeout`.
func nextEvents(_ stream: AsyncStream<ContainerEvent>, _ count: Int,
                timeout: Duration = .seconds(5)) async -> [ContainerEvent] {
    await withTaskGroup(of: [ContainerEvent]?.self) { group in
        group.addTask {
            var out: [ContainerEvent] = []
            guard count > 0 else { return out }
            for await event in stream {
                out.append(event)
                if out.count == count { break }
            }
            return out
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        var result: [ContainerEvent] = []
        while let next = await group.next() {
            if let events = next {
                result = events
                group.cancelAll()
            } else {
                group.cancelAll()  // timed out (or done): the reader returns what it has
            }
        }
        return result
    }
}

/// Polls `condition` until it holds or `timeout` passes: for "eventually" checks where
/// nothing can be awaited.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}
