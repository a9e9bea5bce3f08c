import PlugboardAPI

/// A body without framing: passed through as it arrives, checked at its end.
///
/// `@unchecked Sendable`: read by one task at a time (the ObjectBody contract).
final class CheckedBodyReader: @unchecked Sendable {
    private var upstream: ObjectBody.Iterator
    private let length: Int?
    private let checks: BodyChecks
    private let verified: VerifiedChecksums?
    private var total = 0
    private var finished = false
    private var failure: (any Error)?

    init(_ upstream: ObjectBody.Iterator, length: Int?, checks: BodyChecks, verified: VerifiedChecksums?) {
        self.upstream = upstream
        self.length = length
        self.checks = checks
        self.verified = verified
    }

    func next() async throws -> [UInt8]? {
        if let failure { throw failure }
        if finished { return nil }
        do {
            guard let chunk = try await upstream.next() else {
                if let length, total != length {
                    throw S3Error.incompleteBody(
                        "You did not provide the number of bytes specified by the Content-Length HTTP header: expected \(length), found \(total).")
                }
                let checked = try checks.verify(trailer: [])
                verified?.record(checked)
                finished = true
                return nil
            }
            total += chunk.count
            if let length, total > length {
                throw S3Error.invalidRequest("The body is longer than its Content-Length: expected \(length) bytes, found at least \(total).")
            }
            checks.update(chunk)
            return chunk
        } catch {
            failure = error
            throw error
        }
    }
}
