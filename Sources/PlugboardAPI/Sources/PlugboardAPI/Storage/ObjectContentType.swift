/// The rules for an object's content type, shared by every ``ObjectStorage`` backend.
///
/// A content type is stored as given, without parsing it as a media type: 1 to 1024 bytes
/// of printable ASCII (0x20 to 0x7E) without a leading or trailing space. No control
/// characters means it can always travel as an HTTP header. When `put` is given `nil`,
/// the object's content type is ``defaultValue``.
public enum ObjectContentType {
    /// The content type of an object stored without one: `application/octet-stream`.
    public static let defaultValue = "application/octet-stream"

    /// The longest content type, in bytes: 1024.
    public static let maxByteCount = 1024

    /// The content type to store for the `contentType` argument of `put`.
    ///
    /// - Returns: ``defaultValue`` for `nil`, otherwise `contentType` unchanged.
    /// - Throws: `storage.invalid_argument` when `contentType` is empty, longer than 1024
    ///   bytes, holds a byte outside 0x20 to 0x7E, or starts or ends with a space.
    public static func resolve(_ contentType: String?) throws(PlugboardError) -> String {
        guard let contentType else { return defaultValue }
        let count = contentType.utf8.count
        if count == 0 || count > maxByteCount {
            throw PlugboardError(
                .storageInvalidArgument, "invalid content type \(StorageText.quote(contentType))",
                detail: "A content type is 1 to \(maxByteCount) bytes; this one has \(count) bytes.",
                hint: "Pass nil to store the object as \(defaultValue), or a media type such as \"text/plain\".")
        }
        switch StorageText.headerTextProblem(contentType) {
        case .byte(let byte, let offset)?:
            throw PlugboardError(
                .storageInvalidArgument, "invalid content type \(StorageText.quote(contentType))",
                detail: "A content type is printable ASCII (0x20 to 0x7E); this one has the byte \(StorageText.hexByte(byte)) at offset \(offset).",
                hint: "Pass a media type such as \"text/plain; charset=utf-8\".")
        case .edgeSpace?:
            throw PlugboardError(
                .storageInvalidArgument, "invalid content type \(StorageText.quote(contentType))",
                detail: "A content type may not start or end with a space; this one does.",
                hint: "Trim the content type.")
        case nil:
            break
        }
        return contentType
    }
}
