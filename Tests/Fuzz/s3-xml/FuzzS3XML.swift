// libFuzzer target: S3Storage's XML reader (FoundationXML underneath) and the two
// documents it reads from a server, <Error> and <ListBucketResult> (docs/SECURITY.md).
// Built by Tests/Fuzz/build.sh together with Plugins/S3Storage/S3XML.swift.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzS3XML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    _ = try? S3XML.parse(bytes)
    _ = try? S3ErrorBody.parse(bytes)
    _ = try? S3ListPage.parse(bytes)
    return 0
}
