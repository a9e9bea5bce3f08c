import PlugboardAPI

extension StorageProvider {
    /// The answer a plugin mapped `code` to (``PluginRegistrar/mapErrors(_:)``), as the
    /// generation current now has it, or nil: the front ends answer such a code 500.
    /// Asked only for a code without an answer of the host's own, on the error path, so
    /// it takes no lease: a mapping changed by a reload applies from its commit.
    public func pluginErrorMapping(for code: PlugboardError.Code) -> PlugboardError.Mapping? {
        PlugboardError.Mapping.registered(for: code, in: container)
    }
}

extension PlugboardError.Mapping {
    /// The headers an answer with this status carries: a 429 or 503 says when to retry,
    /// as `storage.unavailable`'s answers do.
    public var answerHeaders: [(String, String)] {
        status == 429 || status == 503 ? [("Retry-After", "1")] : []
    }
}
