import PlugboardHTTP
import PlugboardTestSupport
import Testing

/// Random bytes and mutations of valid requests: the reader returns requests or
/// refusals, never traps, whatever arrives and however it is split.
@Suite struct FuzzTests {
    static let seeds = [
        "PUT /v1/objects/a%2Fb HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-Plugboard-Meta-A: b\r\n\r\nhello",
        "PUT /k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.0\r\n\r\n",
    ].map { Array($0.utf8) }
    static let interesting: [UInt8] = Array("\r\n :;,%0123456789abcdefABCDEF-+\t".utf8) + [0, 0x7F, 0x80, 0xFF]
    static let limits = HTTPLimits(maxRequestLineBytes: 256, maxHeaderBytes: 512, maxHeaderCount: 8, maxBodyBytes: 4096)

    @Test func randomBytes_neverCrash() {
        var rng = SplitMix64(state: 0x5EED_0005)
        for _ in 0..<3_000 {
            let count = Int.random(in: 0..<600, using: &rng)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let out = readAll(bytes, pieces: [Int.random(in: 1...64, using: &rng)], limits: Self.limits)
            #expect(!out.isEmpty)
        }
    }

    @Test func mutatedRequests_neverCrash() {
        var rng = SplitMix64(state: 0x5EED_0006)
        var accepted = 0
        for round in 0..<6_000 {
            var bytes = Self.seeds[round % Self.seeds.count]
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[at] = Self.interesting.randomElement(using: &rng) ?? 0
                case 1: bytes.insert(Self.interesting.randomElement(using: &rng) ?? 0, at: at)
                default: if bytes.count > 1 { bytes.remove(at: at) }
                }
            }
            let out = readAll(bytes, pieces: [Int.random(in: 1...32, using: &rng), 1], limits: Self.limits)
            if case .request? = out.first { accepted += 1 }
        }
        // Mutations keep some requests valid; a reader refusing everything would be broken too.
        #expect(accepted > 100)
    }
}
