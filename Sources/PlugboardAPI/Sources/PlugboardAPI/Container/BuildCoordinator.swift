import Synchronization

/// Makes sure each singleton is built exactly once, without holding a lock while its
/// factory runs, and turns a cross-thread dependency cycle into an error instead of a
/// deadlock.
///
/// One process-wide lock and condition guard the build owners of every registration and
/// the wait-for graph (which thread waits for which registration). Builds are rare, one
/// per singleton, so one lock costs nothing that matters. Before a thread waits for a
/// singleton that another thread is building, it follows the graph from that builder: if
/// the chain of "building X, waiting for Y" leads back to itself, waiting would deadlock,
/// and the cycle is reported with its path instead.
final class BuildCoordinator: @unchecked Sendable {
    // @unchecked Sendable: `waiting` and every Registration.buildOwner are only touched
    // with `mutex` held.
    static let shared = BuildCoordinator()

    private let mutex = PThreadMutex()
    /// Thread token -> the registration that thread waits for.
    private var waiting: [UInt64: Registration] = [:]

    enum Claim {
        /// The caller must build it, then call `finish`.
        case build
        /// Someone else built it meanwhile.
        case built
        /// Waiting would deadlock; this is the cycle.
        case cycle([Registration])
    }

    /// Claims the build of `registration` for thread `me`, waiting while another thread
    /// builds it.
    ///
    /// The one place a resolve blocks its thread, on purpose: a singleton is built once,
    /// and a second resolver of it cannot be answered before the first build ends. The
    /// wait lasts as long as that one factory runs (factories must not do slow I/O; start
    /// a managed service for that), happens at most once per singleton and thread, and
    /// never on the read path of a built service, which takes no lock.
    func claim(_ registration: Registration, me: UInt64) -> Claim {
        mutex.lock()
        defer { mutex.unlock() }
        while true {
            if registration.built != nil { return .built }
            let owner = registration.buildOwner
            if owner == 0 {
                registration.buildOwner = me
                return .build
            }
            if owner == me { return .cycle([registration, registration]) }
            if let path = deadlockPath(waitingFor: registration, me: me) { return .cycle(path) }
            waiting[me] = registration
            mutex.wait()
            waiting[me] = nil
        }
    }

    /// Ends the build of `registration`: published on success, free to retry on failure.
    func finish(_ registration: Registration) {
        mutex.lock()
        registration.buildOwner = 0
        mutex.broadcast()
        mutex.unlock()
    }

    /// The cycle that waiting for `target` would close, or nil. `mutex` must be held.
    private func deadlockPath(waitingFor target: Registration, me: UInt64) -> [Registration]? {
        var path = [target]
        var current = target
        // Each step moves to another thread; a path longer than the number of waiting
        // threads cannot be a simple chain, so the walk always ends.
        for _ in 0...waiting.count {
            let builder = current.buildOwner
            if builder == 0 { return nil }
            if builder == me { return path + [target] }
            guard let next = waiting[builder] else { return nil }
            path.append(next)
            current = next
        }
        return nil
    }
}
