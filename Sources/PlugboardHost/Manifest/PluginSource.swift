/// Where a plugin's shared library comes from: a file, a product name, or a store.
public enum PluginSource: Sendable, Hashable, CustomStringConvertible {
    /// The manifest's `path`, made absolute against the manifest's folder (`.` components
    /// removed, `..` and symbolic links kept as written).
    case path(String)
    /// The manifest's `product`: `"X"` stands for `libX.so`, which the loader looks for
    /// in the running executable's folder, then in `PLUGBOARD_PLUGIN_PATH`.
    case product(String)
    /// The manifest's `source`: a file in a store, fetched by its `sha256` into the plugin
    /// cache, which is what the loader then stages.
    case remote(RemoteSource)

    /// `path "/opt/plugins/libS3.so"`, `product "S3Storage"` or `source "s3://b/k.so"`.
    public var description: String {
        switch self {
        case .path(let p): return "path \"\(p)\""
        case .product(let p): return "product \"\(p)\""
        case .remote(let r): return "source \"\(r.shown)\""
        }
    }
}
