import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// Helpers shared by the JSON and manifest tests.
enum ManifestTestSupport {
    /// Parses `text` as JSON named `t.json`.
    static func parseJSON(_ text: String, limits: JSONParser.Limits = .init()) throws(PlugboardError) -> JSONValue {
        try JSONParser.parse(Array(text.utf8), source: "t.json", limits: limits)
    }

    /// The error parsing `bytes` as JSON throws, or nil.
    static func jsonError(_ bytes: [UInt8], limits: JSONParser.Limits = .init()) -> PlugboardError? {
        do {
            _ = try JSONParser.parse(bytes, source: "t.json", limits: limits)
            return nil
        } catch {
            return error
        }
    }

    /// The error parsing `text` as JSON throws, or nil.
    static func jsonError(_ text: String, limits: JSONParser.Limits = .init()) -> PlugboardError? {
        jsonError(Array(text.utf8), limits: limits)
    }

    /// Parses `text` as a manifest at `/srv/app/plugins.json`.
    static func manifest(_ text: String, path: String = "/srv/app/plugins.json") throws(PlugboardError) -> Manifest {
        try Manifest.parse(bytes: Array(text.utf8), path: path)
    }

    /// The error parsing `text` as a manifest throws, or nil.
    static func manifestError(_ text: String) -> PlugboardError? {
        do {
            _ = try manifest(text, path: "plugins.json")
            return nil
        } catch {
            return error
        }
    }

    /// The `line:column` that starts an error message after the file name, or nil.
    static func location(of error: PlugboardError?, source: String) -> String? {
        guard let message = error?.message, message.hasPrefix(source + ":") else { return nil }
        let rest = message.dropFirst(source.count + 1)
        let parts = rest.split(separator: ":", maxSplits: 2)
        guard parts.count >= 2, Int(parts[0]) != nil, Int(parts[1]) != nil else { return nil }
        return "\(parts[0]):\(parts[1])"
    }
}
