/// How much of a request the server reads before refusing it. Every limit is checked
/// before the bytes it guards are kept, so a hostile client costs at most these amounts.
public struct HTTPLimits: Sendable, Equatable {
    /// The request line (method, target, version), without its CRLF; beyond: 414.
    public var maxRequestLineBytes: Int
    /// The header section after the request line, CRLFs included; beyond: 431.
    public var maxHeaderBytes: Int
    /// Header fields in one request (trailer fields of a chunked body count too); beyond: 431.
    public var maxHeaderCount: Int
    /// The decoded body; beyond: 413.
    public var maxBodyBytes: Int

    public init(maxRequestLineBytes: Int = 8192, maxHeaderBytes: Int = 16_384, maxHeaderCount: Int = 100,
                maxBodyBytes: Int = 5 << 30) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}
