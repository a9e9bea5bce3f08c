#if canImport(Glibc)
import Glibc
#endif

/// A shared object mapped into the process, for the life of the process.
///
/// There is deliberately no way to unload one: the Swift runtime registers each image's
/// type metadata and conformances in append-only tables, and after an unload the next
/// dynamic cast anywhere in the process would read freed memory (docs/ARCHITECTURE.md, fact 2). A
/// retired or failed plugin stays mapped and inert.
struct DynamicLibrary: @unchecked Sendable {
    // @unchecked Sendable: the handle is an opaque token the loader only passes to dlsym,
    // which is thread-safe.
    let handle: UnsafeMutableRawPointer
    let path: String

    /// `RTLD_NOW` so missing symbols fail here, not at a later call; `RTLD_LOCAL` so one
    /// plugin's symbols never satisfy another's; `RTLD_NODELETE` as a second guard
    /// against unloading.
    static func open(_ path: String) -> Result<DynamicLibrary, DLError> {
        _ = dlerror()
        guard let h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            return .failure(DLError(text: lastError()))
        }
        return .success(DynamicLibrary(handle: h, path: path))
    }

    /// Whether a library is already in the process under `name` (a NEEDED name such as
    /// `libPlugboardAPI.so`). Never loads anything.
    static func isLoaded(_ name: String) -> Bool {
        dlopen(name, RTLD_NOW | RTLD_NOLOAD) != nil
    }

    func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        dlsym(handle, name)
    }

    struct DLError: Error {
        let text: String
    }

    private static func lastError() -> String {
        guard let e = dlerror() else { return "unknown dlopen failure" }
        return String(cString: e)
    }
}
