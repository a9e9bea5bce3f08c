#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where S3Storage reads environment variables and the home folder: the process's own
/// (the registrar gives plugins no environment of their own), or a fixed table in tests.
struct ProcessEnvironment: Sendable {
    private let lookup: @Sendable (String) -> String?

    init(_ lookup: @escaping @Sendable (String) -> String?) { self.lookup = lookup }

    /// A fixed table, for tests.
    init(_ values: [String: String]) { self.init { values[$0] } }

    /// The process's environment, read with `getenv` when asked.
    static let process = ProcessEnvironment { name in
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// The variable's value; unset and empty both give nil, as AWS SDKs treat them.
    subscript(_ name: String) -> String? {
        guard let value = lookup(name), !value.isEmpty else { return nil }
        return value
    }
}
