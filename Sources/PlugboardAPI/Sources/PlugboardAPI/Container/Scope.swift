/// How long a service built by a factory lives.
public struct Scope: Hashable, Sendable, CustomStringConvertible {
    enum Kind: UInt8 { case instance, singleton, transient, weak }
    let kind: Kind

    /// A value registered as it is; the container never builds it.
    public static let instance = Scope(kind: .instance)
    /// Built once, on first resolve, exactly once even when many threads race; then shared.
    public static let singleton = Scope(kind: .singleton)
    /// Built anew by every resolve.
    public static let transient = Scope(kind: .transient)
    /// Shared while someone outside the container holds it, rebuilt after it has gone.
    /// The factory must return a class instance.
    public static let weak = Scope(kind: .weak)

    /// `instance`, `singleton`, `transient` or `weak`: the names the CLI and admin API print.
    public var description: String {
        switch kind {
        case .instance: return "instance"
        case .singleton: return "singleton"
        case .transient: return "transient"
        case .weak: return "weak"
        }
    }
}
