/// Input that breaks HTTP/1.1's grammar, said two ways: as a refusal of what was received
/// (`summary`, `detail`, `hint`: the server answers a request with them) and as what was
/// expected (`expected`: the client names it beside the bytes it found in a response).
/// The codec has no dependency on PlugboardAPI, so each side wraps this in its own error.
public struct HTTPSyntaxError: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case emptyLine, obsoleteFolding, missingColon, invalidFieldName, invalidFieldValue
        case invalidNumber, numberTooLarge
        case invalidChunkSize, chunkSizeTooLarge, invalidChunkExtension
        case invalidStatusLine
        case invalidFieldForWriting
    }

    public var kind: Kind
    public var summary: String
    public var expected: String
    public var detail: String?
    public var hint: String?

    public init(_ kind: Kind, _ summary: String, expected: String, detail: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.summary = summary
        self.expected = expected
        self.detail = detail
        self.hint = hint
    }
}
