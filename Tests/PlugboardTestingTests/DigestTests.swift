import Foundation
import PlugboardCrypto
import Testing

@Suite("SHA-256 and MD5 digests")
struct DigestTests {
    @Test func sha256OfEmptyInput_isTheFIPSVector() throws {
        #expect(Hex.encode(try SHA256Hasher.hash(Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func sha256OfABC_isTheFIPSVector() throws {
        #expect(Hex.encode(try SHA256Hasher.hash(Data("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sha256OfTwoBlockMessage_isTheFIPSVector() throws {
        let message = Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Hex.encode(try SHA256Hasher.hash(message)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func md5OfEmptyInput_isTheRFC1321Vector() throws {
        #expect(Hex.encode(try MD5Hasher.hash(Data())) == "d41d8cd98f00b204e9800998ecf8427e")
    }

    @Test func md5OfABC_isTheRFC1321Vector() throws {
        #expect(Hex.encode(try MD5Hasher.hash(Data("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
    }

    @Test func md5OfAlphabet_isTheRFC1321Vector() throws {
        #expect(Hex.encode(try MD5Hasher.hash(Data("abcdefghijklmnopqrstuvwxyz".utf8))) == "c3fcd3d76192e4007dfb496cca67e13b")
    }

    @Test func digestLengths_matchByteCount() throws {
        #expect(try SHA256Hasher.hash(Data("x".utf8)).count == SHA256Hasher.byteCount)
        #expect(try MD5Hasher.hash(Data("x".utf8)).count == MD5Hasher.byteCount)
    }

    @Test(arguments: [1, 3, 63, 64, 65, 1000, 4096])
    func streamingInChunks_equalsOneShot(chunkSize: Int) throws {
        let data = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        var sha = try SHA256Hasher()
        var md5 = try MD5Hasher()
        var offset = 0
        while offset < data.count {
            let chunk = data[offset..<min(offset + chunkSize, data.count)]
            sha.update(chunk)
            md5.update(chunk)
            offset += chunkSize
        }
        #expect(try sha.finalize() == SHA256Hasher.hash(data))
        #expect(try md5.finalize() == MD5Hasher.hash(data))
    }

    @Test func rawBufferAndDataUpdates_giveTheSameDigest() throws {
        let bytes: [UInt8] = Array("The quick brown fox jumps over the lazy dog".utf8)
        let fromBuffer = try bytes.withUnsafeBytes { try SHA256Hasher.hash($0) }
        #expect(fromBuffer == (try SHA256Hasher.hash(bytes)))
        #expect(Hex.encode(fromBuffer) == "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592")
        let md5 = try bytes.withUnsafeBytes { try MD5Hasher.hash($0) }
        #expect(Hex.encode(md5) == "9e107d9d372bb6826bd81d3542a419d6")
    }

    @Test func emptyBufferUpdates_changeNothing() throws {
        var hasher = try SHA256Hasher()
        hasher.update(UnsafeRawBufferPointer(start: nil, count: 0))
        hasher.update(Data())
        hasher.update(Data("abc".utf8))
        hasher.update([UInt8]())
        #expect(Hex.encode(try hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func input64MiB_givesKnownDigests_oneShotAndStreaming() throws {
        let count = 64 * 1024 * 1024
        var data = Data(count: count)
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            for index in 0..<count { buffer[index] = UInt8(index % 251) }
        }
        let sha = "98dc891b284e4d84ac25b0c0a24fdbe39a7f0dbd643ad5e8aa06e02fc6258254"
        let md5 = "8dbd2e5cbc41169e65ca6dd06d2f44a1"
        #expect(Hex.encode(try SHA256Hasher.hash(data)) == sha)
        #expect(Hex.encode(try MD5Hasher.hash(data)) == md5)
        var streaming = try SHA256Hasher()
        var offset = 0
        let chunk = 1_000_003
        while offset < count {
            streaming.update(data[offset..<min(offset + chunk, count)])
            offset += chunk
        }
        #expect(Hex.encode(try streaming.finalize()) == sha)
    }

    @Test func manyTasksHashingAtOnce_allGetTheRightDigest() async throws {
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 {
                group.addTask { Hex.encode(try SHA256Hasher.hash(Data("abc".utf8))) }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(results.count == 64)
        #expect(Set(results) == ["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"])
    }

    @Test func hexEncoding_isTwoLowercaseDigitsPerByte() {
        #expect(Hex.encode([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
        #expect(Hex.encode([UInt8]()) == "")
    }
}
