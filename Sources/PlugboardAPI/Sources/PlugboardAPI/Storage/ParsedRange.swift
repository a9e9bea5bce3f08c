/// What a `Range` header asks for, as ``ByteRange/parse(header:)`` reads it.
///
/// Three outcomes because HTTP treats them three ways: one range is served as a 206 (or
/// 416 when unsatisfiable), several are served as the whole object (a 200, as S3 does,
/// since multipart/byteranges bodies are not worth their cost to any client we serve),
/// and an invalid header is ignored (RFC 9110 section 14.2: a 200 with the whole object).
///
/// `@frozen`, like ``ByteRange``: a header is one of these three, for good.
@frozen
public enum ParsedRange: Sendable, Hashable {
    /// Exactly one range: pass it to a ranged `get`.
    case single(ByteRange)
    /// More than one range, each well formed: serve the whole object.
    case multiple([ByteRange])
    /// Not a `bytes=` range set this parser understands: ignore the header.
    case invalid
}
