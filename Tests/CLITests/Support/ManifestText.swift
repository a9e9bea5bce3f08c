/// Manifests for the tests, as text.
enum ManifestText {
    /// MemoryStorage, the in-tree plugin, found beside the executable.
    static let memory = #"{"name": "Mem", "product": "MemoryStorage"}"#

    /// A manifest with these plugin objects (JSON text each).
    static func make(_ plugins: [String], environment: String? = nil) -> String {
        var text = "{\n  \"schemaVersion\": 1,\n"
        if let environment { text += "  \"environment\": \"\(environment)\",\n" }
        text += "  \"plugins\": [\n    " + plugins.joined(separator: ",\n    ") + "\n  ]\n}\n"
        return text
    }
}
