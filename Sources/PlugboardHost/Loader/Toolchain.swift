#if canImport(Glibc)
import Glibc
#endif

/// The compiler that built a shared object, as its `.comment` section names it.
///
/// Every Swift-built object carries `clang version 21.0.0 (https://github.com/swiftlang/
/// llvm-project.git <commit>)`; a C file built with the toolchain's own `clang` carries the
/// same line, one built with `gcc` does not. Swift has no stable ABI on Linux, so a plugin
/// must come from the host's own toolchain (docs/ARCHITECTURE.md, fact 7).
enum Toolchain {
    /// The line that identifies a Swift toolchain, or nil if none does.
    static func identify(_ comments: [String]) -> String? {
        comments.first { $0.contains("clang version") && $0.contains("swiftlang") }
    }

    /// The toolchain of this process's libPlugboardAPI.so (read once from its file).
    static let host: String? = {
        guard let path = loadedPath(of: "libPlugboardAPI.so") else { return nil }
        return identify(ELFImage.comments(ofFileAt: path))
    }()

    /// The path of a loaded library, from `/proc/self/maps`.
    static func loadedPath(of name: String) -> String? {
        guard let f = fopen("/proc/self/maps", "r") else { return nil }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let slash = text.firstIndex(of: "/") else { continue }
            let path = text[slash...].trimmingSuffix("\n")
            if path.hasSuffix("/" + name) { return String(path) }
        }
        return nil
    }
}

extension Substring {
    func trimmingSuffix(_ s: String) -> Substring { hasSuffix(s) ? dropLast(s.count) : self }
}
