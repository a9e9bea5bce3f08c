import PlugboardAPI

/// A plugin file read, hashed, checked and copied into the plugin cache, once.
///
/// Everything after staging works from this value and the copy it names: the reload
/// compares ``sha256`` with what runs, the preflight child maps ``loadPath``, and so does
/// the host. No later step reads the plugin's own file again, so the bytes the checks
/// passed are the bytes every process maps, even if the file changes meanwhile. The copy
/// can be trusted without hashing it again because only the cache's owner can change it
/// (``PluginCache``), and both the host and the child refuse a cache anyone else could.
public struct StagedPlugin: Sendable, Equatable {
    /// The manifest entry's name.
    public let name: String
    /// What the checks found in the file (its resolved path, digest, header, toolchain).
    public let inspection: PluginInspection
    /// The copy to `dlopen`: `<cache>/<sha256>.so`, or the plugin's entry in its
    /// `<sha256>.d/` link folder when it needs libraries from beside it.
    public let loadPath: String
    /// The trusted key whose signature the staging verified, or nil for an unsigned plugin
    /// the manifest let through. Set by each staging, a reused one too: the manifest's
    /// trust may have changed since.
    public var signer: TrustedKey?

    /// The SHA-256 of the bytes staged.
    public var sha256: String { inspection.sha256 }

    public init(name: String, inspection: PluginInspection, loadPath: String, signer: TrustedKey? = nil) {
        self.name = name
        self.inspection = inspection
        self.loadPath = loadPath
        self.signer = signer
    }

    /// A copy another process staged (the preflight child is handed the host's): mapped
    /// as it is, without its file's facts, which stay with the host that checked them.
    public init(name: String, stagedCopy loadPath: String, sha256: String) {
        self.init(name: name, inspection: PluginInspection(path: loadPath, sha256: sha256, size: 0, header: nil,
                                                           toolchain: nil, neededLibraries: []),
                  loadPath: loadPath)
    }
}

/// What staging one plugin came to: the staged plugin, or the refusal with the digest of
/// the bytes read before it (nil when the file could not be read), which a reload
/// compares to tell a plugin whose file changed from one merely tried again.
public struct StagingResult: Sendable {
    /// The file staged, as located; nil when it could not be located (a `product` not
    /// found in the search path).
    public var path: String?
    public var sha256: String?
    public var result: Result<StagedPlugin, PlugboardError>

    public var staged: StagedPlugin? {
        if case .success(let s) = result { return s }
        return nil
    }

    public var error: PlugboardError? {
        if case .failure(let e) = result { return e }
        return nil
    }
}
