/// Where a plugin's shared library comes from: a file, or a product name.
public enum PluginSource: Sendable, Hashable, CustomStringConvertible {
    /// The manifest's `path`, made absolute against the manifest's folder (`.` components
    /// removed, `..` and symbolic links kept as written).
    case path(String)
    /// The manifest's `product`: `"X"` stands for `libX.so`, which the loader looks for
    /// in the running executable's folder, then in `PLUGBOARD_PLUGIN_PATH`.
    case product(String)

    /// `path "/opt/plugins/libS3.so"` or `product "S3Storage"`.
    public var description: String {
        switch self {
        case .path(let p): return "path \"\(p)\""
        case .product(let p): return "product \"\(p)\""
        }
    }
}
