#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
internal import CPlugboardThreadLocal

/// Per-thread state of the resolve path, reached through one thread-local load (a C
/// `__thread` variable; the pthread key only serves to release it when the thread exits).
///
/// ## The reclamation scheme
///
/// Swift has no atomic strong reference, so a reader cannot load "the current snapshot"
/// and retain it in one step: the writer could release it in between. Plugboard's readers
/// take no lock and no atomic read-modify-write. Instead, each thread keeps, in the slots
/// below, a *strong* reference to the last snapshot it used of each container, with that
/// snapshot's generation. A resolve compares the container's published generation (one
/// atomic load) with its slot: when they match, it reads the snapshot this thread itself
/// holds alive. When they differ, it takes the container's lock once, retains the current
/// snapshot into the slot and releases the one it held. A snapshot is therefore freed
/// when the container and every thread that cached it have moved past it, or those
/// threads have exited (the key's destructor releases the slots).
///
/// The cost of stale memory is bounded: at most one old snapshot per thread and cached
/// container. Draining (stopping replaced services) does not depend on this: it is driven
/// by leases (``Lease``), not by when memory is freed.
///
/// The build stack records the registrations this thread is building, innermost last, so
/// a dependency cycle is reported with its full path instead of overflowing the stack,
/// whether factories resolve through the ``Resolver`` they are given or through a
/// captured container.
struct ThreadState {
    static let slotCount = 8
    static let maxDepth = 128

    struct Slot {
        var containerID: UInt64 = 0
        var generation: UInt64 = 0
        /// Retained by this slot.
        var snapshot: Unmanaged<Snapshot>?
        /// `snapshot`'s tables, so the resolve path never touches the snapshot object.
        var tables: UnsafeMutablePointer<SnapshotTables>?
        /// The texts of this thread's last miss on `snapshot`, retained by this slot: a
        /// caller that probes for a service it may not have misses the same key again, and
        /// each miss then costs a retain instead of an allocation.
        var lastMiss: Unmanaged<NotRegisteredText>?
    }

    /// A process-unique number for this thread, for the build coordinator.
    let token: UInt64
    let slots: UnsafeMutablePointer<Slot>
    /// Unretained: every registration on the stack is retained by the frame building it.
    let stack: UnsafeMutablePointer<Unmanaged<Registration>>
    var depth = 0
    var nextVictim = 0
    /// While a transaction builds its managed services, the singletons this thread
    /// finished building, in completion order: dependencies before their dependents.
    var completed: [Registration]?
    /// Snapshots this thread stopped caching while a factory was running. A factory's
    /// own nested resolves may refresh the slot that holds the snapshot the outer resolve
    /// is reading (whose registration and factory are running now, unretained), so those
    /// are released only when the outermost build on this thread ends.
    var deferred: [Unmanaged<Snapshot>] = []

    private static let tokens = Atomic<UInt64>(0)

    private init() {
        token = Self.tokens.add(1, ordering: .relaxed).newValue
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: Slot(), count: Self.slotCount)
        stack = .allocate(capacity: Self.maxDepth)
    }

    /// This thread's state, created on first use.
    static func current() -> UnsafeMutablePointer<ThreadState> { current(key: key.value) }

    /// This thread's state; `key` is ``key``'s value, which containers copy so that
    /// creating the state does not pay for a lazy global's initialization check.
    @inline(__always)
    static func current(key: pthread_key_t) -> UnsafeMutablePointer<ThreadState> {
        if let p = plugboard_thread_state_get() {
            return p.assumingMemoryBound(to: ThreadState.self)
        }
        return makeCurrent(key: key)
    }

    @inline(never)
    private static func makeCurrent(key: pthread_key_t) -> UnsafeMutablePointer<ThreadState> {
        let p = UnsafeMutablePointer<ThreadState>.allocate(capacity: 1)
        p.initialize(to: ThreadState())
        // The key's destructor frees the state when the thread exits.
        pthread_setspecific(key, p)
        plugboard_thread_state_set(p)
        return p
    }

    /// The pthread key, with a destructor that releases the cached snapshots.
    static let key = PThreadKey()

    /// Releases every slot's snapshot. Called when the thread exits.
    static func destroy(_ raw: UnsafeMutableRawPointer) {
        // A later destructor that resolves gets a fresh state (and the key's destructor
        // runs again for it), never this freed one.
        plugboard_thread_state_set(nil)
        let p = raw.assumingMemoryBound(to: ThreadState.self)
        for i in 0..<slotCount {
            p.pointee.slots[i].snapshot?.release()
            p.pointee.slots[i].lastMiss?.release()
        }
        for s in p.pointee.deferred { s.release() }
        p.pointee.slots.deallocate()
        p.pointee.stack.deallocate()
        p.deinitialize(count: 1)
        p.deallocate()
    }

    /// The slot of `containerID` if it holds `generation`, looking past the first slot
    /// (the resolve path checks that one inline).
    func otherSlot(containerID: UInt64, generation: UInt64) -> UnsafeMutablePointer<Slot>? {
        for i in 1..<Self.slotCount where slots[i].containerID == containerID && slots[i].generation == generation {
            return slots + i
        }
        return nil
    }

    /// Stores a retained snapshot in the container's slot (or a victim's), releasing
    /// what the slot held; returns the slot.
    @discardableResult
    mutating func cache(_ snapshot: Snapshot, containerID: UInt64) -> UnsafeMutablePointer<Slot> {
        var target = -1
        for i in 0..<Self.slotCount where slots[i].containerID == containerID {
            target = i
            break
        }
        if target < 0 {
            target = nextVictim
            nextVictim = (nextVictim + 1) % Self.slotCount
        }
        let old = slots[target].snapshot
        // A miss's texts retain their own snapshot, so they may go now even while a
        // factory runs.
        slots[target].lastMiss?.release()
        slots[target] = Slot(containerID: containerID, generation: snapshot.generation,
                             snapshot: Unmanaged.passRetained(snapshot), tables: snapshot.tables)
        if let old {
            if depth > 0 { deferred.append(old) } else { old.release() }
        }
        return slots + target
    }

    /// Enters the build of `registration`: refuses a cycle or too deep a nesting, then
    /// pushes it on the build stack.
    @inline(__always)
    mutating func enter(_ registration: Unmanaged<Registration>) throws(PlugboardError) {
        if depth > 0 { try checkNesting(registration) }
        stack[depth] = registration
        depth += 1
    }

    /// Leaves the build entered last; when the outermost build ends, releases what was
    /// deferred.
    @inline(__always)
    mutating func leave() {
        depth -= 1
        if depth == 0 && !deferred.isEmpty { releaseDeferred() }
    }

    @inline(never)
    mutating func releaseDeferred() {
        let list = deferred
        deferred = []
        for s in list { s.release() }
    }

    @inline(never)
    private func checkNesting(_ registration: Unmanaged<Registration>) throws(PlugboardError) {
        let reg = registration.takeUnretainedValue()
        if let path = cyclePath(to: reg) { throw Container.cycleError(path) }
        guard depth < Self.maxDepth else {
            let path = buildPath.map(\.displayName)
            throw PlugboardError(.resolutionTooDeep,
                "resolution of \(reg.displayName) is nested more than \(Self.maxDepth) levels deep",
                detail: "Path: ... -> \(path.suffix(6).joined(separator: " -> ")) -> \(reg.displayName).",
                hint: "Break the chain of services that resolve each other in their factories.")
        }
    }

    /// Whether `registration` is being built by this thread, and the path from its first
    /// appearance if so.
    func cyclePath(to registration: Registration) -> [Registration]? {
        for i in 0..<depth where stack[i].toOpaque() == Unmanaged.passUnretained(registration).toOpaque() {
            return (i..<depth).map { stack[$0].takeUnretainedValue() } + [registration]
        }
        return nil
    }

    var buildPath: [Registration] { (0..<depth).map { stack[$0].takeUnretainedValue() } }
}

/// A pthread key whose destructor releases a thread's ``ThreadState``.
///
/// `@unchecked Sendable`: the key is created once in `init` and only read after.
final class PThreadKey: @unchecked Sendable {
    let value: pthread_key_t

    init() {
        var k = pthread_key_t()
        pthread_key_create(&k) { raw in
            if let raw { ThreadState.destroy(raw) }
        }
        value = k
    }
}
