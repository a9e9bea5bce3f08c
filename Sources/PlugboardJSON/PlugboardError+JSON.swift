import PlugboardAPI

// The codes JSONParser raises. They keep the `manifest` area, where the parser was first
// used: the CLI exits with status 2 for a manifest that is not JSON, and the codes other
// readers catch (the etcd client, the fleet's records) stay as they were. Listed in
// docs/ERRORS.md, section "manifest"; keep the two in step.

extension PlugboardError.Code {
    /// The manifest is not valid JSON (RFC 8259) or not valid UTF-8.
    public static let manifestSyntax: Self = "manifest.syntax"
    /// A JSON object defines the same key twice.
    public static let manifestDuplicateKey: Self = "manifest.duplicate_key"
    /// The manifest file is larger than the parser accepts.
    public static let manifestTooLarge: Self = "manifest.too_large"
    /// Arrays and objects are nested deeper than the parser accepts.
    public static let manifestTooDeep: Self = "manifest.too_deep"
}
