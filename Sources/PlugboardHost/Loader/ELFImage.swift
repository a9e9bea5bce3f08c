#if canImport(Glibc)
import Glibc
#endif

/// What the loader reads from a shared object's bytes before it is ever mapped: the ELF
/// header, the section table, the dynamic section's NEEDED names, and the contents of
/// named sections (`plugboard_header`, `.comment`).
///
/// Every offset, size and count comes from an untrusted file. Each one goes through
/// ``ELFImage/range(offset:size:within:)`` (overflow-checked, against the real length)
/// before any byte is touched, so a truncated or hostile file gives an error, never a
/// trap. This is the only ELF parser of the host: the toolchain check of the host's own
/// library uses it too, through a source that reads the file piecewise.
struct ELFImage {
    let elfClass: UInt8
    let dataEncoding: UInt8
    let type: UInt16
    let machine: UInt16
    let sections: [Section]
    private let source: any ELFByteSource

    struct Section {
        let name: String
        let type: UInt32
        /// Where its content lies in the file; empty for a section that occupies none.
        let range: Range<Int>
        let link: Int

        var offset: Int { range.lowerBound }
        var size: Int { range.count }
    }

    enum Failure: Error, Equatable {
        case notELF
        /// A sentence naming what was expected and what the file holds.
        case truncated(String)
        case unsupportedClass(UInt8)
        case unsupportedEncoding(UInt8)
    }

    static let classNames: [UInt8: String] = [1: "32-bit", 2: "64-bit"]
    static let typeNames: [UInt16: String] = [1: "relocatable object", 2: "executable", 3: "shared object", 4: "core dump"]
    static let machineNames: [UInt16: String] = [3: "x86", 40: "ARM", 62: "x86-64", 183: "AArch64", 243: "RISC-V", 21: "PowerPC64", 22: "S390"]

    /// The machine this process runs on, as an ELF `e_machine`.
    static var hostMachine: UInt16 {
        #if arch(x86_64)
        return 62
        #elseif arch(arm64)
        return 183
        #else
        return 0
        #endif
    }

    private static let headerSize = 64
    private static let sectionHeaderSize = 64
    /// SHT_NOBITS occupies no file space: its offset and size describe memory.
    private static let noBits: UInt32 = 8
    private static let dynamicType: UInt32 = 6

    init(bytes: [UInt8]) throws(Failure) {
        try self.init(source: InMemoryELFBytes(bytes: bytes))
    }

    init(source: any ELFByteSource) throws(Failure) {
        self.source = source
        let length = source.count
        guard length >= 4, let magic = source.bytes(in: 0..<4), magic.elementsEqual([0x7F, 0x45, 0x4C, 0x46]) else {
            throw .notELF
        }
        guard length >= Self.headerSize, let header = source.bytes(in: 0..<Self.headerSize) else {
            throw .truncated("Expected at least the \(Self.headerSize) bytes of a 64-bit ELF header, found a file of \(length) bytes.")
        }
        let h = LittleEndianFields(header)
        elfClass = h.u8(4)
        dataEncoding = h.u8(5)
        guard elfClass == 2 else { throw .unsupportedClass(elfClass) }
        guard dataEncoding == 1 else { throw .unsupportedEncoding(dataEncoding) }
        type = h.u16(16)
        machine = h.u16(18)
        let shoff = h.u64(0x28), shentsize = h.u16(0x3A), shnum = h.u16(0x3C), shstrndx = h.u16(0x3E)

        guard shnum > 0 else { sections = []; return }
        guard Int(shentsize) >= Self.sectionHeaderSize else {
            throw .truncated("Expected section headers of at least \(Self.sectionHeaderSize) bytes, found \(shentsize).")
        }
        let (tableSize, tooLarge) = UInt64(shentsize).multipliedReportingOverflow(by: UInt64(shnum))
        guard !tooLarge, let tableRange = Self.range(offset: shoff, size: tableSize, within: length),
              let table = source.bytes(in: tableRange) else {
            throw .truncated("Expected the section table (\(shnum) headers of \(shentsize) bytes at offset \(shoff)) within the file's \(length) bytes, found it reaching beyond the end.")
        }
        struct Raw { let name: UInt32; let type: UInt32; let offset: UInt64; let size: UInt64; let link: UInt32 }
        var raws: [Raw] = []
        raws.reserveCapacity(Int(shnum))
        for i in 0..<Int(shnum) {
            // Inside the table by construction: i < shnum and every field ends within 64 bytes.
            let entry = LittleEndianFields(table.dropFirst(i * Int(shentsize)).prefix(Self.sectionHeaderSize))
            raws.append(Raw(name: entry.u32(0), type: entry.u32(4), offset: entry.u64(0x18),
                            size: entry.u64(0x20), link: entry.u32(0x28)))
        }
        func fileRange(_ raw: Raw, _ what: @autoclosure () -> String) throws(Failure) -> Range<Int> {
            guard raw.type != Self.noBits else { return 0..<0 }
            guard let range = Self.range(offset: raw.offset, size: raw.size, within: length) else {
                throw .truncated("Expected \(what()) within the file's \(length) bytes, found \(raw.size) bytes at offset \(raw.offset).")
            }
            return range
        }
        guard Int(shstrndx) < raws.count else {
            throw .truncated("Expected the section name table's index below the \(raws.count) sections, found \(shstrndx).")
        }
        let nameTable = source.bytes(in: try fileRange(raws[Int(shstrndx)], "the section name table")) ?? []
        var out: [Section] = []
        out.reserveCapacity(raws.count)
        for (i, raw) in raws.enumerated() {
            let name = Self.cString(nameTable, at: Int(raw.name)) ?? ""
            let range = try fileRange(raw, "section \(i) \"\(name)\"")
            out.append(Section(name: name, type: raw.type, range: range, link: Int(raw.link)))
        }
        sections = out
    }

    /// The bytes of the first section named `name`, or nil.
    func section(named name: String) -> ArraySlice<UInt8>? {
        guard let s = sections.first(where: { $0.name == name }) else { return nil }
        return source.bytes(in: s.range)
    }

    /// The NUL-separated strings of `.comment`, which name the compilers that built it.
    var comments: [String] {
        guard let data = section(named: ".comment") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The `DT_NEEDED` names of the dynamic section.
    var neededLibraries: [String] {
        guard let dynamic = sections.first(where: { $0.type == Self.dynamicType }), dynamic.link < sections.count,
              let entries = source.bytes(in: dynamic.range) else { return [] }
        let strings = source.bytes(in: sections[dynamic.link].range) ?? []
        var out: [String] = []
        var at = 0
        while entries.count - at >= 16 {
            let entry = LittleEndianFields(entries.dropFirst(at).prefix(16))
            let tag = entry.u64(0), value = entry.u64(8)
            if tag == 0 { break }
            if tag == 1, let offset = Int(exactly: value), let name = Self.cString(strings, at: offset) {
                out.append(name)
            }
            at += 16
        }
        return out
    }

    var className: String { Self.classNames[elfClass] ?? "class \(elfClass)" }
    var machineName: String { Self.machineName(machine) }
    static func machineName(_ m: UInt16) -> String { machineNames[m] ?? "machine \(m)" }
    var typeName: String { Self.typeNames[type] ?? "type \(type)" }

    // MARK: - Bounds

    /// `offset..<offset+size` if it lies within `length` bytes; nil when either number
    /// is beyond `Int` or their sum overflows.
    static func range(offset: UInt64, size: UInt64, within length: Int) -> Range<Int>? {
        guard let start = Int(exactly: offset), let count = Int(exactly: size) else { return nil }
        let (end, overflow) = start.addingReportingOverflow(count)
        guard !overflow, end <= length else { return nil }
        return start..<end
    }

    private static func cString(_ b: ArraySlice<UInt8>, at offset: Int) -> String? {
        guard offset >= 0, offset < b.count else { return nil }
        let text = b.dropFirst(offset).prefix { $0 != 0 }
        return String(decoding: text, as: UTF8.self)
    }
}

extension ELFImage {
    /// The `.comment` strings of an ELF file, reading only its headers and the sections
    /// it needs (the host's library is megabytes; its comment is a hundred bytes). Empty
    /// for a file that cannot be read or is no valid ELF file.
    static func comments(ofFileAt path: String) -> [String] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG,
              let image = try? ELFImage(source: FileELFBytes(fd: fd, count: Int(st.st_size))) else { return [] }
        return image.comments
    }
}

/// Bytes an ``ELFImage`` reads. `bytes(in:)` gives nil rather than trapping for a range
/// outside the source, so a mistake in a caller's checks costs an error, not the host.
protocol ELFByteSource {
    var count: Int { get }
    func bytes(in range: Range<Int>) -> ArraySlice<UInt8>?
}

/// A whole file already in memory: a plugin, whose bytes are hashed and copied anyway.
struct InMemoryELFBytes: ELFByteSource {
    let bytes: [UInt8]
    var count: Int { bytes.count }

    func bytes(in range: Range<Int>) -> ArraySlice<UInt8>? {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count else { return nil }
        return bytes[range]
    }
}

/// An open file read with `pread`, piece by piece; valid while its descriptor is open.
struct FileELFBytes: ELFByteSource {
    let fd: Int32
    let count: Int
    /// One read is for a header, a table or a small section; more is a hostile size.
    static let maxRead = 64 << 20

    func bytes(in range: Range<Int>) -> ArraySlice<UInt8>? {
        guard range.lowerBound >= 0, range.upperBound <= count, range.count <= Self.maxRead else { return nil }
        var buffer = [UInt8](repeating: 0, count: range.count)
        var filled = 0
        while filled < buffer.count {
            let n = buffer.withUnsafeMutableBytes { raw in
                raw.baseAddress.map { pread(fd, $0 + filled, raw.count - filled, off_t(range.lowerBound + filled)) } ?? -1
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            filled += n
        }
        return buffer[...]
    }
}

/// Little-endian integers at fixed offsets of a header or table entry; a field that
/// does not fit in the bytes reads as 0 (callers size the bytes so that none is cut).
private struct LittleEndianFields {
    let bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    func u8(_ at: Int) -> UInt8 { UInt8(value(at, 1)) }
    func u16(_ at: Int) -> UInt16 { UInt16(value(at, 2)) }
    func u32(_ at: Int) -> UInt32 { UInt32(value(at, 4)) }
    func u64(_ at: Int) -> UInt64 { value(at, 8) }

    private func value(_ at: Int, _ width: Int) -> UInt64 {
        guard at >= 0, bytes.count - at >= width else { return 0 }
        let start = bytes.startIndex + at
        var v: UInt64 = 0
        for i in (0..<width).reversed() { v = v << 8 | UInt64(bytes[start + i]) }
        return v
    }
}
