#if canImport(Glibc)
import Glibc
#endif

/// The process environment as it is now, as a dictionary.
///
/// The host library never calls it: the `plugboard` executable captures the environment
/// once at start and hands it down (``PluginHost/Configuration/processEnvironment``, and
/// from there to the preflight child and to every plugin's registrar), and so does the
/// test kit for the plugins it loads. The host and the in-tree plugins read no variable
/// themselves; the test kit's own temporary folder follows `TMPDIR`, as tests expect.
public enum ProcessEnvironmentSnapshot {
    public static func capture() -> [String: String] {
        var environment: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let pair = String(cString: pointer)
            if let eq = pair.firstIndex(of: "=") {
                environment[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
            }
            entry += 1
        }
        return environment
    }
}
