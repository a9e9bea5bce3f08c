/// How RESTStorage shows text from its config or from a server in a message: quoted, with
/// control and non-ASCII characters escaped and long text cut, so that a message stays one
/// readable line whatever a misbehaving server sends.
enum RESTStorageText {
    static let maxShownCharacters = 120

    static func quote(_ text: some StringProtocol, maxCharacters: Int = maxShownCharacters) -> String {
        var out = "\""
        var shown = 0
        for scalar in text.unicodeScalars {
            if shown == maxCharacters {
                out += "..."
                break
            }
            shown += 1
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
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
