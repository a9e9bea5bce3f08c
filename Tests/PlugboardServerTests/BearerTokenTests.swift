import PlugboardServer
import Testing

/// `BearerToken.matches`: the scheme in any case, spaces after it, and the token compared
/// whole (through PlugboardBytes' `ConstantTime`), never a prefix, an extension or a
/// guess of the right length with one byte off.
@Suite struct BearerTokenTests {
    @Test func onlyTheWholeToken_matches() {
        let token = "s3cret-token"
        #expect(BearerToken.matches("Bearer s3cret-token", token: token))
        #expect(BearerToken.matches("bEARER   s3cret-token", token: token))
        for wrong in ["Bearer s3cret-tokeN", "Bearer s3cret-toke", "Bearer s3cret-token2", "Bearer ", "Bearer",
                      "Basic s3cret-token", "s3cret-token", "Bearer s3cret-token ", ""] {
            #expect(!BearerToken.matches(wrong, token: token), "\(wrong)")
        }
        #expect(!BearerToken.matches(nil, token: token))
    }
}
