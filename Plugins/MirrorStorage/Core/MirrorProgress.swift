import PlugboardConcurrency

/// The copier's counters since this mirror started (the checkpoint carries the totals of
/// earlier runs), read by `/metrics`, the log and the tests.
public struct MirrorProgress: Sendable, Hashable {
    /// Objects of the old backend looked at.
    public var examined = 0
    /// Objects copied to the new backend.
    public var copied = 0
    /// Bytes copied.
    public var bytesCopied = 0
    /// Objects not copied: the new backend had them (same ETag, or newer), a client wrote
    /// or deleted them, or they were gone from the old backend when their turn came.
    public var skipped = 0
    /// Objects whose copy failed; a pass with failures is followed by another.
    public var failed = 0
    /// Passes over the old backend begun.
    public var passes = 0
    /// Every object of the old backend is in the new one: the old backend can be dropped.
    public var finished = false
    /// Objects examined in earlier runs, read from the checkpoint.
    public var examinedBefore = 0

    public init() {}
}

/// The live counters, shared by the copier's workers.
final class ProgressCounter: Sendable {
    private let box = LockedValueBox(MirrorProgress())

    var snapshot: MirrorProgress { box.withLock { $0 } }

    func update(_ body: (inout MirrorProgress) -> Void) {
        box.withLock { body(&$0) }
    }
}
