// The CRCs S3's flexible checksums name (`x-amz-checksum-crc32`, `-crc32c`, `-crc64nvme`),
// computed in Swift: all three are reflected CRCs with all-ones initial value and final
// XOR, computed slicing-by-8 (eight bytes per step through eight 256-entry tables).
//
// ```swift
// var crc = CRC32()
// crc.update(Array("1234".utf8))
// crc.update(Array("56789".utf8))
// crc.value                               // 0xCBF43926
// CRC32C.checksum(Array("123456789".utf8)) // 0xE3069283
// ```

/// CRC-32 (ISO-HDLC, zlib's and S3's `crc32`): reflected polynomial 0xEDB88320.
public struct CRC32: Sendable {
    private var state: UInt32 = 0xFFFF_FFFF

    public init() {}

    /// Adds the bytes in `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        state = CRC32Tables.ieee.update(state, bytes)
    }

    /// Adds the bytes of `bytes`.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The CRC of every byte added so far.
    public var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// The 4 bytes S3 sends in base64, big-endian.
    public var bytes: [UInt8] { CRCBytes.bigEndian(UInt64(value), count: 4) }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }
}

/// CRC-32C (Castagnoli, iSCSI's, S3's `crc32c`): reflected polynomial 0x82F63B78.
public struct CRC32C: Sendable {
    private var state: UInt32 = 0xFFFF_FFFF

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        state = CRC32Tables.castagnoli.update(state, bytes)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// The 4 bytes S3 sends in base64, big-endian.
    public var bytes: [UInt8] { CRCBytes.bigEndian(UInt64(value), count: 4) }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }
}

/// CRC-64/NVME (S3's `crc64nvme`): reflected polynomial 0x9A6C9329AC4BC9B5.
public struct CRC64NVME: Sendable {
    private var state: UInt64 = 0xFFFF_FFFF_FFFF_FFFF

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        state = CRC64Tables.nvme.update(state, bytes)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public var value: UInt64 { state ^ 0xFFFF_FFFF_FFFF_FFFF }

    /// The 8 bytes S3 sends in base64, big-endian.
    public var bytes: [UInt8] { CRCBytes.bigEndian(value, count: 8) }

    public static func checksum(_ bytes: [UInt8]) -> UInt64 {
        var crc = CRC64NVME()
        crc.update(bytes)
        return crc.value
    }
}

enum CRCBytes {
    static func bigEndian(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(count - 1 - $0))) }
    }
}

/// Eight 256-entry tables for a reflected 32-bit CRC: `table[k * 256 + n]` is the CRC
/// of byte `n` followed by `k` zero bytes.
struct CRC32Tables: Sendable {
    static let ieee = CRC32Tables(polynomial: 0xEDB8_8320)
    static let castagnoli = CRC32Tables(polynomial: 0x82F6_3B78)

    private let table: [UInt32]

    init(polynomial: UInt32) {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var crc = UInt32(n)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            table[n] = crc
        }
        for k in 1..<8 {
            for n in 0..<256 {
                let previous = table[(k - 1) * 256 + n]
                table[k * 256 + n] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        self.table = table
    }

    func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return table.withUnsafeBufferPointer { t -> UInt32 in
            let t = t.baseAddress!
            var crc = crc
            var offset = 0
            let count = bytes.count
            while count - offset >= 8 {
                let one = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) ^ crc
                let two = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                crc = t[7 * 256 + Int(one & 0xFF)] ^ t[6 * 256 + Int((one >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((one >> 16) & 0xFF)] ^ t[4 * 256 + Int(one >> 24)]
                    ^ t[3 * 256 + Int(two & 0xFF)] ^ t[2 * 256 + Int((two >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((two >> 16) & 0xFF)] ^ t[Int(two >> 24)]
                offset += 8
            }
            while offset < count {
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(byte)) & 0xFF)]
                offset += 1
            }
            return crc
        }
    }
}

/// The same for a reflected 64-bit CRC.
struct CRC64Tables: Sendable {
    static let nvme = CRC64Tables(polynomial: 0x9A6C_9329_AC4B_C9B5)

    private let table: [UInt64]

    init(polynomial: UInt64) {
        var table = [UInt64](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var crc = UInt64(n)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            table[n] = crc
        }
        for k in 1..<8 {
            for n in 0..<256 {
                let previous = table[(k - 1) * 256 + n]
                table[k * 256 + n] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        self.table = table
    }

    func update(_ crc: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return table.withUnsafeBufferPointer { t -> UInt64 in
            let t = t.baseAddress!
            var crc = crc
            var offset = 0
            let count = bytes.count
            while count - offset >= 8 {
                let v = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ crc
                crc = t[7 * 256 + Int(v & 0xFF)] ^ t[6 * 256 + Int((v >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((v >> 16) & 0xFF)] ^ t[4 * 256 + Int((v >> 24) & 0xFF)]
                    ^ t[3 * 256 + Int((v >> 32) & 0xFF)] ^ t[2 * 256 + Int((v >> 40) & 0xFF)]
                    ^ t[1 * 256 + Int((v >> 48) & 0xFF)] ^ t[Int(v >> 56)]
                offset += 8
            }
            while offset < count {
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                crc = (crc >> 8) ^ t[Int((crc ^ UInt64(byte)) & 0xFF)]
                offset += 1
            }
            return crc
        }
    }
}
