/// Comparing a secret with caller input (a bearer token, a MAC, a signature) in time that
/// depends on the secret's length only, never on how much of it a guess got right: an
/// early return at the first differing byte would let a caller find the secret a byte at
/// a time by timing its refusals.
public enum ConstantTime {
    /// Whether `given` holds exactly the bytes of `expected`. Every byte of `expected` is
    /// compared, whatever `given`'s length, so a shorter or longer guess takes as long as
    /// a right one.
    public static func equal(_ expected: some Collection<UInt8>, _ given: some Collection<UInt8>) -> Bool {
        var difference: UInt8 = given.count == expected.count ? 0 : 1
        var index = given.startIndex
        for byte in expected {
            let other: UInt8 = index < given.endIndex ? given[index] : 0
            difference |= byte ^ other
            if index < given.endIndex { given.formIndex(after: &index) }
        }
        return difference == 0
    }
}
