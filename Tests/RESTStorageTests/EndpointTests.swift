import PlugboardAPI
import RESTStorageClient
import Testing

/// Keys travel percent-encoded byte by byte: everything but `A-Z a-z 0-9 - _ ~`.
@Suite struct EndpointTests {
    @Test(arguments: [
        ("a", "a"),
        ("AZaz09-_~", "AZaz09-_~"),
        (".", "%2E"),
        ("..", "%2E%2E"),
        ("a/../b", "a%2F%2E%2E%2Fb"),
        ("/lead//double/", "%2Flead%2F%2Fdouble%2F"),
        ("a b+c%d", "a%20b%2Bc%25d"),
        ("caf\u{E9}", "caf%C3%A9"),
        ("cafe\u{301}", "cafe%CC%81"),
        ("?#&=", "%3F%23%26%3D"),
        ("\u{1F600}", "%F0%9F%98%80"),
        ("\u{7F}\u{1}", "%7F%01"),
    ])
    func percentEncodesEveryByteButTheUnreserved(key: String, encoded: String) {
        #expect(Endpoint.percentEncode(key) == encoded)
    }

    @Test func everyByteValueRoundTripsThroughTheEncoding() {
        // U+0001 to U+00FF as one string: every one-byte value and the two-byte forms.
        var scalars = String.UnicodeScalarView()
        for value in UInt8(1)...UInt8(255) { scalars.append(Unicode.Scalar(value)) }
        let text = String(scalars)
        let encoded = Endpoint.percentEncode(text)
        #expect(encoded.utf8.allSatisfy { $0 < 0x80 })
        #expect(!encoded.contains(".") && !encoded.contains("/"))
        #expect(decode(encoded) == Array(text.utf8))
    }

    @Test func objectURLsKeepTheBasePathPrefixAndDropTrailingSlashes() {
        #expect(Endpoint(base: "http://h:1").object("a/b") == "http://h:1/v1/objects/a%2Fb")
        #expect(Endpoint(base: "https://h/store/").object("x") == "https://h/store/v1/objects/x")
        #expect(Endpoint(base: "http://h//").base == "http://h")
    }

    @Test func listingURLsSendTheCursorWheneverItIsGiven_evenEmpty() {
        let endpoint = Endpoint(base: "http://h")
        #expect(endpoint.listing(prefix: "", limit: 1000, cursor: nil) == "http://h/v1/objects?prefix=&limit=1000")
        #expect(endpoint.listing(prefix: "a/b.", limit: 5, cursor: "") == "http://h/v1/objects?prefix=a%2Fb%2E&limit=5&cursor=")
        #expect(endpoint.listing(prefix: "p", limit: 2, cursor: "YQ==") == "http://h/v1/objects?prefix=p&limit=2&cursor=YQ%3D%3D")
    }

    private func decode(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "%"), bytes.count >= 2,
               let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return out
    }
}
