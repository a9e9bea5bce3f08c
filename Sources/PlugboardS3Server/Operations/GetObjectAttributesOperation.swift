import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// GetObjectAttributes (`GET /bucket/key?attributes`): what `x-amz-object-attributes`
/// names of `ETag`, `Checksum`, `ObjectParts`, `StorageClass` and `ObjectSize`, from the
/// object's head, its kept checksum and, for an object completed from parts, its manifest.
enum GetObjectAttributesOperation {
    static let names = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]

    static func getObjectAttributes(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try ObjectOperations.names(request)
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let asked = try attributes(request)
        let maxParts = min(try MultipartOperations.integer(request.header("x-amz-max-parts"), "x-amz-max-parts", default: 1000, range: 0...Int.max), 1000)
        let marker = try MultipartOperations.integer(request.header("x-amz-part-number-marker"), "x-amz-part-number-marker",
                                                     default: 0, range: 0...Int.max)
        let info = try await ObjectOperations.headForRead(context, bucket: bucket, key: key, storageKey: storageKey)
        if let refusal = try S3Conditions(request.head.headers).readRefusal(info) { return refusal }

        var xml = S3XMLWriter(root: "GetObjectAttributesResponse")
        if asked.contains("ETag") { xml.element("ETag", S3Conditions.unquoted(S3Objects.etag(info))) }
        let manifest = asked.contains("ObjectParts") || asked.contains("Checksum")
            ? try await MultipartOperations.manifest(context, bucket: bucket, key: key, info: info) : nil
        if asked.contains("Checksum"),
           let checksum = try await S3ChecksumRecord.stored(context, for: info, recordKey: MultipartLayout.checksumKey(bucket: bucket, key: key)) {
            xml.open("Checksum")
            xml.element(checksum.element, checksum.value)
            xml.element("ChecksumType", checksum.type.rawValue)
            xml.close("Checksum")
        }
        if asked.contains("ObjectParts"), let manifest {
            let numbered = Array(manifest.sizes.enumerated()).map { (number: $0.offset + 1, size: $0.element) }.filter { $0.number > marker }
            let page = numbered.prefix(maxParts)
            xml.open("ObjectParts")
            xml.element("PartsCount", manifest.sizes.count)
            xml.element("PartNumberMarker", marker)
            if let last = page.last { xml.element("NextPartNumberMarker", last.number) }
            xml.element("MaxParts", maxParts)
            xml.element("IsTruncated", page.count < numbered.count)
            for part in page {
                xml.open("Part")
                xml.element("PartNumber", part.number)
                xml.element("Size", part.size)
                if manifest.checksums.count == manifest.sizes.count {
                    let checksum = manifest.checksums[part.number - 1]
                    xml.element(checksum.element, checksum.value)
                }
                xml.close("Part")
            }
            xml.close("ObjectParts")
        }
        if asked.contains("StorageClass") { xml.element("StorageClass", "STANDARD") }
        if asked.contains("ObjectSize") { xml.element("ObjectSize", info.size) }
        var response = MultipartOperations.xmlResponse(xml)
        response.headers.append(("Last-Modified", info.lastModified.httpDate))
        return response
    }

    /// The attributes `x-amz-object-attributes` names (comma-separated, at least one).
    static func attributes(_ request: S3Request) throws(S3Error) -> Set<String> {
        let values = request.head.headers.values("x-amz-object-attributes")
        let asked = values.flatMap { $0.split(separator: ",") }.map { String(ASCIIText.trimmed($0)) }.filter { !$0.isEmpty }
        guard !asked.isEmpty else {
            throw S3Error.invalidArgument("The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty: expected one or more of \(names.joined(separator: ", ")).",
                                          name: "x-amz-object-attributes")
        }
        for name in asked where !names.contains(name) {
            throw S3Error.invalidArgument("Invalid attribute name specified: expected one of \(names.joined(separator: ", ")), found \"\(name.prefix(40))\".",
                                          name: "x-amz-object-attributes", value: name)
        }
        return Set(asked)
    }
}
