/// What introspection shows of one registration.
public struct RegistrationInfo: Sendable, Hashable, Codable {
    /// The module-qualified service type, `PlugboardAPI.ObjectStorage`.
    public var service: String
    /// The name, or nil for the unnamed provider.
    public var name: String?
    public var rank: Int
    public var scope: Scope
    /// A plugin's manifest name, or `host`.
    public var owner: String
    /// The module-qualified implementation type, once known (declared, or learned at the
    /// first build).
    public var implementation: String?
    /// The generation that published it.
    public var generation: UInt64
    /// Whether it is the provider resolvers get now (the best of its key).
    public var isActive: Bool
    /// Whether it is a started ``ManagedService``.
    public var isManaged: Bool
    /// For a layer, the owner of the registration of the same key it wraps (the one just
    /// after it in the ranking); nil for a plain provider (PlugboardAPI 1.6).
    public var wraps: String?

    public init(service: String, name: String?, rank: Int, scope: Scope, owner: String,
                implementation: String?, generation: UInt64, isActive: Bool, isManaged: Bool) {
        self.service = service
        self.name = name
        self.rank = rank
        self.scope = scope
        self.owner = owner
        self.implementation = implementation
        self.generation = generation
        self.isActive = isActive
        self.isManaged = isManaged
        self.wraps = nil
    }

    /// With ``wraps`` (PlugboardAPI 1.6).
    public init(service: String, name: String?, rank: Int, scope: Scope, owner: String,
                implementation: String?, generation: UInt64, isActive: Bool, isManaged: Bool, wraps: String?) {
        self.init(service: service, name: name, rank: rank, scope: scope, owner: owner, implementation: implementation,
                  generation: generation, isActive: isActive, isManaged: isManaged)
        self.wraps = wraps
    }
}

extension Scope: Codable {
    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        switch raw {
        case "instance": self = .instance
        case "singleton": self = .singleton
        case "transient": self = .transient
        case "weak": self = .weak
        default:
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "expected instance, singleton, transient or weak, found \"\(raw)\""))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
