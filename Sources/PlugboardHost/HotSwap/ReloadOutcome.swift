import PlugboardAPI
import PlugboardJSON

/// How one reload ended.
public struct ReloadOutcome: Sendable {
    public enum Result: String, Sendable {
        /// The change was committed as a new generation (or, when no plugin changed, the
        /// new manifest was adopted without one).
        case applied
        /// The manifest and every plugin file hash to what is running: nothing was done.
        case unchanged
        /// Something failed; the previous generation keeps serving, whole.
        case refused
    }

    public var result: Result
    /// What asked for it: `watch`, `signal`, `admin`.
    public var trigger: String
    /// The generation serving after it.
    public var generation: UInt64
    /// Why it was refused.
    public var error: PlugboardError?
    public var added: [String] = []
    public var changed: [String] = []
    public var removed: [String] = []
    /// Plugins that had failed and were tried again (whether or not they load now).
    public var retried: [String] = []
    public var startedAt: Timestamp
    public var durationSeconds: Double = 0

    public init(result: Result, trigger: String, generation: UInt64, error: PlugboardError? = nil,
                startedAt: Timestamp = .now()) {
        self.result = result
        self.trigger = trigger
        self.generation = generation
        self.error = error
        self.startedAt = startedAt
    }

    /// The outcome as `POST /v1/admin/reload`, `plugboard reload --json` and the
    /// `reload.lastAttempt` member of `/v1/admin/plugins` show it.
    public var json: JSONOutput {
        .object([("result", .string(result.rawValue)), ("trigger", .string(trigger)),
                 ("generation", .int(Int64(generation))), ("time", .string(startedAt.iso8601)),
                 ("durationSeconds", .double(durationSeconds)),
                 ("added", .array(added.map { .string($0) })), ("changed", .array(changed.map { .string($0) })),
                 ("removed", .array(removed.map { .string($0) })), ("retried", .array(retried.map { .string($0) })),
                 ("error", JSONOutput.errorBody(error))])
    }
}
