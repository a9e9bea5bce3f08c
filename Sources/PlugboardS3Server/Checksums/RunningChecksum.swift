import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

/// The checksum of a body as its chunks pass, for a part S3 computes one of itself
/// (UploadPartCopy into an upload made with an algorithm: the client sends no bytes, so it
/// sends no checksum).
///
/// `@unchecked Sendable`: read by one task at a time, one chunk after another (the
/// ObjectBody contract).
final class RunningChecksum: @unchecked Sendable {
    let algorithm: ChecksumAlgorithm
    private var crc32 = CRC32()
    private var crc32c = CRC32C()
    private var crc64 = CRC64NVME()
    private var sha1: SHA1Hasher?
    private var sha256: SHA256Hasher?
    private var upstream: ObjectBody.Iterator

    init(_ algorithm: ChecksumAlgorithm, over body: ObjectBody) throws {
        self.algorithm = algorithm
        upstream = body.makeAsyncIterator()
        if algorithm == .sha1 { sha1 = try SHA1Hasher() }
        if algorithm == .sha256 { sha256 = try SHA256Hasher() }
    }

    /// The body, each chunk counted as it passes.
    func body(length: Int?) -> ObjectBody { ObjectBody(length: length) { try await self.next() } }

    private func next() async throws -> [UInt8]? {
        guard let chunk = try await upstream.next() else { return nil }
        switch algorithm {
        case .crc32: crc32.update(chunk)
        case .crc32c: crc32c.update(chunk)
        case .crc64nvme: crc64.update(chunk)
        case .sha1: sha1?.update(chunk)
        case .sha256: sha256?.update(chunk)
        }
        return chunk
    }

    /// The checksum of every byte that passed; once, after the body has ended.
    func finish() throws -> S3Checksum {
        var digest: [UInt8] = []
        switch algorithm {
        case .crc32: digest = crc32.bytes
        case .crc32c: digest = crc32c.bytes
        case .crc64nvme: digest = crc64.bytes
        case .sha1: if let hasher = sha1.take() { digest = try hasher.finalize() }
        case .sha256: if let hasher = sha256.take() { digest = try hasher.finalize() }
        }
        return S3Checksum(algorithm: algorithm, value: Base64.encode(digest), type: .fullObject)
    }
}
