import PlugboardBytes

// Ed25519 keys in the PEM files OpenSSL reads and writes (RFC 8410): the private key as
// PKCS#8 ("PRIVATE KEY"), the public key as SubjectPublicKeyInfo ("PUBLIC KEY"). Each DER
// form is a fixed prefix and the key's 32 bytes, so no ASN.1 parser is needed: a file
// with any other prefix is refused, not guessed at.

extension Ed25519PrivateKey {
    /// `SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32) } }`
    /// up to the seed, as `openssl genpkey -algorithm ed25519` writes it.
    static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70,
                                       0x04, 0x22, 0x04, 0x20]

    /// The key as a PEM PKCS#8 `PRIVATE KEY` block, which `openssl pkey` reads.
    public var pemRepresentation: String {
        PEM.encode(Self.pkcs8Prefix + rawRepresentation, label: "PRIVATE KEY")
    }

    /// The key in a PEM PKCS#8 `PRIVATE KEY` block, as `pemRepresentation` or
    /// `openssl genpkey -algorithm ed25519` writes it.
    ///
    /// - Throws: ``CryptoError`` naming what was expected and found.
    public init(pemRepresentation text: String) throws(CryptoError) {
        try self.init(rawRepresentation: try PEM.key(in: text, label: "PRIVATE KEY", prefix: Self.pkcs8Prefix,
                                                     what: "an Ed25519 PKCS#8 private key"))
    }
}

extension Ed25519PublicKey {
    /// `SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits, 32 bytes) }` up
    /// to the key.
    static let spkiPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    /// The key as a PEM SubjectPublicKeyInfo `PUBLIC KEY` block, as `openssl pkey -pubout`
    /// writes it.
    public var pemRepresentation: String {
        PEM.encode(Self.spkiPrefix + rawRepresentation, label: "PUBLIC KEY")
    }

    /// The key in a PEM `PUBLIC KEY` block.
    ///
    /// - Throws: ``CryptoError`` naming what was expected and found.
    public init(pemRepresentation text: String) throws(CryptoError) {
        try self.init(rawRepresentation: try PEM.key(in: text, label: "PUBLIC KEY", prefix: Self.spkiPrefix, what: "an Ed25519 public key"))
    }
}

/// RFC 7468's textual encoding, strictly: one block with the expected label, base64 in
/// lines between its boundaries.
enum PEM {
    static func encode(_ der: [UInt8], label: String) -> String {
        let text = Array(Base64.encode(der))
        var out = "-----BEGIN \(label)-----\n"
        var start = 0
        while start < text.count {
            let end = min(start + 64, text.count)
            out += String(text[start..<end]) + "\n"
            start = end
        }
        return out + "-----END \(label)-----\n"
    }

    static func decode(_ text: String, label: String) throws(CryptoError) -> [UInt8] {
        let begin = "-----BEGIN \(label)-----", end = "-----END \(label)-----"
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { ASCIIText.trimmed(String($0)) }
        guard let first = lines.firstIndex(of: begin), let last = lines.firstIndex(of: end), first < last else {
            let found = lines.first(where: { $0.hasPrefix("-----BEGIN ") }).map { "a \"\($0)\" line" } ?? "no BEGIN line"
            throw CryptoError("not a PEM \(label) block",
                detail: "Expected \"\(begin)\" ... \"\(end)\", found \(found).")
        }
        guard let der = Base64.decode(lines[(first + 1)..<last].joined()) else {
            throw CryptoError("malformed PEM \(label) block", detail: "The lines between its BEGIN and END lines are not base64.")
        }
        return der
    }

    /// The 32 key bytes of the one `label` block in `text`, whose DER is `prefix` and them.
    static func key(in text: String, label: String, prefix: [UInt8], what: String) throws(CryptoError) -> [UInt8] {
        let der = try decode(text, label: label)
        guard der.count == prefix.count + 32, der.starts(with: prefix) else {
            throw CryptoError("not \(what)",
                detail: "Expected \(prefix.count + 32) bytes of DER starting \(Hex.encode(prefix)), found \(der.count) bytes starting \(Hex.encode(der.prefix(prefix.count))).",
                hint: "Use a key from plugboard keygen or openssl genpkey -algorithm ed25519 (openssl pkey -pubout for its public key).")
        }
        return Array(der.dropFirst(prefix.count))
    }
}
