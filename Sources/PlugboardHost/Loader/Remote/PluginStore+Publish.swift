import PlugboardAPI
import PlugboardHTTPClient

extension PluginStore {
    /// What `plugboard publish` did: the manifest entry to paste, and whether the file was
    /// sent or the store had it already.
    public struct Published: Sendable {
        public var name: String
        /// `s3://bucket/prefix/<name>/<sha256>.so`.
        public var source: String
        public var sha256: String
        public var size: Int
        /// False when an object of that key and size was there already (its key names its
        /// digest, so it holds these bytes or the pin refuses it at load).
        public var uploaded: Bool
        public var inspection: PluginInspection
    }

    /// Checks `file` as the loader would (path, permissions, ELF, plugin header,
    /// toolchain), hashes it, and puts it at `<prefix><name>/<sha256>.so` in `bucket` with
    /// its header facts as `x-amz-meta-plugboard-*` metadata, unless an object of that key
    /// and size exists (HEAD). Blocking: run it off the cooperative pool.
    ///
    /// - Throws: the loader's refusal of the file, or the store's (`loader.source_*`).
    public func publish(file: String, bucket: String, prefix: String, name: String) throws(PlugboardError) -> Published {
        let read = try PluginFile.read(file, plugin: name)
        let sha = try Digest.sha256Hex(read.bytes)
        let inspection = try PluginInspection.check(read, sha256: sha, name: name, pin: nil, requireHeader: true)
        let url = "s3://\(bucket)/\(prefix)\(name)/\(sha).so"
        let source: RemoteSource
        switch RemoteSource.parse(url) {
        case .success(let parsed): source = parsed
        case .failure(let refusal):
            throw PlugboardError(.sourceUnsupported, "cannot publish to \(PlugboardError.quoted(url))",
                                 detail: "The key would be \(refusal.found).", hint: refusal.hint)
        }
        let purpose = Purpose.publish
        let head = try request(.head, source, purpose: purpose)
        let (existing, _) = try send(head, source: source, streaming: false, purpose: purpose)
        switch existing.status {
        case 200..<300 where existing.header("content-length").flatMap(Int.init) == read.bytes.count:
            return Published(name: name, source: url, sha256: sha, size: read.bytes.count, uploaded: false, inspection: inspection)
        case 200..<300, 404:
            break
        default:
            throw refusal(existing, head, source: source, purpose: purpose)
        }
        var metadata: [(String, String)] = [("content-type", "application/octet-stream"),
                                            ("x-amz-meta-plugboard-name", name), ("x-amz-meta-plugboard-sha256", sha)]
        if let header = inspection.header {
            metadata += [("x-amz-meta-plugboard-abi-version", "\(header.abiVersion)"),
                         ("x-amz-meta-plugboard-api-version", "\(header.apiMajor).\(header.apiMinor)")]
        }
        if let toolchain = inspection.toolchain, toolchain.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) {
            metadata.append(("x-amz-meta-plugboard-toolchain", toolchain))
        }
        // The body's hash is the file's: S3 checks the upload against it.
        let put = try request(.put, source, headers: metadata, body: read.bytes, payloadHash: sha, purpose: purpose)
        let (stored, _) = try send(put, source: source, streaming: false, purpose: purpose)
        guard (200..<300).contains(stored.status) else { throw refusal(stored, put, source: source, purpose: purpose) }
        return Published(name: name, source: url, sha256: sha, size: read.bytes.count, uploaded: true, inspection: inspection)
    }
}
