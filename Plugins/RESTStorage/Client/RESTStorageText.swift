import PlugboardAPI

/// How RESTStorage shows text from its config or from a server in a message:
/// PlugboardAPI's quoting (escaped, one line, long text cut), so whatever a misbehaving
/// server sends cannot break a message apart.
enum RESTStorageText {
    static let maxShownCharacters = 120

    static func quote(_ text: some StringProtocol, maxCharacters: Int = maxShownCharacters) -> String {
        PlugboardError.quoted(String(text), maxCharacters: maxCharacters)
    }

    /// The start of a response body for a message: its text quoted when it is UTF-8,
    /// otherwise its size.
    static func describeBody(_ body: [UInt8]) -> String {
        if body.isEmpty { return "an empty body" }
        guard let text = String(validating: body.prefix(maxShownCharacters * 4), as: UTF8.self) else {
            return "\(body.count) bytes that are not UTF-8 text"
        }
        return "the body \(quote(text))"
    }
}
