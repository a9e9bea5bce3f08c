/// Little-endian fields written one after another: the worker protocol's payloads.
/// Lengths are 32-bit; strings are UTF-8.
public struct WireWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    public mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    public mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func i64(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func int(_ value: Int) { i64(Int64(value)) }

    public mutating func data(_ value: some Collection<UInt8>) {
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    public mutating func string(_ value: String) { data(value.utf8) }

    public mutating func optionalString(_ value: String?) {
        bool(value != nil)
        if let value { string(value) }
    }

    public mutating func strings(_ values: [String: String]) {
        u32(UInt32(values.count))
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            string(key)
            string(value)
        }
    }
}

/// Reads what ``WireWriter`` wrote; every read checks the bytes are there, so a short or
/// hostile payload is a ``IPCError`` naming what was expected, never a trap.
public struct WireReader: Sendable {
    private let bytes: [UInt8]
    private var at: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        at = 0
    }

    public var isAtEnd: Bool { at == bytes.count }

    private mutating func take(_ count: Int, _ what: String) throws(IPCError) -> ArraySlice<UInt8> {
        guard count >= 0, bytes.count - at >= count else {
            throw .malformed("expected \(count) bytes of \(what) at offset \(at), found \(bytes.count - at)")
        }
        defer { at += count }
        return bytes[at..<(at + count)]
    }

    public mutating func u8(_ what: String = "a byte") throws(IPCError) -> UInt8 { try take(1, what).first! }

    public mutating func bool(_ what: String = "a flag") throws(IPCError) -> Bool {
        switch try u8(what) {
        case 0: return false
        case 1: return true
        case let other: throw .malformed("expected 0 or 1 for \(what), found \(other)")
        }
    }

    public mutating func u32(_ what: String = "a number") throws(IPCError) -> UInt32 {
        var value: UInt32 = 0
        for (shift, byte) in try take(4, what).enumerated() { value |= UInt32(byte) << (8 * shift) }
        return value
    }

    public mutating func i64(_ what: String = "a number") throws(IPCError) -> Int64 {
        var value: UInt64 = 0
        for (shift, byte) in try take(8, what).enumerated() { value |= UInt64(byte) << (8 * shift) }
        return Int64(bitPattern: value)
    }

    public mutating func int(_ what: String = "a number") throws(IPCError) -> Int {
        let value = try i64(what)
        guard let int = Int(exactly: value) else { throw .malformed("\(what) \(value) does not fit an Int") }
        return int
    }

    public mutating func data(_ what: String = "bytes") throws(IPCError) -> [UInt8] {
        let count = Int(try u32("the length of \(what)"))
        return Array(try take(count, what))
    }

    public mutating func string(_ what: String = "a string") throws(IPCError) -> String {
        let raw = try data(what)
        guard let text = String(validating: raw, as: UTF8.self) else { throw .malformed("\(what) is not UTF-8") }
        return text
    }

    public mutating func optionalString(_ what: String = "a string") throws(IPCError) -> String? {
        try bool("whether \(what) is present") ? try string(what) : nil
    }

    public mutating func strings(_ what: String = "a dictionary") throws(IPCError) -> [String: String] {
        let count = Int(try u32("the size of \(what)"))
        guard count <= bytes.count - at else { throw .malformed("\(what) claims \(count) entries in \(bytes.count - at) bytes") }
        var out: [String: String] = [:]
        for _ in 0..<count {
            let key = try string("a key of \(what)")
            out[key] = try string("a value of \(what)")
        }
        return out
    }
}
