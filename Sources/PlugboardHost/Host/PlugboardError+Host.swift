import PlugboardAPI

// The host's own codes (`host.*`); docs/ERRORS.md lists each, with what to do.
extension PlugboardError.Code {
    /// A plugin the manifest marks `required` is not active.
    public static let requiredPluginFailed: Self = "host.required_plugin_failed"
    /// No active plugin provides `ObjectStorage` in this environment: the CLI's storage
    /// commands exit 1, the HTTP API's object routes answer 503.
    public static let noStorage: Self = "host.no_storage"
}
