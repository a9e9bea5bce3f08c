import PlugboardBytes

/// `Authorization: Bearer <token>` checks in constant time: how long the comparison takes
/// depends on the expected token's length only, never on how much of it a guess got right.
public enum BearerToken {
    public static func matches(_ authorization: String?, token: String) -> Bool {
        guard let authorization else { return false }
        let presented = Array(authorization.utf8)
        let scheme = Array("bearer ".utf8)
        guard presented.count >= scheme.count,
              zip(presented.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) else { return false }
        return ConstantTime.equal(token.utf8, presented.dropFirst(scheme.count).drop { $0 == 32 })
    }
}
