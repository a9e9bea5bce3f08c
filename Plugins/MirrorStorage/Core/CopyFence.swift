import PlugboardConcurrency

/// Keeps the copier from writing over a client's write or bringing back a client's delete.
///
/// The rule: once a client has begun a put or a delete of a key through the mirror, the
/// copier never copies that key again (the client's write reaches both backends, so there
/// is nothing left to move); and while the copier copies a key, a client's write of that
/// key waits for the copy to end, then overwrites or deletes it in both. So every key ends
/// as the last client write left it, whatever the interleaving. Keys are compared by their
/// UTF-8 bytes, as `ObjectStorage` compares them.
///
/// One fence per migration in the process (``shared(_:)``), shared by every generation of
/// the mirror: during a hot swap the retiring generation's copier and requests and the new
/// one's meet in it. A build of the plugin from another file has its own copy of this code
/// and so its own fence; for that case, and for a preflight child's copier, the copier also
/// writes with a condition (what it saw in the new backend) and waits before its first copy.
final class CopyFence: Sendable {
    private struct State {
        var written: Set<[UInt8]> = []
        var copying: [[UInt8]: [CheckedContinuation<Void, Never>]] = [:]
        /// The copier has finished: nothing needs fencing, and `written` is let go.
        var open = false
    }

    private let state = LockedValueBox(State())

    private static let migrations = LockedValueBox<[String: CopyFence]>([:])

    /// The fence of the migration `id` (the mirror's name, both backends' and its checkpoint).
    static func shared(_ id: String) -> CopyFence {
        migrations.withLock { all in
            if let fence = all[id] { return fence }
            let fence = CopyFence()
            all[id] = fence
            return fence
        }
    }

    /// A client is about to write or delete `key`: marks it, and waits while the copier
    /// copies it.
    func clientWrites(_ key: String) async {
        let k = Array(key.utf8)
        if state.withLock({ $0.open }) { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { st -> Bool in
                guard !st.open else { return true }
                st.written.insert(k)
                guard st.copying[k] != nil else { return true }
                st.copying[k]!.append(c)
                return false
            }
            if ready { c.resume() }
        }
    }

    /// The copier asks to copy `key`: false when a client has written it since the start;
    /// otherwise the copier owns the key until ``endCopy(_:)``.
    func beginCopy(_ key: String) -> Bool {
        let k = Array(key.utf8)
        return state.withLock { st in
            guard !st.written.contains(k), st.copying[k] == nil else { return false }
            st.copying[k] = []
            return true
        }
    }

    func endCopy(_ key: String) {
        let k = Array(key.utf8)
        let waiting = state.withLock { $0.copying.removeValue(forKey: k) ?? [] }
        for c in waiting { c.resume() }
    }

    /// The copier has moved everything: from now on writes need no fence.
    func open() {
        state.withLock { st in
            st.open = true
            st.written = []
        }
    }

    /// Keys written by clients since the start, for the log and the tests.
    var writtenCount: Int { state.withLock { $0.written.count } }
}
