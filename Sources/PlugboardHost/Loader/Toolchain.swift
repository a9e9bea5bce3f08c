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
        return identify(commentsOfFile(path))
    }()

    /// The `.comment` strings of an ELF file, reading only its headers and that section
    /// (the host's library is megabytes; its comment is a hundred bytes).
    static func commentsOfFile(_ path: String) -> [String] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        func read(_ offset: Int, _ count: Int) -> [UInt8]? {
            guard offset >= 0, count >= 0, count < 1 << 24 else { return nil }
            var buf = [UInt8](repeating: 0, count: count)
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return n == count ? buf : nil
        }
        func u(_ b: [UInt8], _ at: Int, _ size: Int) -> Int {
            (0..<size).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) }
        }
        guard let header = read(0, 64), header.starts(with: [0x7F, 0x45, 0x4C, 0x46]), header[4] == 2 else { return [] }
        let shoff = u(header, 0x28, 8), entsize = u(header, 0x3A, 2), count = u(header, 0x3C, 2), names = u(header, 0x3E, 2)
        guard entsize >= 64, names < count, let table = read(shoff, entsize * count) else { return [] }
        func section(_ i: Int) -> (name: Int, offset: Int, size: Int) {
            (u(table, i * entsize, 4), u(table, i * entsize + 0x18, 8), u(table, i * entsize + 0x20, 8))
        }
        let strtab = section(names)
        guard let nameBytes = read(strtab.offset, strtab.size) else { return [] }
        for i in 0..<count {
            let s = section(i)
            guard s.name < nameBytes.count else { continue }
            let name = nameBytes[s.name...].prefix { $0 != 0 }
            guard name.elementsEqual(".comment".utf8), let data = read(s.offset, s.size) else { continue }
            return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        }
        return []
    }

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
