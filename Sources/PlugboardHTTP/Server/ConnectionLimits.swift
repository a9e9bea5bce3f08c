import PlugboardConcurrency

/// How many connections are open, in all and per client address: the two limits an
/// attacker who can only connect (and send nothing) runs into. The count is taken when a
/// connection is accepted and given back when it is closed, after its descriptor has left
/// its event loop.
final class ConnectionLimits: Sendable {
    let maxConnections: Int
    let maxPerClient: Int

    private struct State {
        var open = 0
        var perClient: [String: Int] = [:]
    }
    private let state = LockedValueBox(State())

    init(maxConnections: Int, maxPerClient: Int) {
        self.maxConnections = maxConnections
        self.maxPerClient = maxPerClient
    }

    enum Refusal { case full, clientFull }

    /// Counts a new connection from `peer`, or says which limit it is over.
    func admit(peer: String) -> Refusal? {
        state.withLock { s in
            guard s.open < maxConnections else { return .full }
            let mine = s.perClient[peer, default: 0]
            guard mine < maxPerClient else { return .clientFull }
            s.open += 1
            s.perClient[peer] = mine + 1
            return nil
        }
    }

    func release(peer: String) {
        state.withLock { s in
            s.open -= 1
            if let n = s.perClient[peer] {
                if n <= 1 { s.perClient.removeValue(forKey: peer) } else { s.perClient[peer] = n - 1 }
            }
        }
    }

    var open: Int { state.withLock { $0.open } }
}
