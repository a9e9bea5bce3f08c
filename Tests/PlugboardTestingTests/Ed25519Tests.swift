import Foundation
import PlugboardCrypto
import Testing

/// Ed25519 through libcrypto: RFC 8032's test vectors (section 7.1), refusals of anything
/// tampered with, and key files OpenSSL reads and writes.
@Suite("Ed25519")
struct Ed25519Tests {
    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            let value = { (c: UInt8) -> UInt8 in c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : c - UInt8(ascii: "a") + 10 }
            out.append(value(high) << 4 | value(low))
        }
        return out
    }

    struct Vector: Sendable, CustomTestStringConvertible {
        let name, secret, publicKey, message, signature: String
        var testDescription: String { name }
    }

    static let rfc8032: [Vector] = [
        Vector(name: "TEST 1", secret: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
               publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", message: "",
               signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        Vector(name: "TEST 2", secret: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
               publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", message: "72",
               signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        Vector(name: "TEST 3", secret: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
               publicKey: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", message: "af82",
               signature: "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
        Vector(name: "TEST SHA(abc)", secret: "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
               publicKey: "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
               message: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
               signature: "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"),
    ]

    @Test(arguments: rfc8032)
    func rfc8032Vector_derivesThePublicKeySignsAndVerifies(_ vector: Vector) throws {
        let key = try Ed25519PrivateKey(rawRepresentation: Self.bytes(hex: vector.secret))
        let message = Self.bytes(hex: vector.message)
        #expect(Hex.encode(key.publicKey.rawRepresentation) == vector.publicKey)
        let signature = try key.signature(for: message)
        #expect(Hex.encode(signature) == vector.signature)
        let publicKey = try Ed25519PublicKey(rawRepresentation: Self.bytes(hex: vector.publicKey))
        #expect(try publicKey.isValidSignature(signature, for: message))
    }

    @Test func tamperedSignatureMessageOrKey_doNotVerify() throws {
        let vector = Self.rfc8032[2]
        let key = try Ed25519PublicKey(rawRepresentation: Self.bytes(hex: vector.publicKey))
        let message = Self.bytes(hex: vector.message)
        let signature = Self.bytes(hex: vector.signature)
        for index in [0, 31, 32, 63] {
            var flipped = signature
            flipped[index] ^= 0x01
            #expect(try !key.isValidSignature(flipped, for: message), "signature byte \(index) flipped")
        }
        #expect(try !key.isValidSignature(signature, for: message + [0]))
        #expect(try !key.isValidSignature(signature, for: [0xAF, 0x83]))
        #expect(try !key.isValidSignature(Array(signature.prefix(63)), for: message))
        #expect(try !key.isValidSignature([], for: message))
        let other = try Ed25519PublicKey(rawRepresentation: Self.bytes(hex: Self.rfc8032[1].publicKey))
        #expect(try !other.isValidSignature(signature, for: message))
    }

    @Test func wrongLengths_areRefusedNamingBoth() {
        #expect(throws: CryptoError.self) { try Ed25519PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31)) }
        do {
            _ = try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33))
            Issue.record("a 33-byte public key was accepted")
        } catch {
            #expect(error.detail == "Expected 32 bytes, found 33.")
        }
    }

    @Test func generatedKeys_differAndSignWhatTheirPublicKeyVerifies() throws {
        let a = try Ed25519PrivateKey.generate(), b = try Ed25519PrivateKey.generate()
        #expect(a.rawRepresentation != b.rawRepresentation)
        let message = Array("plugboard".utf8)
        #expect(try a.publicKey.isValidSignature(try a.signature(for: message), for: message))
        #expect(try !b.publicKey.isValidSignature(try a.signature(for: message), for: message))
    }

    @Test func keyID_isTheFirst16HexDigitsOfTheRawKeysSHA256() throws {
        let key = try Ed25519PublicKey(rawRepresentation: Self.bytes(hex: Self.rfc8032[0].publicKey))
        let digest = Hex.encode(try SHA256Hasher.hash(key.rawRepresentation))
        #expect(key.keyID == String(digest.prefix(16)))
    }

    @Test func privateKey_printedOrDumped_showsOnlyItsKeyID() throws {
        let key = try Ed25519PrivateKey(rawRepresentation: Self.bytes(hex: Self.rfc8032[0].secret))
        var dumped = ""
        dump(key, to: &dumped)
        for text in [String(describing: key), String(reflecting: key), dumped, "\(key)"] {
            #expect(!text.contains(Self.rfc8032[0].secret), "the seed shows in \(text)")
            #expect(!text.contains(Hex.encode(key.rawRepresentation.prefix(4))), "the seed shows in \(text)")
            #expect(text.contains(key.publicKey.keyID))
        }
    }

    @Test func pem_roundTripsAndRefusesOtherBlocks() throws {
        let key = try Ed25519PrivateKey(rawRepresentation: Self.bytes(hex: Self.rfc8032[0].secret))
        #expect(key.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI"))
        #expect(try Ed25519PrivateKey(pemRepresentation: key.pemRepresentation).rawRepresentation == key.rawRepresentation)
        #expect(try Ed25519PublicKey(pemRepresentation: key.publicKey.pemRepresentation) == key.publicKey)
        do {
            _ = try Ed25519PrivateKey(pemRepresentation: key.publicKey.pemRepresentation)
            Issue.record("a public key was read as a private key")
        } catch {
            #expect(error.message == "not a PEM PRIVATE KEY block")
            #expect(error.detail?.contains("\"-----BEGIN PUBLIC KEY-----\"") == true)
        }
        // An RSA or EC key has another algorithm identifier: refused by its prefix.
        let other = "-----BEGIN PUBLIC KEY-----\n\(Base64Text.encode([0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x6E, 0x03, 0x21, 0x00] + [UInt8](repeating: 7, count: 32)))\n-----END PUBLIC KEY-----\n"
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(pemRepresentation: other) }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(pemRepresentation: "-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n") }
    }

    static var openssl: String? {
        ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String], input: [UInt8]? = nil) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let output = Pipe(), stdin = Pipe()
        process.standardOutput = output
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input)) }
        try stdin.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CryptoError("\(tool) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return Array(data)
    }

    @Test(.enabled(if: Ed25519Tests.openssl != nil, "openssl is not installed (apt-get install openssl)"))
    func opensslKeys_areReadAndItsSignaturesVerify_andOursVerifyInOpenSSL() throws {
        let openssl = try #require(Self.openssl)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("plugboard-ed25519-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Self.run(openssl, ["genpkey", "-algorithm", "ed25519", "-out", "\(folder)/key.pem"])
        try Self.run(openssl, ["pkey", "-in", "\(folder)/key.pem", "-pubout", "-out", "\(folder)/key.pub"])
        let key = try Ed25519PrivateKey(pemRepresentation: String(contentsOfFile: "\(folder)/key.pem", encoding: .utf8))
        let publicKey = try Ed25519PublicKey(pemRepresentation: String(contentsOfFile: "\(folder)/key.pub", encoding: .utf8))
        #expect(key.publicKey == publicKey)

        let message = Array("plugboard plugin signature v1\nFileStorage\n\(String(repeating: "ab", count: 32))\n".utf8)
        try Data(message).write(to: URL(fileURLWithPath: "\(folder)/message"))
        let theirs = try Self.run(openssl, ["pkeyutl", "-sign", "-inkey", "\(folder)/key.pem", "-rawin", "-in", "\(folder)/message"])
        #expect(try publicKey.isValidSignature(theirs, for: message))
        // Ed25519 is deterministic: the same key signs the same message the same way.
        #expect(try key.signature(for: message) == theirs)

        // Our PEM files, read by OpenSSL, check our signature.
        let ours = try Ed25519PrivateKey.generate()
        try Data(ours.publicKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: "\(folder)/ours.pub"))
        try Data(ours.pemRepresentation.utf8).write(to: URL(fileURLWithPath: "\(folder)/ours.pem"))
        try Data(try ours.signature(for: message)).write(to: URL(fileURLWithPath: "\(folder)/ours.sig"))
        let verified = try Self.run(openssl, ["pkeyutl", "-verify", "-pubin", "-inkey", "\(folder)/ours.pub", "-rawin",
                                              "-in", "\(folder)/message", "-sigfile", "\(folder)/ours.sig"])
        #expect(String(decoding: verified, as: UTF8.self).contains("Signature Verified Successfully"))
        let derived = try Self.run(openssl, ["pkey", "-in", "\(folder)/ours.pem", "-pubout"])
        #expect(String(decoding: derived, as: UTF8.self) == ours.publicKey.pemRepresentation)
    }
}

/// Standard base64 for the tests' hand-made PEM blocks (Foundation's, so that the code
/// under test is not checked against itself).
enum Base64Text {
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
