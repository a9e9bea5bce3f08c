/// Writes a message head (a request or status line, fields, the empty line) into one byte
/// buffer, piece by piece: no string interpolation, which showed in the server's profile
/// at one head a response.
///
/// What is written is checked, because a CR or LF in a name or value would end the field
/// early and smuggle in another (header injection). A caller chooses what that costs:
/// ``field(_:_:)`` refuses the field (the client, whose fields come from its caller), and
/// ``field(_:replacingControls:)`` writes such bytes as spaces (the server, which must
/// answer even when a stored value holds one).
public struct HTTPHeadWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(reserving capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// `METHOD SP target SP HTTP/1.1 CRLF`; a method that is not a token, or a target with
    /// a byte outside visible ASCII, is refused.
    public mutating func requestLine(method: String, target: String) throws(HTTPSyntaxError) {
        guard !method.isEmpty, method.utf8.allSatisfy(HTTPByte.isToken) else {
            throw Self.refusal("a request method is not a token", method, expected: "a request method that is a token")
        }
        guard !target.isEmpty, target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Self.refusal("a request target holds a byte outside visible ASCII", target, expected: "a request target of visible ASCII")
        }
        bytes.append(contentsOf: method.utf8)
        bytes.append(HTTPByte.space)
        bytes.append(contentsOf: target.utf8)
        bytes.append(contentsOf: " HTTP/1.1\r\n".utf8)
    }

    /// `HTTP/1.x SP status SP reason CRLF`.
    public mutating func statusLine(minorVersion: Int, status: Int, reason: String) {
        bytes.append(contentsOf: (minorVersion == 0 ? "HTTP/1.0 " : "HTTP/1.1 ").utf8)
        appendDecimal(status)
        bytes.append(HTTPByte.space)
        bytes.append(contentsOf: reason.utf8)
        bytes.append(contentsOf: Self.crlf)
    }

    /// `name: value CRLF`, refused when the name is not a token or the value holds a
    /// byte that is not field text.
    public mutating func field(_ name: String, _ value: String) throws(HTTPSyntaxError) {
        guard !name.isEmpty, name.utf8.allSatisfy(HTTPByte.isToken) else {
            throw Self.refusal("a header field name is not a token", name, expected: "a header field name that is a token")
        }
        guard value.utf8.allSatisfy(HTTPByte.isFieldValue) else {
            throw Self.refusal("a header field value holds a CR, LF or other control", value,
                               expected: "a header field value without CR, LF or other controls")
        }
        appendField(name, value)
    }

    /// `name: value CRLF` with every byte of `value` that is not field text written as a
    /// space. `name` is the caller's own constant.
    public mutating func field(_ name: String, replacingControls value: String) {
        // Checked first, so that the usual value is appended in one copy.
        if value.utf8.allSatisfy(HTTPByte.isFieldValue) {
            appendField(name, value)
            return
        }
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: ": ".utf8)
        for b in value.utf8 { bytes.append(HTTPByte.isFieldValue(b) ? b : HTTPByte.space) }
        bytes.append(contentsOf: Self.crlf)
    }

    /// `name: decimal CRLF`, without making a string of the number.
    public mutating func field(_ name: String, decimal value: Int) {
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: ": ".utf8)
        appendDecimal(value)
        bytes.append(contentsOf: Self.crlf)
    }

    /// The empty line that ends the head; the buffer is complete after it.
    public mutating func end() {
        bytes.append(contentsOf: Self.crlf)
    }

    private mutating func appendField(_ name: String, _ value: String) {
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: ": ".utf8)
        bytes.append(contentsOf: value.utf8)
        bytes.append(contentsOf: Self.crlf)
    }

    private mutating func appendDecimal(_ value: Int) {
        guard value > 0 else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        // Room for the digits first, then each written in place from the last: no array of
        // digits and no reversed slice (which copied, two allocations a response).
        var count = 0
        var n = value
        while n > 0 {
            count += 1
            n /= 10
        }
        bytes.append(contentsOf: repeatElement(0x30, count: count))
        var i = bytes.count - 1
        n = value
        while n > 0 {
            bytes[i] = UInt8(truncatingIfNeeded: 0x30 + n % 10)
            n /= 10
            i -= 1
        }
    }

    private static let crlf: [UInt8] = [13, 10]

    /// The refusal of `found`, shown with its controls as `?` and cut at 40 characters.
    private static func refusal(_ what: String, _ found: String, expected: String) -> HTTPSyntaxError {
        let scalars = found.unicodeScalars
        let shown = String(scalars.prefix(40).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return HTTPSyntaxError(.invalidFieldForWriting, "\(what): \"\(shown)\(scalars.count > 40 ? "..." : "")\"", expected: expected)
    }
}
