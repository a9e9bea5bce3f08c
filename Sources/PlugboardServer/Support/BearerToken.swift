/// `Authorization: Bearer <token>` checks in constant time: how long the comparison takes
/// depends on the expected token's length only, never on how much of it a guess got right.
public enum BearerToken {
    public static func matches(_ authorization: String?, token: String) -> Bool {
        guard let authorization else { return false }
        let presented = Array(authorization.utf8)
        let scheme = Array("bearer ".utf8)
        guard presented.count >= scheme.count,
              zip(presented.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) else { return false }
        let given = presented.dropFirst(scheme.count).drop { $0 == 32 }
        let expected = Array(token.utf8)
        var difference: UInt8 = given.count == expected.count ? 0 : 1
        var i = given.startIndex
        for byte in expected {
            let other: UInt8 = i < given.endIndex ? given[i] : 0
            difference |= byte ^ other
            if i < given.endIndex { i += 1 }
        }
        return difference == 0
    }
}
