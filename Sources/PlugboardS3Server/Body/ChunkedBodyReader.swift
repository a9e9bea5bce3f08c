import PlugboardAPI

/// An `aws-chunked` body: each chunk decoded (and its signature checked) before it is
/// yielded; the checks run when the raw body ends, before the decoded body does.
///
/// `@unchecked Sendable`: read by one task at a time (the ObjectBody contract).
final class ChunkedBodyReader: @unchecked Sendable {
    private var upstream: ObjectBody.Iterator
    private var parser: AWSChunkedParser
    private let checks: BodyChecks
    private let verified: VerifiedChecksums?
    private var finished = false
    private var failure: (any Error)?

    init(_ upstream: ObjectBody.Iterator, parser: AWSChunkedParser, checks: BodyChecks, verified: VerifiedChecksums?) {
        self.upstream = upstream
        self.parser = parser
        self.checks = checks
        self.verified = verified
    }

    func next() async throws -> [UInt8]? {
        if let failure { throw failure }
        do {
            return try await pull()
        } catch {
            failure = error
            throw error
        }
    }

    private func pull() async throws -> [UInt8]? {
        while !finished {
            if let chunk = try parser.step() {
                checks.update(chunk)
                return chunk
            }
            guard let raw = try await upstream.next() else {
                try parser.finish()
                let checked = try checks.verify(trailer: parser.trailers)
                verified?.record(checked)
                finished = true
                return nil
            }
            try parser.feed(raw)
        }
        return nil
    }
}
