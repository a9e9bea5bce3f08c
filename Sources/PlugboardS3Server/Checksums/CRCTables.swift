// The slicing-by-8 tables the CRCs step through (see CRC.swift), and a CRC's bytes as S3
// writes them.

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
