/// What the loader reads from a shared object's bytes before it is ever mapped: the ELF
/// header, the section table, the dynamic section's NEEDED names, and the contents of
/// named sections (`plugboard_header`, `.comment`).
///
/// Every offset and size comes from an untrusted file, so every read is bounds-checked:
/// a truncated or hostile file gives an error, never a trap.
struct ELFImage {
    let bytes: [UInt8]
    let elfClass: UInt8
    let dataEncoding: UInt8
    let type: UInt16
    let machine: UInt16
    let sections: [Section]

    struct Section {
        let name: String
        let type: UInt32
        let offset: Int
        let size: Int
        let link: Int
    }

    enum Failure: Error, Equatable {
        case notELF
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

    init(bytes: [UInt8]) throws(Failure) {
        self.bytes = bytes
        guard bytes.count >= 4, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46 else {
            throw .notELF
        }
        guard bytes.count >= 64 else { throw .truncated("the file is \(bytes.count) bytes, shorter than a 64-bit ELF header (64 bytes)") }
        elfClass = bytes[4]
        dataEncoding = bytes[5]
        guard elfClass == 2 else { throw .unsupportedClass(elfClass) }
        guard dataEncoding == 1 else { throw .unsupportedEncoding(dataEncoding) }
        type = Self.u16(bytes, 16) ?? 0
        machine = Self.u16(bytes, 18) ?? 0

        guard let shoff = Self.u64(bytes, 0x28), let shentsize = Self.u16(bytes, 0x3A),
              let shnum = Self.u16(bytes, 0x3C), let shstrndx = Self.u16(bytes, 0x3E) else {
            throw .truncated("the ELF header is incomplete")
        }
        guard shnum > 0 else { sections = []; return }
        guard shentsize >= 64 else { throw .truncated("section headers are \(shentsize) bytes, expected 64") }
        let tableEnd = Self.end(Int(clamping: shoff), Int(shentsize) * Int(shnum))
        guard let tableEnd, tableEnd <= bytes.count else {
            throw .truncated("the section table ends beyond the end of the file (\(bytes.count) bytes)")
        }
        struct Raw { let name: UInt32; let type: UInt32; let offset: UInt64; let size: UInt64; let link: UInt32 }
        var raws: [Raw] = []
        for i in 0..<Int(shnum) {
            let base = Int(shoff) + i * Int(shentsize)
            guard let name = Self.u32(bytes, base), let type = Self.u32(bytes, base + 4),
                  let offset = Self.u64(bytes, base + 0x18), let size = Self.u64(bytes, base + 0x20),
                  let link = Self.u32(bytes, base + 0x28) else { throw .truncated("section header \(i) is incomplete") }
            raws.append(Raw(name: name, type: type, offset: offset, size: size, link: link))
        }
        guard Int(shstrndx) < raws.count else { throw .truncated("the section name table index \(shstrndx) is out of range") }
        let names = raws[Int(shstrndx)]
        var out: [Section] = []
        for raw in raws {
            let name = Self.cString(bytes, start: Int(clamping: names.offset) &+ Int(raw.name),
                                    limit: Self.end(Int(clamping: names.offset), Int(clamping: names.size)) ?? 0) ?? ""
            // SHT_NOBITS (8) occupies no file space: its offset and size describe memory.
            let inFile = raw.type != 8
            let offset = Int(clamping: raw.offset), size = inFile ? Int(clamping: raw.size) : 0
            if inFile, let end = Self.end(offset, size), end > bytes.count {
                throw .truncated("section \"\(name)\" ends at byte \(end), beyond the end of the file (\(bytes.count) bytes)")
            }
            out.append(Section(name: name, type: raw.type, offset: offset, size: size, link: Int(raw.link)))
        }
        sections = out
    }

    /// The bytes of the first section named `name`, or nil.
    func section(named name: String) -> ArraySlice<UInt8>? {
        guard let s = sections.first(where: { $0.name == name }) else { return nil }
        return bytes[s.offset..<(s.offset + s.size)]
    }

    /// The NUL-separated strings of `.comment`, which name the compilers that built it.
    var comments: [String] {
        guard let data = section(named: ".comment") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The `DT_NEEDED` names of the dynamic section.
    var neededLibraries: [String] {
        guard let dynamic = sections.first(where: { $0.type == 6 }), dynamic.link < sections.count else { return [] }
        let strtab = sections[dynamic.link]
        var out: [String] = []
        var at = dynamic.offset
        while at + 16 <= dynamic.offset + dynamic.size {
            guard let tag = Self.u64(bytes, at), let value = Self.u64(bytes, at + 8) else { break }
            if tag == 0 { break }
            if tag == 1, let name = Self.cString(bytes, start: strtab.offset &+ Int(clamping: value),
                                                 limit: strtab.offset + strtab.size) {
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

    // MARK: - Bounds-checked reads

    private static func end(_ offset: Int, _ size: Int) -> Int? {
        let (sum, overflow) = offset.addingReportingOverflow(size)
        return overflow || offset < 0 || size < 0 ? nil : sum
    }

    private static func u16(_ b: [UInt8], _ at: Int) -> UInt16? {
        guard at >= 0, at + 2 <= b.count else { return nil }
        return UInt16(b[at]) | UInt16(b[at + 1]) << 8
    }

    private static func u32(_ b: [UInt8], _ at: Int) -> UInt32? {
        guard at >= 0, at + 4 <= b.count else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) }
    }

    private static func u64(_ b: [UInt8], _ at: Int) -> UInt64? {
        guard at >= 0, at + 8 <= b.count else { return nil }
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
    }

    private static func cString(_ b: [UInt8], start: Int, limit: Int) -> String? {
        guard start >= 0, start < min(limit, b.count) else { return nil }
        var end = start
        while end < min(limit, b.count) && b[end] != 0 { end += 1 }
        return String(decoding: b[start..<end], as: UTF8.self)
    }
}
