import PlugboardAPI

// The codes raised while reading a manifest. Every one is an error in the manifest itself,
// so the CLI exits with status 2 for each (`code.area == "manifest"`); they are listed in
// docs/ERRORS.md, section "manifest". Keep the two in step. The four the JSON parser
// raises (manifest.syntax, duplicate_key, too_large, too_deep) are PlugboardJSON's.

extension PlugboardError.Code {
    /// The manifest file does not exist.
    public static let manifestNotFound: Self = "manifest.not_found"
    /// The manifest file exists but cannot be read (permissions, a folder, an I/O error).
    public static let manifestUnreadable: Self = "manifest.unreadable"
    /// `schemaVersion` names a version this host does not read.
    public static let manifestUnsupportedVersion: Self = "manifest.unsupported_version"
    /// A required key is missing.
    public static let manifestMissingKey: Self = "manifest.missing_key"
    /// A key the manifest format does not define.
    public static let manifestUnknownKey: Self = "manifest.unknown_key"
    /// A value of the wrong JSON type.
    public static let manifestWrongType: Self = "manifest.wrong_type"
    /// A value of the right type that is not allowed (an empty name, a bad `sha256`, an
    /// environment name that does not exist, a negative timeout, a malformed `${...}`).
    public static let manifestInvalidValue: Self = "manifest.invalid_value"
    /// Two keys that exclude each other are both present (`path` and `product`).
    public static let manifestConflictingKeys: Self = "manifest.conflicting_keys"
    /// Two plugins have the same name.
    public static let manifestDuplicatePlugin: Self = "manifest.duplicate_plugin"
    /// `requires` names a plugin that is not in the manifest.
    public static let manifestUnknownRequirement: Self = "manifest.unknown_requirement"
    /// Plugins require each other in a cycle.
    public static let manifestRequirementCycle: Self = "manifest.requirement_cycle"
    /// A plugin's `wraps` names a plugin that is not in the manifest.
    public static let manifestUnknownLayerTarget: Self = "manifest.unknown_layer_target"
    /// A plugin's `wraps` names the plugin itself.
    public static let manifestLayerWrapsItself: Self = "manifest.layer_wraps_itself"
    /// A `${VAR}` in the config of a plugin selected for the environment names a variable
    /// that is not set and has no default.
    public static let manifestMissingVariable: Self = "manifest.missing_variable"
    /// Expanding the `${VAR}`s of the selected plugins' configs would produce more than
    /// 16 MiB of text for the whole manifest.
    public static let manifestExpansionTooLarge: Self = "manifest.expansion_too_large"
}
