import PlugboardAPI
import PlugboardBytes

/// The header at the start of every object file: everything `head` returns, so that data
/// and metadata live in one file and are replaced together by one `rename`.
///
/// Layout (integers little-endian):
///
/// | offset | size | field |
/// |--------|------|-------|
/// | 0 | 8 | magic `PBFSOBJ` and format version `0x01` |
/// | 8 | 4 | length of the body that follows, in bytes |
/// | 12 | 8 | data size |
/// | 20 | 8 + 4 | lastModified: seconds since 1970, nanoseconds |
/// | 32 | 32 | ETag: lowercase hex MD5 of the data |
/// | 64 | 4 + n | key: length, UTF-8 bytes |
/// | ... | 4 + n | content type: length, bytes |
/// | ... | 4 + ... | metadata: entry count, then per entry key and value, each length + bytes, keys in byte order |
///
/// The object's data follows the body, to the end of the file.
struct ObjectFileHeader: Sendable {
    /// The first 8 bytes of every object file.
    static let magic: [UInt8] = Array("PBFSOBJ".utf8) + [0x01]
    /// Magic and body length: what is read first.
    static let prefixByteCount = 12
    /// No valid header body is longer (key, content type and metadata are bounded).
    static let maxBodyByteCount = 64 * 1024

    var key: String
    var size: Int
    var etag: String
    var contentType: String
    var lastModified: Timestamp
    var metadata: [String: String]

    /// What `head` returns for the object.
    var info: ObjectInfo {
        ObjectInfo(key: key, size: size, etag: etag, contentType: contentType,
                   lastModified: lastModified, metadata: metadata)
    }

    /// Magic, body length and body: the bytes that precede the data.
    func encoded() -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(64 + key.utf8.count + contentType.utf8.count + 256)
        Self.append(UInt64(size), to: &body)
        Self.append(UInt64(bitPattern: lastModified.seconds), to: &body)
        Self.append(UInt32(bitPattern: lastModified.nanoseconds), to: &body)
        body.append(contentsOf: etag.utf8)
        Self.appendField(key.utf8, to: &body)
        Self.appendField(contentType.utf8, to: &body)
        Self.append(UInt32(metadata.count), to: &body)
        for (name, value) in metadata.sorted(by: { ObjectKey.precedes($0.key, $1.key) }) {
            Self.appendField(name.utf8, to: &body)
            Self.appendField(value.utf8, to: &body)
        }
        var out = Self.magic
        Self.append(UInt32(body.count), to: &out)
        out.append(contentsOf: body)
        return out
    }

    /// The body length announced by the first ``prefixByteCount`` bytes, or nil when they
    /// are not an object file's.
    static func bodyLength(fromPrefix prefix: ArraySlice<UInt8>) -> Int? {
        guard prefix.count == prefixByteCount, prefix.starts(with: magic) else { return nil }
        var reader = Reader(bytes: prefix, offset: prefix.startIndex + magic.count)
        guard let length = reader.uint32(), Int(length) <= maxBodyByteCount else { return nil }
        return Int(length)
    }

    /// Decodes a body, or returns nil when it is not one this format writes: every field
    /// must be in range and the body must end exactly after the last one.
    static func decode(body: ArraySlice<UInt8>) -> ObjectFileHeader? {
        var reader = Reader(bytes: body, offset: body.startIndex)
        guard let size = reader.uint64(), size <= UInt64(Int.max),
              let seconds = reader.uint64(), let nanoseconds = reader.uint32(),
              Int32(bitPattern: nanoseconds) >= 0, Int32(bitPattern: nanoseconds) < 1_000_000_000,
              let etagBytes = reader.bytes(32), etagBytes.allSatisfy(isLowerHexDigit),
              let keyBytes = reader.field(), let key = Self.key(keyBytes),
              let typeBytes = reader.field(),
              let count = reader.uint32(), count <= 4096 else { return nil }
        let contentType = String(decoding: typeBytes, as: UTF8.self)
        var metadata: [String: String] = [:]
        for _ in 0..<count {
            guard let name = reader.field(), let value = reader.field() else { return nil }
            metadata[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
        }
        guard reader.offset == body.endIndex, metadata.count == Int(count) else { return nil }
        return ObjectFileHeader(
            key: key, size: Int(size), etag: String(decoding: etagBytes, as: UTF8.self), contentType: contentType,
            lastModified: Timestamp(secondsSince1970: Int64(bitPattern: seconds), nanoseconds: Int32(bitPattern: nanoseconds)),
            metadata: metadata)
    }

    /// The stored key, if it is one. An ASCII key is made here and then checked as a
    /// string: `ObjectKey.validate(bytes:)` is generic code across the API library, and
    /// this runs for every read; it still checks every other key.
    private static func key(_ bytes: ArraySlice<UInt8>) -> String? {
        if let key = bytes.withUnsafeBufferPointer(ASCIIText.string) {
            return (try? ObjectKey.validate(key)) != nil ? key : nil
        }
        return try? ObjectKey.validate(bytes: bytes)
    }

    // MARK: - Encoding helpers

    private static func append(_ value: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func appendField(_ bytes: String.UTF8View, to out: inout [UInt8]) {
        append(UInt32(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    private static func isLowerHexDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
    }

    /// Reads little-endian fields from bytes (a slice of the file's first read), returning
    /// nil past their end; `offset` is an index of `bytes`.
    private struct Reader {
        let bytes: ArraySlice<UInt8>
        var offset: Int

        mutating func bytes(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, count <= bytes.endIndex - offset else { return nil }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func uint64() -> UInt64? {
            guard let slice = bytes(8) else { return nil }
            return UInt64(littleEndian: slice.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
        }

        mutating func uint32() -> UInt32? {
            guard let slice = bytes(4) else { return nil }
            return UInt32(littleEndian: slice.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
        }

        /// A length-prefixed field of at most ``ObjectFileHeader/maxBodyByteCount`` bytes.
        mutating func field() -> ArraySlice<UInt8>? {
            guard let length = uint32(), Int(length) <= ObjectFileHeader.maxBodyByteCount else { return nil }
            return bytes(Int(length))
        }
    }
}
