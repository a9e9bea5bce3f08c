import PlugboardAPI

// The loader's refusals, in the order it checks (docs/ERRORS.md, "loader").
extension PlugboardError.Code {
    /// The plugin file does not exist.
    public static let pluginFileNotFound: Self = "loader.file_not_found"
    /// The plugin file exists but cannot be read.
    public static let pluginFileUnreadable: Self = "loader.file_unreadable"
    /// The path is not a regular file (a folder, a device...).
    public static let notRegularFile: Self = "loader.not_regular_file"
    /// The file, or its folder, can be changed by other users.
    public static let insecurePermissions: Self = "loader.insecure_permissions"
    /// The file's SHA-256 differs from the manifest's pin.
    public static let checksumMismatch: Self = "loader.checksum_mismatch"
    /// The trust section requires signatures and the plugin's entry has none.
    public static let signatureMissing: Self = "loader.signature_missing"
    /// The plugin's signature names a key the trust section does not list.
    public static let signatureUntrusted: Self = "loader.signature_untrusted"
    /// The plugin's signature does not verify for its name and its file's SHA-256.
    public static let signatureInvalid: Self = "loader.signature_invalid"
    /// The file is larger than the loader accepts.
    public static let fileTooLarge: Self = "loader.file_too_large"
    /// The file is not an ELF file at all.
    public static let notELF: Self = "loader.not_elf"
    /// The ELF file is cut short or its tables point outside it.
    public static let truncatedELF: Self = "loader.truncated_elf"
    /// The ELF file is for another class, byte order or machine.
    public static let wrongArchitecture: Self = "loader.wrong_architecture"
    /// The ELF file is not a shared object.
    public static let notSharedObject: Self = "loader.not_shared_object"
    /// The shared object has no `plugboard_header` section.
    public static let headerMissing: Self = "plugin.header_missing"
    /// Another compiler built the shared object.
    public static let toolchainMismatch: Self = "plugin.toolchain_mismatch"
    /// The content-addressed cache could not be written.
    public static let cacheFailed: Self = "loader.cache_failed"
    /// The cache folder, or one above it, can be changed by another user.
    public static let cacheUntrusted: Self = "loader.cache_untrusted"
    /// No `--cache-dir`, and neither `HOME` nor `XDG_CACHE_HOME` names a folder.
    public static let cacheDirectoryUnset: Self = "loader.cache_dir_unset"
    /// `dlopen` refused the shared object.
    public static let dlopenFailed: Self = "loader.dlopen_failed"
    /// The shared object has no `plugboard_plugin_entry` symbol.
    public static let entryPointMissing: Self = "plugin.entry_point_missing"
    /// A `product` plugin was not found in any plugin folder.
    public static let productNotFound: Self = "loader.product_not_found"
}

// A remote `source`'s store, on a cache miss (docs/ERRORS.md, "loader").
extension PlugboardError.Code {
    /// Nothing answered: the store refused the connection, timed out or dropped it.
    public static let sourceUnreachable: Self = "loader.source_unreachable"
    /// The store answered 401 or 403: the credentials are missing, wrong or not allowed to read.
    public static let sourceDenied: Self = "loader.source_denied"
    /// The store answered 404: no object under that bucket and key, or at that URL.
    public static let sourceNotFound: Self = "loader.source_not_found"
    /// The store answered with its own failure (5xx after the retries) or another status.
    public static let sourceFailed: Self = "loader.source_failed"
    /// No AWS credentials for an `s3://` source, or a source this host cannot fetch.
    public static let sourceUnsupported: Self = "loader.source_unsupported"
}

extension PlugboardError.Code {
    /// A plugin `requires` another that is not active.
    public static let requirementUnavailable: Self = "loader.requirement_unavailable"
    /// A warning, not a refusal: a newer build of the loaded file sits in the same build
    /// folder (``StaleBuild``), so the plugin loaded is not the one last built.
    public static let newerBuildBeside: Self = "loader.newer_build_beside"
}
