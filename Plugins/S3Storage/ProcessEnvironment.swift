/// Where S3Storage reads environment variables and the home folder: the host's process
/// environment, as the registrar hands it over (``PluginRegistrar/processEnvironment``),
/// or a fixed table in tests. Never `getenv`: the host decides what a plugin sees.
struct ProcessEnvironment: Sendable {
    private let values: [String: String]

    init(_ values: [String: String]) { self.values = values }

    /// The variable's value; unset and empty both give nil, as AWS SDKs treat them.
    subscript(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }
}
