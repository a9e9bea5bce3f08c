import PlugboardAPI

/// What a `QuotaStorage` allows, read from its config.
struct QuotaLimits: Sendable {
    /// The most bytes stored through the layer, all objects together.
    var maxBytes: Int
    /// The most objects, or nil for no limit.
    var maxObjects: Int?
    /// The most bytes under each key prefix, longest prefix first; a key counts against
    /// every prefix it starts with.
    var prefixes: [(prefix: String, maxBytes: Int)]

    init(maxBytes: Int, maxObjects: Int? = nil, prefixes: [(prefix: String, maxBytes: Int)] = []) {
        self.maxBytes = maxBytes
        self.maxObjects = maxObjects
        self.prefixes = prefixes.sorted { $0.prefix.utf8.count != $1.prefix.utf8.count ? $0.prefix.utf8.count > $1.prefix.utf8.count : $0.prefix < $1.prefix }
    }

    init(_ config: PluginConfig) throws(PlugboardError) {
        try config.requireOnly(["maxBytes", "maxObjects", "prefixes"])
        let maxBytes = try config.int("maxBytes")
        try Self.checkNotNegative(maxBytes, "maxBytes", config)
        let maxObjects = try config.int("maxObjects", default: -1)
        if config["maxObjects"] != nil && config["maxObjects"] != .null { try Self.checkNotNegative(maxObjects, "maxObjects", config) }
        let table = try config.object("prefixes")
        var prefixes: [(prefix: String, maxBytes: Int)] = []
        for prefix in table.values.keys.sorted() {
            guard !prefix.isEmpty else {
                throw PlugboardError(.configInvalid, "plugin \"\(config.plugin)\": empty prefix in \"\(table.path)\"",
                    detail: "Expected a key prefix such as \"logs/\", found an empty string; the whole store is limited by maxBytes.",
                    hint: "Remove the empty prefix, or use maxBytes for the whole store.")
            }
            let limit = try table.int(prefix)
            try Self.checkNotNegative(limit, prefix, table)
            prefixes.append((prefix, limit))
        }
        self.init(maxBytes: maxBytes, maxObjects: maxObjects < 0 ? nil : maxObjects, prefixes: prefixes)
    }

    private static func checkNotNegative(_ value: Int, _ key: String, _ config: PluginConfig) throws(PlugboardError) {
        guard value < 0 else { return }
        throw PlugboardError(.configInvalid, "plugin \"\(config.plugin)\": \"\(config.path).\(key)\" is negative",
            detail: "Expected a number of bytes or objects, 0 or more, found \(value).",
            hint: "Write a limit of 0 or more.")
    }
}
