/// Where the host runs: `testing`, `development`, `staging` or `production`.
///
/// Plugins see it through their registrar and may behave differently in each (a storage
/// backend might refuse an unencrypted endpoint in production).
public struct Environment: Hashable, Sendable, CustomStringConvertible, Codable {
    public let name: String

    private init(uncheckedName: String) { name = uncheckedName }

    /// Automated tests.
    public static let testing = Environment(uncheckedName: "testing")
    /// A developer's machine; the default.
    public static let development = Environment(uncheckedName: "development")
    /// A pre-production deployment, where hot swap is allowed.
    public static let staging = Environment(uncheckedName: "staging")
    /// Production.
    public static let production = Environment(uncheckedName: "production")

    /// The four environments, in order.
    public static let all: [Environment] = [.testing, .development, .staging, .production]

    /// The environment named `name`, or nil if it is not one of the four.
    public init?(_ name: String) {
        guard let e = Self.all.first(where: { $0.name == name }) else { return nil }
        self = e
    }

    public var description: String { name }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let e = Environment(raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "expected testing, development, staging or production, found \"\(raw)\""))
        }
        self = e
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }
}
