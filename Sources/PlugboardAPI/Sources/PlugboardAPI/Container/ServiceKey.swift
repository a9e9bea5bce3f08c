/// What a registration answers to: a service type and an optional name.
struct ServiceKey: Hashable, Sendable {
    let type: ObjectIdentifier
    let name: String?
}

/// A metatype carried across threads. Metatypes are immutable process-wide constants.
struct ServiceType: @unchecked Sendable {
    let type: any Any.Type

    /// The module-qualified name, `PlugboardAPI.ObjectStorage`, for diagnostics only:
    /// demangling is slow, so nothing on the resolve path calls this.
    var displayName: String { Self.displayName(of: type) }

    static func displayName(of type: any Any.Type) -> String {
        // `_typeName` gives the same text as `String(reflecting:)` without the
        // conformance lookups that `String(reflecting:)` makes (CustomDebugStringConvertible
        // and friends), which rescan every loaded image after each plugin load.
        let name = _typeName(type, qualified: true)
        return name.hasPrefix("any ") ? String(name.dropFirst(4)) : name
    }
}
