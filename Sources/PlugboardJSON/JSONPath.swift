import PlugboardAPI
import PlugboardBytes

/// Where a value sits in a JSON document: `plugins[1].config.root`.
///
/// Keys that are not plain identifiers are written in brackets, `config["log level"]`.
/// The document's root is written `$`; messages say "the top level" instead.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    /// One step from a container to one of its values.
    public enum Component: Sendable, Hashable {
        /// An object member.
        case key(String)
        /// An array element, from 0.
        case index(Int)
    }

    /// The steps from the root, outermost first.
    public let components: [Component]

    /// The document's root value.
    public static let root = JSONPath(components: [])

    /// Creates a path from its steps.
    public init(components: [Component]) { self.components = components }

    /// True for the root.
    public var isRoot: Bool { components.isEmpty }

    /// This path followed by an object key.
    public func appending(key: String) -> JSONPath { JSONPath(components: components + [.key(key)]) }

    /// This path followed by an array index.
    public func appending(index: Int) -> JSONPath { JSONPath(components: components + [.index(index)]) }

    /// `plugins[1].config.root`, or `$` for the root.
    public var description: String {
        if components.isEmpty { return "$" }
        var out = ""
        for component in components {
            switch component {
            case .index(let i):
                out += "[\(i)]"
            case .key(let k) where Self.isIdentifier(k):
                out += out.isEmpty ? k : ".\(k)"
            case .key(let k):
                out += "[" + ConfigValue.string(k).description + "]"
            }
        }
        return out
    }

    /// The path for messages: its description, or `the top level` for the root.
    public var spoken: String { isRoot ? "the top level" : description }

    private static func isIdentifier(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, first == "_" || first == "$" || first.isASCIILetter else {
            return false
        }
        return key.unicodeScalars.allSatisfy { $0 == "_" || $0 == "$" || $0.isASCIILetter || ("0"..."9").contains($0) }
    }
}
