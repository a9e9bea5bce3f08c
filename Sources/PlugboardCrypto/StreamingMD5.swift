/// The MD5 of a streamed body, updated as its chunks pass: the ETag a storage that streams
/// (S3Storage, RESTStorage) reports and checks against its server's.
///
/// A class around the noncopyable hasher, so that the chunk loop's closure can update it.
/// `@unchecked Sendable`: one streamed put or get owns it and calls it one call after
/// another (a put's chunk loop runs in the put's task; a get's body is read by one task
/// at a time, the ObjectBody contract), never two at once.
public final class StreamingMD5: @unchecked Sendable {
    private var hasher: MD5Hasher?

    public init() {}

    /// A hasher already started.
    public static func started() throws(CryptoError) -> StreamingMD5 {
        let md5 = StreamingMD5()
        try md5.start()
        return md5
    }

    public func start() throws(CryptoError) {
        hasher = try MD5Hasher()
    }

    public func update(_ bytes: [UInt8]) {
        guard hasher != nil else { return }
        bytes.withUnsafeBytes { hasher!.update($0) }
    }

    /// The digest; the hasher is spent.
    public func finish() throws(CryptoError) -> [UInt8] {
        guard let hasher = hasher.take() else {
            throw CryptoError("the streamed body's MD5 was not started", hint: "Call start() before finish().")
        }
        return try hasher.finalize()
    }
}
