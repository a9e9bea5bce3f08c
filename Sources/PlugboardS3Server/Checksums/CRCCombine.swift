/// The CRC of two pieces one after the other from the CRC of each and the second's
/// length, for the reflected CRCs whose register starts and ends inverted (CRC-32,
/// CRC-32C, CRC-64/NVME): zlib's `crc32_combine`, over GF(2) matrices of `width` bits.
enum CRCCombine {
    static func combine(_ first: UInt64, _ second: UInt64, lengthOfSecond length: Int, polynomial: UInt64, width: Int) -> UInt64 {
        guard length > 0 else { return first }
        func times(_ matrix: [UInt64], _ vector: UInt64) -> UInt64 {
            var sum: UInt64 = 0
            var vector = vector
            var row = 0
            while vector != 0 {
                if vector & 1 != 0 { sum ^= matrix[row] }
                vector >>= 1
                row += 1
            }
            return sum
        }
        func square(_ matrix: [UInt64]) -> [UInt64] { matrix.map { times(matrix, $0) } }
        // The operator that feeds one zero bit through the register, then two, then four.
        var odd = [UInt64](repeating: 0, count: width)
        odd[0] = polynomial
        for n in 1..<width { odd[n] = UInt64(1) << UInt64(n - 1) }
        var even = square(odd)
        odd = square(even)
        var crc = first
        var remaining = length
        // Each round squares the operator (one zero byte, two, four ...) and applies it
        // for each set bit of the length.
        repeat {
            even = square(odd)
            if remaining & 1 != 0 { crc = times(even, crc) }
            remaining >>= 1
            if remaining == 0 { break }
            odd = square(even)
            if remaining & 1 != 0 { crc = times(odd, crc) }
            remaining >>= 1
        } while remaining != 0
        return crc ^ second
    }
}
