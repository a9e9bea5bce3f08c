extension PluginRegistrar {
    /// Says what the HTTP front ends answer for the plugin's own error codes: the status,
    /// and S3's error code on the S3 endpoint (PlugboardAPI 1.6). A code left out is
    /// answered 500, as before.
    ///
    /// ```swift
    /// try registrar.mapErrors(["quota.exceeded": .init(status: 403, s3Code: "QuotaExceeded")])
    /// ```
    ///
    /// Each mapping is a registration of the plugin's (`PlugboardError.Mapping`, named by
    /// the code), so it is published with the plugin's services, replaced by a reload
    /// that changes it and gone with a retired plugin. When two plugins map one code, the
    /// higher rank wins, as for any service.
    ///
    /// - Throws: `plugin.error_mapping_invalid` for a code in a reserved area, a status
    ///   outside ``PlugboardError/Mapping/allowedStatuses`` or a malformed S3 code,
    ///   before anything is registered; `container.duplicate_registration` at commit for
    ///   a code mapped twice.
    public func mapErrors(_ mappings: [PlugboardError.Code: PlugboardError.Mapping]) throws(PlugboardError) {
        // In code order, so that the same table always reports the same first refusal.
        let ordered = mappings.sorted { $0.key.rawValue < $1.key.rawValue }
        for (code, mapping) in ordered { try PlugboardError.Mapping.check(mapping, for: code) }
        for (code, mapping) in ordered {
            try register(PlugboardError.Mapping.self, name: code.rawValue, instance: mapping)
        }
    }
}
