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
