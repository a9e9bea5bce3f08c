/// A service that can say whether it works: a storage reaching its bucket, a client
/// reaching its server.
///
/// Optional: a service adopts it when a failure can be found before traffic reaches it.
/// The host calls ``healthCheck()`` on every new service of a hot swap (after managed
/// services start, before the change is published) and in `plugboard check`'s preflight;
/// a throw rolls the change back, so the previous generation keeps serving.
///
/// Added in PlugboardAPI 1.1; plugins built against 1.0 still load and are simply not
/// checked.
///
/// Implementation requirements: answer within a few seconds (the preflight has a timeout),
/// leave no state behind, and throw a ``PlugboardError`` whose message says what failed.
public protocol HealthChecking: Sendable {
    /// Throws when the service cannot do its work.
    func healthCheck() async throws
}
