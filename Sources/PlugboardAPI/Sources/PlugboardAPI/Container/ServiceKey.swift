/// What a registration answers to: a service type and an optional name.
struct ServiceKey: Hashable, Sendable {
    let type: ObjectIdentifier
    let name: String?

    /// The key of the *static* type `T`, whatever metatype value is passed: values are
    /// stored and read back as `T` (`ValueBox<T>`, `FactoryBox<T>`), so the key must be
    /// `T` too. Keyed by the value, `let t: Base.Type = Derived.self` registered a `Base`
    /// under `Derived`, and `resolve(Derived.self)` read it as a `Derived`. The only
    /// initializer, so that no key can be made from a metatype value.
    init<T>(_: T.Type, name: String?) {
        type = ObjectIdentifier(T.self)
        self.name = name
    }
}

/// A metatype carried across threads. Metatypes are immutable process-wide constants.
struct ServiceType: @unchecked Sendable {
    let type: any Any.Type

    /// The service type `T` of a key, named as ``ServiceKey/init(_:name:)`` keys it.
    static func of<T>(_: T.Type) -> ServiceType { ServiceType(type: T.self) }

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
