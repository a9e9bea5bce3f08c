import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// ListObjectsV2, ListObjects (V1) and ListObjectVersions (of an unversioned bucket: one
/// version, "null", of each object), over ``S3Listing``.
enum ListOperations {
    /// `GET /bucket?list-type=2`.
    static func listObjectsV2(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try bucketName(request)
        let arguments = try Arguments(request)
        try await S3Objects.requireBucket(context, bucket)
        // S3 reads an empty token or start-after as none (a client that echoes an absent
        // NextContinuationToken), yet echoes each as sent, empty too, as its reference says
        // ("If ContinuationToken was sent with the request, it is included in the response").
        let sentStartAfter = request.query("start-after")
        let sentContinuation = request.query("continuation-token")
        let startAfter = sentStartAfter.flatMap { $0.isEmpty ? nil : $0 }
        let continuation = sentContinuation.flatMap { $0.isEmpty ? nil : $0 }
        let listing = arguments.listing(bucket)
        let position: S3Listing.Position
        if let continuation {
            position = try listing.position(fromToken: continuation)
        } else if let startAfter {
            position = .after(startAfter, bucket: bucket, isPrefix: false)
        } else {
            position = .start
        }
        let fetchOwner = request.query("fetch-owner") == "true"
        let page = try await listing.walk(context.storage, from: position)
        let encode = arguments.encode(_:)

        var xml = S3XMLWriter(root: "ListBucketResult")
        xml.element("Name", bucket)
        xml.element("Prefix", encode(arguments.prefix))
        if let sentStartAfter { xml.element("StartAfter", encode(sentStartAfter)) }
        if let sentContinuation { xml.element("ContinuationToken", sentContinuation) }
        if let next = page.next { xml.element("NextContinuationToken", listing.token(next)) }
        xml.element("KeyCount", page.entries.count)
        xml.element("MaxKeys", arguments.maxKeys)
        if let delimiter = arguments.delimiter { xml.element("Delimiter", encode(delimiter)) }
        if arguments.urlEncoding { xml.element("EncodingType", "url") }
        xml.element("IsTruncated", page.isTruncated)
        try await writeEntries(page, into: &xml, context, encode: encode, owner: fetchOwner)
        return S3OperationSupport.xml(xml.finish())
    }

    /// `GET /bucket`: the first version of the call. `Marker` skips keys up to it;
    /// `NextMarker` is answered when a delimiter is given (else clients continue from the
    /// last key), and a marker that is a common prefix skips the keys under it.
    static func listObjectsV1(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try bucketName(request)
        let arguments = try Arguments(request)
        try await S3Objects.requireBucket(context, bucket)
        let marker = request.query("marker") ?? ""
        let listing = arguments.listing(bucket)
        let position = S3Listing.Position.after(marker, bucket: bucket, isPrefix: !marker.isEmpty && listing.commonPrefix(of: marker) == marker)
        let page = try await listing.walk(context.storage, from: position)
        let encode = arguments.encode(_:)

        var xml = S3XMLWriter(root: "ListBucketResult")
        xml.element("Name", bucket)
        // V1's Prefix is echoed as sent, encoding-type or not: S3 encodes it in V2 and
        // ListObjectVersions only, and the SDKs (botocore's decode_list_object) decode
        // just Delimiter, Marker, NextMarker, Key and CommonPrefixes' Prefix here.
        xml.element("Prefix", arguments.prefix)
        xml.element("Marker", encode(marker))
        if arguments.delimiter != nil, page.isTruncated, let last = page.entries.last { xml.element("NextMarker", encode(last.name)) }
        xml.element("MaxKeys", arguments.maxKeys)
        if let delimiter = arguments.delimiter { xml.element("Delimiter", encode(delimiter)) }
        if arguments.urlEncoding { xml.element("EncodingType", "url") }
        xml.element("IsTruncated", page.isTruncated)
        try await writeEntries(page, into: &xml, context, encode: encode, owner: true)
        return S3OperationSupport.xml(xml.finish())
    }

    /// `GET /bucket?versions` of an unversioned bucket: every object as its one version,
    /// `VersionId` "null", `IsLatest` true; paged by `key-marker` (and
    /// `version-id-marker`, which can only be "null" here).
    static func listObjectVersions(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try bucketName(request)
        let arguments = try Arguments(request)
        let keyMarker = request.query("key-marker") ?? ""
        let versionMarker = request.query("version-id-marker") ?? ""
        if !versionMarker.isEmpty {
            guard !keyMarker.isEmpty else {
                throw S3Error.invalidArgument("A version-id marker cannot be specified without a key marker: expected key-marker beside version-id-marker, found none.",
                                              name: "version-id-marker", value: versionMarker)
            }
            guard versionMarker == "null" else {
                throw S3Error.invalidArgument("Invalid version id specified: expected \"null\" (the bucket is not versioned), found \"\(versionMarker.prefix(128))\".",
                                              name: "version-id-marker", value: versionMarker)
            }
        }
        try await S3Objects.requireBucket(context, bucket)
        let listing = arguments.listing(bucket)
        // A key has one version here, so after (key, any version) is after the key.
        let position = S3Listing.Position.after(keyMarker, bucket: bucket,
                                                isPrefix: !keyMarker.isEmpty && listing.commonPrefix(of: keyMarker) == keyMarker)
        let page = try await listing.walk(context.storage, from: position)
        let encode = arguments.encode(_:)

        var xml = S3XMLWriter(root: "ListVersionsResult")
        xml.element("Name", bucket)
        xml.element("Prefix", encode(arguments.prefix))
        xml.element("KeyMarker", encode(keyMarker))
        xml.element("VersionIdMarker", versionMarker)
        if page.isTruncated, let last = page.entries.last {
            xml.element("NextKeyMarker", encode(last.name))
            if case .object = last { xml.element("NextVersionIdMarker", "null") }
        }
        xml.element("MaxKeys", arguments.maxKeys)
        if let delimiter = arguments.delimiter { xml.element("Delimiter", encode(delimiter)) }
        if arguments.urlEncoding { xml.element("EncodingType", "url") }
        xml.element("IsTruncated", page.isTruncated)
        var etags = try await S3Listing.etags(page, context.storage).makeIterator()
        for entry in page.entries {
            guard case .object(let key, let info) = entry else { continue }
            xml.open("Version")
            xml.element("Key", encode(key))
            xml.element("VersionId", "null")
            xml.element("IsLatest", true)
            xml.element("LastModified", S3Objects.listingTime(info.lastModified))
            xml.element("ETag", etags.next() ?? S3Objects.etag(info))
            xml.element("Size", info.size)
            writeOwner(into: &xml)
            xml.element("StorageClass", "STANDARD")
            xml.close("Version")
        }
        writeCommonPrefixes(page, into: &xml, encode: encode)
        return S3OperationSupport.xml(xml.finish())
    }

    // MARK: Pieces

    /// The query items the three calls share.
    struct Arguments {
        var prefix: String
        var delimiter: String?
        var maxKeys: Int
        var urlEncoding: Bool

        init(_ request: S3Request) throws(S3Error) {
            prefix = request.query("prefix") ?? ""
            delimiter = request.query("delimiter").flatMap { $0.isEmpty ? nil : $0 }
            maxKeys = 1000
            if let text = request.query("max-keys") {
                guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                    throw S3Error.invalidArgument("Provided max-keys not an integer or within integer range: expected 0 to 1000 (more is answered as 1000), found \"\(text.prefix(40))\".",
                                                  name: "max-keys", value: text)
                }
                // Digits only: too many of them is just "more than 1000".
                maxKeys = min(Int(text) ?? 1000, 1000)
            }
            switch request.query("encoding-type") {
            case nil: urlEncoding = false
            case "url"?: urlEncoding = true
            case let other?:
                throw S3Error.invalidArgument("Invalid Encoding Method specified in Request: expected \"url\", found \"\(other.prefix(40))\".",
                                              name: "encoding-type", value: other)
            }
        }

        func listing(_ bucket: String) -> S3Listing {
            S3Listing(bucket: bucket, prefix: prefix, delimiter: delimiter, maxKeys: maxKeys)
        }

        /// Keys, prefixes and markers as the answer writes them. Each call encodes
        /// exactly the elements S3 encodes, which are those the SDKs decode (botocore's
        /// `decode_list_object*` handlers): V2 Delimiter, Prefix, StartAfter, Key and
        /// CommonPrefixes' Prefix (not the tokens); V1 the same without Prefix and
        /// StartAfter, with Marker and NextMarker; ListObjectVersions KeyMarker,
        /// NextKeyMarker, Prefix, Delimiter, Key and CommonPrefixes' Prefix.
        func encode(_ text: String) -> String {
            urlEncoding ? PercentEncoding.encode(text, keepingSlashes: true, spaceAsPlus: true) : text
        }
    }

    static func bucketName(_ request: S3Request) throws(S3Error) -> String {
        guard let bucket = request.bucket, !bucket.isEmpty else {
            throw S3Error.invalidRequest("Listing objects is an operation on a bucket: expected a bucket name in the path or host, found none.")
        }
        return bucket
    }

    static func writeEntries(_ page: S3Listing.Page, into xml: inout S3XMLWriter, _ context: S3Context,
                             encode: (String) -> String, owner: Bool) async throws {
        var etags = try await S3Listing.etags(page, context.storage).makeIterator()
        for entry in page.entries {
            guard case .object(let key, let info) = entry else { continue }
            xml.open("Contents")
            xml.element("Key", encode(key))
            xml.element("LastModified", S3Objects.listingTime(info.lastModified))
            xml.element("ETag", etags.next() ?? S3Objects.etag(info))
            xml.element("Size", info.size)
            if owner { writeOwner(into: &xml) }
            xml.element("StorageClass", "STANDARD")
            xml.close("Contents")
        }
        writeCommonPrefixes(page, into: &xml, encode: encode)
    }

    static func writeCommonPrefixes(_ page: S3Listing.Page, into xml: inout S3XMLWriter, encode: (String) -> String) {
        for entry in page.entries {
            guard case .commonPrefix(let prefix) = entry else { continue }
            xml.open("CommonPrefixes")
            xml.element("Prefix", encode(prefix))
            xml.close("CommonPrefixes")
        }
    }

    static func writeOwner(into xml: inout S3XMLWriter) {
        xml.open("Owner")
        xml.element("ID", BucketOperations.ownerID)
        xml.element("DisplayName", BucketOperations.ownerDisplayName)
        xml.close("Owner")
    }
}
