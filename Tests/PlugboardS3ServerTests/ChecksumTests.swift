import PlugboardBytes
import PlugboardCrypto
import PlugboardTestSupport
import Testing
@testable import PlugboardS3Server

@Suite struct ChecksumTests {
    static let check = Array("123456789".utf8)

    /// Bit-at-a-time reflected CRCs, the definition the tables must agree with.
    static func bitwise32(_ bytes: [UInt8], polynomial: UInt32) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
        }
        return ~crc
    }

    static func bitwise64(_ bytes: [UInt8]) -> UInt64 {
        var crc: UInt64 = ~0
        for byte in bytes {
            crc ^= UInt64(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x9A6C_9329_AC4B_C9B5 : crc >> 1 }
        }
        return ~crc
    }

    static func pseudoRandom(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(state: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    @Test func knownCheckValues() {
        #expect(CRC32.checksum(Self.check) == 0xCBF4_3926)
        #expect(CRC32C.checksum(Self.check) == 0xE306_9283)
        #expect(CRC64NVME.checksum(Self.check) == 0xAE8B_1486_0A79_9888)
        #expect(CRC32.checksum([]) == 0)
        #expect(CRC32C.checksum([]) == 0)
        #expect(CRC64NVME.checksum([]) == 0)
        // zlib.crc32(b"Welcome to Amazon S3.") as S3 sends it: big-endian, base64.
        var crc = CRC32()
        crc.update(Array("Welcome to Amazon S3.".utf8))
        #expect(Base64.encode(crc.bytes) == "Ox7nCg==")
        #expect(CRC64NVME().bytes.count == 8)
    }

    @Test func slicingBy8_agreesWithBitwise_atEveryLengthAndSplit() {
        let data = Self.pseudoRandom(1031, seed: 7)
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 1031] {
            let bytes = Array(data.prefix(length))
            #expect(CRC32.checksum(bytes) == Self.bitwise32(bytes, polynomial: 0xEDB8_8320), "crc32, \(length) bytes")
            #expect(CRC32C.checksum(bytes) == Self.bitwise32(bytes, polynomial: 0x82F6_3B78), "crc32c, \(length) bytes")
            #expect(CRC64NVME.checksum(bytes) == Self.bitwise64(bytes), "crc64nvme, \(length) bytes")
        }
        let whole32 = CRC32.checksum(data), whole32c = CRC32C.checksum(data), whole64 = CRC64NVME.checksum(data)
        for split in stride(from: 0, through: data.count, by: 13) {
            var a = CRC32(), b = CRC32C(), c = CRC64NVME()
            for part in [Array(data[..<split]), Array(data[split...])] {
                a.update(part)
                b.update(part)
                c.update(part)
            }
            #expect(a.value == whole32 && b.value == whole32c && c.value == whole64, "split at \(split)")
        }
        // Unaligned starts: the loads are unaligned.
        data.withUnsafeBytes { buffer in
            for start in 1..<8 {
                var crc = CRC32C()
                crc.update(UnsafeRawBufferPointer(rebasing: buffer[start...]))
                #expect(crc.value == Self.bitwise32(Array(data[start...]), polynomial: 0x82F6_3B78))
            }
        }
    }

    @Test func largeInput_isFastEnough() {
        let data = [UInt8](repeating: 0x61, count: 8 << 20)
        let clock = ContinuousClock()
        var crc = CRC64NVME()
        let elapsed = clock.measure { crc.update(data) }
        #expect(crc.value == CRC64NVME.checksum(data))
        // Not a speed figure (docs/BENCHMARKS.md holds those): debug builds run far slower
        // than release, and beside the whole suite on two cores this thread shares the CPU.
        // The bound only catches a loop gone quadratic, which would take hours on 8 MiB.
        #expect(elapsed < .seconds(120), "8 MiB took \(elapsed)")
    }

    @Test func base64_encodesAndDecodes() {
        #expect(Base64.encode([]) == "")
        #expect(Base64.encode(Array("a".utf8)) == "YQ==")
        #expect(Base64.encode(Array("ab".utf8)) == "YWI=")
        #expect(Base64.encode(Array(0...255)).hasPrefix("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd"))
        for length in 0..<40 {
            let bytes = Self.pseudoRandom(length, seed: UInt64(length))
            #expect(Base64.decode(Base64.encode(bytes)) == bytes, "\(length) bytes")
        }
        #expect(Base64.decode("1EfQ6PKJ8WoS/2AnznfCWA==")?.count == 16)
        for bad in ["YQ=", "Y===", "YQ==YQ==", "YR==", "ab!d", "YWJ=", "=YWI", "YWI"] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }

    @Test func sha1_knownValue() throws {
        #expect(Hex.encode(try SHA1Hasher.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Base64.encode(try SHA1Hasher.hash(Array("Welcome to Amazon S3.".utf8))) == "yBt20ll2Oj9Ev3fHrkTHwj+qSZk=")
    }
}
