import PlugboardCrypto
import Testing

/// RFC 2202 test vectors for HMAC-SHA1 (S3 Signature Version 2 signs with it).
@Suite("HMAC-SHA1")
struct HMACSHA1Tests {
    @Test func rfc2202Case1_shortKeyHiThere() throws {
        let mac = try HMACSHA1.authenticationCode(for: Array("Hi There".utf8), key: [UInt8](repeating: 0x0B, count: 20))
        #expect(Hex.encode(mac) == "b617318655057264e28bc0b6fb378c8ef146be00")
    }

    @Test func rfc2202Case2_keyShorterThanOutput() throws {
        let mac = try HMACSHA1.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(Hex.encode(mac) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
    }

    @Test func rfc2202Case6_keyLongerThanABlock_isHashedFirst() throws {
        let mac = try HMACSHA1.authenticationCode(for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                                                  key: [UInt8](repeating: 0xAA, count: 80))
        #expect(Hex.encode(mac) == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
        #expect(mac.count == HMACSHA1.byteCount)
    }
}
