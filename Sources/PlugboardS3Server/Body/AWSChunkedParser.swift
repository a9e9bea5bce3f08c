import PlugboardAPI
import PlugboardBytes
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTP

/// The `aws-chunked` framing (S3's "Transferring Payload in Multiple Chunks"), fed raw
/// pieces split anywhere, giving each chunk's data once it is whole (and, signed, its
/// signature checked):
///
///     hex-size[;chunk-signature=sig]\r\n data \r\n ... 0[;chunk-signature=sig]\r\n
///     \r\n                                              (no trailer)
///     x-amz-checksum-crc32:base64\r\n [x-amz-trailer-signature:sig\r\n] \r\n   (trailer)
struct AWSChunkedParser {
    struct Signing {
        var key: HMACSHA256Key
        var scope: String
        var amzDate: String
        var seed: String
    }

    private enum State { case sizeLine, data, dataEnd, trailer, done }

    private let signing: Signing?
    private let trailerMode: Bool
    private let decodedLength: Int
    private var state = State.sizeLine
    private var input: [UInt8] = []
    private var offset = 0
    private var line: [UInt8] = []
    private var chunk: [UInt8] = []
    private var chunkSize = 0
    private var chunkSignature = ""
    private var chunkIndex = 0
    private var crlfSeen = 0
    private var previousSignature: String
    private var decoded = 0
    private var trailerBytes = 0
    private var trailerCanonical: [UInt8] = []
    private var trailerSignature: String?
    private(set) var trailers: [(name: String, value: String)] = []

    init(decodedLength: Int, signing: Signing?, trailer: Bool) {
        self.decodedLength = decodedLength
        self.signing = signing
        self.trailerMode = trailer
        self.previousSignature = signing?.seed ?? ""
    }

    /// The next raw piece; the previous one must have been used up (``step()`` returned nil).
    mutating func feed(_ bytes: [UInt8]) throws(S3Error) {
        if state == .done, !bytes.isEmpty {
            throw S3Error.invalidRequest("The aws-chunked body goes on after its final chunk: found \(bytes.count) more bytes.")
        }
        input = bytes
        offset = 0
    }

    /// The end of the raw body.
    mutating func finish() throws(S3Error) {
        if state == .trailer, line.isEmpty, signing == nil {
            // The final empty line is missing after complete trailer lines: some clients
            // end there.
            state = .done
        }
        guard state == .done else {
            throw S3Error.incompleteBody(
                "The request body terminated unexpectedly: the aws-chunked body ended \(position) after \(decoded) of the \(decodedLength) bytes x-amz-decoded-content-length announced.")
        }
        guard decoded == decodedLength else {
            throw S3Error.incompleteBody(
                "You did not provide the number of bytes specified by the x-amz-decoded-content-length header: expected \(decodedLength), the chunks carry \(decoded).")
        }
    }

    private var position: String {
        switch state {
        case .sizeLine: "in a chunk-size line"
        case .data: "in chunk \(chunkIndex + 1)'s data"
        case .dataEnd: "before the CRLF after chunk \(chunkIndex + 1)"
        case .trailer: "in the trailer"
        case .done: "at its end"
        }
    }

    /// The next chunk's data, when a whole chunk is here; nil when more input is needed
    /// (or the body is complete).
    mutating func step() throws(S3Error) -> [UInt8]? {
        while offset < input.count {
            switch state {
            case .done:
                throw S3Error.invalidRequest("The aws-chunked body goes on after its final chunk: found \(input.count - offset) more bytes.")
            case .sizeLine:
                guard let text = try takeLine(limit: S3BodyDecoder.maxSizeLine, what: "chunk-size line") else { continue }
                try startChunk(text)
            case .data:
                let n = min(chunkSize - chunk.count, input.count - offset)
                chunk.append(contentsOf: input[offset..<(offset + n)])
                offset += n
                if chunk.count == chunkSize { state = .dataEnd }
            case .dataEnd:
                let expected = crlfSeen == 0 ? UInt8(ascii: "\r") : UInt8(ascii: "\n")
                guard input[offset] == expected else {
                    throw S3Error.incompleteBody(
                        "The aws-chunked body is malformed: expected CRLF after chunk \(chunkIndex + 1)'s \(chunkSize) bytes, found byte 0x\(Hex.encode([input[offset]])) (a chunk longer than its size?).")
                }
                offset += 1
                crlfSeen += 1
                guard crlfSeen == 2 else { continue }
                crlfSeen = 0
                if chunkSize == 0 {
                    try checkSignature(of: [])
                    state = .done
                    continue
                }
                try checkSignature(of: chunk)
                decoded += chunkSize
                chunkIndex += 1
                state = .sizeLine
                let out = chunk
                chunk = []
                return out
            case .trailer:
                guard let text = try takeLine(limit: S3BodyDecoder.maxTrailerLine, what: "trailer line") else { continue }
                trailerBytes += text.count + 2
                guard trailerBytes <= S3BodyDecoder.maxTrailerBytes else {
                    throw S3Error("MalformedTrailerError", status: 400,
                                  "The request contained trailing data that was not well-formed or did not conform to our published schema: the trailer is longer than \(S3BodyDecoder.maxTrailerBytes) bytes.")
                }
                try trailerLine(text)
            }
        }
        return nil
    }

    /// A whole line (without its CRLF), or nil when the input ends before its end.
    private mutating func takeLine(limit: Int, what: String) throws(S3Error) -> [UInt8]? {
        let end = input[offset...].firstIndex(of: UInt8(ascii: "\n"))
        let stop = end.map { $0 + 1 } ?? input.count
        guard line.count + (stop - offset) <= limit + 2 else {
            throw S3Error.incompleteBody(
                "The aws-chunked body is malformed: a \(what) is longer than \(limit) bytes (after \(decoded) decoded bytes).")
        }
        line.append(contentsOf: input[offset..<stop])
        offset = stop
        guard end != nil else { return nil }
        guard line.count >= 2, line[line.count - 2] == UInt8(ascii: "\r") else {
            throw S3Error.incompleteBody("The aws-chunked body is malformed: a \(what) ends with LF, not CRLF (after \(decoded) decoded bytes).")
        }
        let text = Array(line[..<(line.count - 2)])
        line = []
        return text
    }

    private mutating func startChunk(_ text: [UInt8]) throws(S3Error) {
        let semicolon = text.firstIndex(of: UInt8(ascii: ";"))
        let sizeText = text[..<(semicolon ?? text.count)]
        let shown = String(decoding: text.prefix(100), as: UTF8.self)
        guard !sizeText.isEmpty, sizeText.count <= 16, sizeText.allSatisfy({ HexDigits.value($0) != nil }) else {
            throw S3Error.incompleteBody(
                "The aws-chunked body is malformed: expected a chunk-size line \"<hex size>\(signing == nil ? "" : ";chunk-signature=<signature>")\", found \"\(shown)\".")
        }
        var size = 0
        for digit in sizeText {
            size = size << 4 | Int(HexDigits.value(digit)!)
            guard size <= S3BodyDecoder.maxChunkSize else {
                throw S3Error.invalidRequest(
                    "An aws-chunked chunk is too large: chunk \(chunkIndex + 1) declares \(String(decoding: sizeText, as: UTF8.self)) (hex) bytes, at most \(S3BodyDecoder.maxChunkSize) are accepted.")
            }
        }
        if signing != nil {
            let prefix = Array(";chunk-signature=".utf8)
            guard let semicolon, text.count == semicolon + prefix.count + 64,
                  Array(text[semicolon..<(semicolon + prefix.count)]) == prefix else {
                throw S3Error.incompleteBody(
                    "The aws-chunked body is malformed: expected a chunk-size line \"<hex size>;chunk-signature=<64 hex digits>\", found \"\(shown)\".")
            }
            chunkSignature = String(decoding: text[(semicolon + prefix.count)...], as: UTF8.self)
        } else if semicolon != nil {
            throw S3Error.incompleteBody(
                "The aws-chunked body is malformed: an unsigned chunk-size line is \"<hex size>\" alone, found \"\(shown)\".")
        }
        guard size <= decodedLength - decoded else {
            throw S3Error.invalidRequest(
                "The aws-chunked body carries more than x-amz-decoded-content-length announced: chunk \(chunkIndex + 1) declares \(size) bytes, and only \(decodedLength - decoded) of the \(decodedLength) remain.")
        }
        chunkSize = size
        chunk = []
        // Reserved as the data comes beyond 1 MiB: a size line alone must not cost 16 MiB.
        chunk.reserveCapacity(min(size, 1 << 20))
        if size == 0 && trailerMode {
            try checkSignature(of: [])
            state = .trailer
        } else {
            state = size == 0 ? .dataEnd : .data
        }
    }

    private mutating func checkSignature(of data: [UInt8]) throws(S3Error) {
        guard let signing else { return }
        let stringToSign = "AWS4-HMAC-SHA256-PAYLOAD\n\(signing.amzDate)\n\(signing.scope)\n\(previousSignature)\n\(SigV4Verifier.emptySHA256)\n\(try SigV4Verifier.sha256Hex(data))"
        let computed = Hex.encode(try SigV4Verifier.hmac(Array(stringToSign.utf8), key: signing.key))
        guard SigV4Verifier.constantTimeEqual(computed, chunkSignature) else {
            throw S3Error("SignatureDoesNotMatch", status: 403,
                          "The request signature we calculated does not match the signature you provided: chunk \(chunkIndex + 1) (\(data.count) bytes, after \(decoded) decoded bytes) has chunk-signature \(chunkSignature), which does not sign its data chained from the previous signature.",
                          fields: [("StringToSign", stringToSign), ("SignatureProvided", chunkSignature)])
        }
        previousSignature = computed
    }

    private mutating func trailerLine(_ text: [UInt8]) throws(S3Error) {
        if text.isEmpty {
            if let signing {
                guard let provided = trailerSignature else {
                    throw S3Error("MalformedTrailerError", status: 400,
                                  "The request contained trailing data that was not well-formed or did not conform to our published schema: the signed trailer has no x-amz-trailer-signature line.")
                }
                let stringToSign = "AWS4-HMAC-SHA256-TRAILER\n\(signing.amzDate)\n\(signing.scope)\n\(previousSignature)\n\(try SigV4Verifier.sha256Hex(trailerCanonical))"
                let computed = Hex.encode(try SigV4Verifier.hmac(Array(stringToSign.utf8), key: signing.key))
                guard SigV4Verifier.constantTimeEqual(computed, provided) else {
                    throw S3Error("SignatureDoesNotMatch", status: 403,
                                  "The request signature we calculated does not match the signature you provided: the trailer's x-amz-trailer-signature \(provided.prefix(64)) does not sign its lines chained from the last chunk's signature.",
                                  fields: [("StringToSign", stringToSign), ("SignatureProvided", String(provided.prefix(64)))])
                }
            }
            state = .done
            return
        }
        if trailerSignature != nil {
            throw S3Error("MalformedTrailerError", status: 400,
                          "The request contained trailing data that was not well-formed or did not conform to our published schema: a line follows x-amz-trailer-signature, which must be the trailer's last.")
        }
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")) else {
            throw S3Error("MalformedTrailerError", status: 400,
                          "The request contained trailing data that was not well-formed or did not conform to our published schema: expected \"name:value\", found \"\(String(decoding: text.prefix(100), as: UTF8.self))\".")
        }
        let name = ASCIIText.trimmed(String(decoding: text[..<colon], as: UTF8.self)).lowercased()
        let value = ASCIIText.trimmed(String(decoding: text[(colon + 1)...], as: UTF8.self))
        if name == "x-amz-trailer-signature" {
            guard signing != nil else {
                throw S3Error("MalformedTrailerError", status: 400,
                              "The request contained trailing data that was not well-formed or did not conform to our published schema: an unsigned trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER) carries x-amz-trailer-signature.")
            }
            trailerSignature = value
            return
        }
        trailerCanonical += text
        trailerCanonical.append(UInt8(ascii: "\n"))
        trailers.append((name: name, value: value))
    }
}
