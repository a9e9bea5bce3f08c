import Foundation
import PlugboardCrypto
import Testing

/// RFC 4231 test vectors for HMAC-SHA256.
@Suite("HMAC-SHA256")
struct HMACSHA256Tests {
    private func bytes(hex: String) -> Data {
        var out = Data()
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            let value = { (c: UInt8) -> UInt8 in c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : c - UInt8(ascii: "a") + 10 }
            out.append(value(high) << 4 | value(low))
        }
        return out
    }

    @Test func rfc4231Case1_shortKeyHiThere() throws {
        let mac = try HMACSHA256.authenticationCode(for: Data("Hi There".utf8), key: Data(repeating: 0x0B, count: 20))
        #expect(Hex.encode(mac) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func rfc4231Case2_keyShorterThanOutput() throws {
        let mac = try HMACSHA256.authenticationCode(for: Data("what do ya want for nothing?".utf8), key: Data("Jefe".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func rfc4231Case3_combinedLengthOver64Bytes() throws {
        let mac = try HMACSHA256.authenticationCode(for: Data(repeating: 0xDD, count: 50), key: Data(repeating: 0xAA, count: 20))
        #expect(Hex.encode(mac) == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
    }

    @Test func rfc4231Case4_countingKey() throws {
        let key = bytes(hex: "0102030405060708090a0b0c0d0e0f10111213141516171819")
        let mac = try HMACSHA256.authenticationCode(for: Data(repeating: 0xCD, count: 50), key: key)
        #expect(Hex.encode(mac) == "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b")
    }

    @Test func rfc4231Case6_keyLongerThanBlockIsHashedFirst() throws {
        let mac = try HMACSHA256.authenticationCode(
            for: Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            key: Data(repeating: 0xAA, count: 131))
        #expect(Hex.encode(mac) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func rfc4231Case7_longKeyAndLongData() throws {
        let message = "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."
        let mac = try HMACSHA256.authenticationCode(for: Data(message.utf8), key: Data(repeating: 0xAA, count: 131))
        #expect(Hex.encode(mac) == "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
    }

    @Test func keyOfExactlyOneBlock_isUsedAsIs_whetherDataOrArray() throws {
        let key = Data(repeating: 0x61, count: 64)
        let mac = try HMACSHA256.authenticationCode(for: Data("message".utf8), key: key)
        #expect(Hex.encode(mac) == "6117f44d3e99fd884a6c9dc786e91e812c2a7b1c6240231edfcfe60343ff61cb")
        #expect(mac == (try HMACSHA256.authenticationCode(for: Data("message".utf8), key: Array(key))))
    }

    @Test func streamingInPieces_equalsOneShot() throws {
        let message = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0) })
        var hmac = try HMACSHA256(key: Data("secret".utf8))
        hmac.update(message[0..<1])
        hmac.update(message[1..<100])
        message[100...].withUnsafeBytes { hmac.update($0) }
        #expect(try hmac.finalize() == HMACSHA256.authenticationCode(for: message, key: Data("secret".utf8)))
    }

    @Test func preparedKey_givesTheSameCodes_forShortBlockAndLongKeys_andCanBeReused() throws {
        let message = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        for key in [[UInt8](repeating: 0x0B, count: 20), [UInt8](repeating: 0x61, count: 64), [UInt8](repeating: 0xAA, count: 131)] {
            let prepared = HMACSHA256Key(key)
            #expect(prepared.bytes == key)
            for length in [0, 1, 55, 56, 64, 200] {
                let part = Array(repeatElement(message, count: 4).joined().prefix(length))
                #expect(try prepared.authenticationCode(for: part) == HMACSHA256.authenticationCode(for: part, key: key))
            }
        }
        let case6 = HMACSHA256Key([UInt8](repeating: 0xAA, count: 131))
        #expect(Hex.encode(try case6.authenticationCode(for: message)) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func oneShotSHA256_equalsTheStreamingDigest_atBlockBoundaries() throws {
        for length in [0, 1, 55, 56, 63, 64, 65, 1000] {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            var streaming = try SHA256Hasher()
            data.withUnsafeBytes { streaming.update($0) }
            let expected = try streaming.finalize()
            #expect(try SHA256Hasher.hash(data) == expected)
            #expect(try data.withUnsafeBytes { try SHA256Hasher.hash($0) } == expected)
        }
        #expect(Hex.encode(try SHA256Hasher.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
