import PlugboardAPI

/// A fleet's place in etcd, as `serve --fleet` and `plugboard fleet` take it:
/// `etcd://HOST:PORT[,HOST:PORT...]/PREFIX`.
///
/// Each member's client address is listed (an IPv6 address in brackets, `[::1]:2379`; a
/// missing port is etcd's 2379). The prefix is required, since every key of the fleet
/// lives under it; it is kept with one leading `/` and no trailing one, so
/// `etcd://h:2379/fleet/` and `etcd://h:2379//fleet` name the same fleet as
/// `etcd://h:2379/fleet`.
public struct EtcdClusterURL: Sendable, Hashable, CustomStringConvertible {
    /// The members, in the order written, each once.
    public var endpoints: [EtcdEndpoint]
    /// Where the fleet's keys are: `/fleet`, never ending in `/`.
    public var prefix: String

    /// A URL from its parts; `prefix` as ``parse(_:)`` leaves it (`/fleet`).
    public init(endpoints: [EtcdEndpoint], prefix: String) {
        self.endpoints = endpoints
        self.prefix = prefix
    }

    /// The URL in its normal form.
    public var description: String {
        "etcd://" + endpoints.map(\.description).joined(separator: ",") + prefix
    }

    /// etcd's client port, for an address written without one.
    public static let defaultPort = 2379

    /// Reads `etcd://HOST:PORT[,HOST:PORT...]/PREFIX`.
    ///
    /// - Throws: `fleet.url_invalid`, naming what was expected and what was found.
    public static func parse(_ text: String) throws(PlugboardError) -> EtcdClusterURL {
        let scheme = "etcd://"
        guard text.lowercased().hasPrefix(scheme) else {
            throw invalid(text, "a URL starting with \"etcd://\"", "\"\(text.prefix(20))\"")
        }
        let rest = text.dropFirst(scheme.count)
        guard let slash = rest.firstIndex(of: "/") else {
            throw invalid(text, "a prefix after the endpoints (etcd://HOST:PORT/PREFIX)", "none")
        }
        let authority = rest[..<slash]
        let prefix = rest[slash...].split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        guard !prefix.isEmpty else {
            throw invalid(text, "a prefix after the endpoints (etcd://HOST:PORT/PREFIX)", "an empty one")
        }
        guard !prefix.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } == true }) else {
            throw invalid(text, "a prefix without spaces or control characters", "\"/\(prefix.prefix(40))\"")
        }
        guard !authority.isEmpty else {
            throw invalid(text, "at least one HOST:PORT", "none")
        }
        var endpoints: [EtcdEndpoint] = []
        for item in authority.split(separator: ",", omittingEmptySubsequences: false) {
            let endpoint = try Self.endpoint(item, in: text)
            if !endpoints.contains(endpoint) { endpoints.append(endpoint) }
        }
        return EtcdClusterURL(endpoints: endpoints, prefix: "/" + prefix)
    }

    private static func endpoint(_ item: Substring, in text: String) throws(PlugboardError) -> EtcdEndpoint {
        let host: Substring
        let port: Substring?
        if item.hasPrefix("[") {
            guard let close = item.firstIndex(of: "]") else {
                throw invalid(text, "an IPv6 address closed by \"]\"", "\"\(item)\"")
            }
            host = item[item.index(after: item.startIndex)..<close]
            let after = item[item.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw invalid(text, "\":PORT\" after \"]\"", "\"\(after)\"")
            }
            port = after.isEmpty ? nil : after.dropFirst()
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw invalid(text, "an IPv6 address inside brackets", "\"\(host)\"")
            }
        } else {
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else {
                throw invalid(text, "HOST:PORT (an IPv6 address in brackets, [::1]:2379)", "\"\(item)\"")
            }
            host = parts[0]
            port = parts.count == 2 ? parts[1] : nil
            guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else {
                throw invalid(text, "a host name or address before the port", "\"\(host)\" in \"\(item)\"")
            }
        }
        var number = defaultPort
        if let port {
            guard let parsed = Int(port), port.allSatisfy(\.isASCII), (1...65535).contains(parsed) else {
                throw invalid(text, "a port from 1 to 65535", "\"\(port)\"")
            }
            number = parsed
        }
        return EtcdEndpoint(host: String(host), port: number)
    }

    private static func invalid(_ text: String, _ expected: String, _ found: String) -> PlugboardError {
        PlugboardError(.fleetURLInvalid, "invalid fleet URL \"\(text.prefix(200))\"",
            detail: "Expected \(expected), found \(found).",
            hint: "Write etcd://HOST:PORT[,HOST:PORT...]/PREFIX, for example etcd://127.0.0.1:2379,127.0.0.1:22379/plugboard.")
    }
}
