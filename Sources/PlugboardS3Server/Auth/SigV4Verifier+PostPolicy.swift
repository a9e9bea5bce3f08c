import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

extension SigV4Verifier {
    /// The form fields that sign a browser upload (POST Object) with SigV4.
    struct PostSignature: Sendable {
        /// `x-amz-algorithm`: `AWS4-HMAC-SHA256`.
        var algorithm: String
        /// `x-amz-credential`: `AKID/20261201/us-east-1/s3/aws4_request`.
        var credential: String
        /// `x-amz-date`: `20261201T110000Z`, the day of the credential's scope.
        var date: String
        /// `policy`: the base64 text that is signed, as sent.
        var policy: String
        /// `x-amz-signature`: hex HMAC-SHA256 of ``policy`` with the scope's signing key.
        var signature: String
    }

    /// Verifies a browser upload's signature and answers the access key that made it.
    ///
    /// The string signed is the policy's base64 text itself (no canonical request: the
    /// policy's conditions, checked after this, are what binds the form). The credential's
    /// scope is checked as a request's is (service, region, day of `x-amz-date`); the
    /// form's time may lie in the past, since the policy's expiration says how long the
    /// form serves, but not more than the allowed skew in the future.
    func authenticatePost(_ form: PostSignature, now: Timestamp) throws(S3Error) -> String {
        guard form.algorithm == Self.algorithm else {
            throw S3Error.invalidArgument("x-amz-algorithm only supports \"\(Self.algorithm)\": found \"\(form.algorithm.prefix(40))\".",
                                          name: "x-amz-algorithm", value: form.algorithm)
        }
        guard let time = Self.parseAmzDate(form.date) else {
            throw S3Error.invalidArgument(
                "x-amz-date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\" (20130524T000000Z): found \"\(form.date.prefix(40))\".",
                name: "x-amz-date", value: form.date)
        }
        let parts = form.credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        func malformed(_ detail: String) -> S3Error {
            S3Error.invalidArgument("Invalid x-amz-credential: \(detail)", name: "x-amz-credential", value: form.credential)
        }
        guard parts.count >= 5, !parts[0].isEmpty else {
            throw malformed("expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\", found \"\(form.credential.prefix(128))\".")
        }
        let n = parts.count
        let accessKeyID = parts[..<(n - 4)].joined(separator: "/")
        let (day, scopeRegion, service, terminator) = (parts[n - 4], parts[n - 3], parts[n - 2], parts[n - 1])
        guard terminator == "aws4_request" else {
            throw malformed("the scope's terminal \"\(terminator.prefix(32))\" is wrong; expecting \"aws4_request\".")
        }
        guard service == "s3" else { throw malformed("incorrect service \"\(service.prefix(32))\"; expecting \"s3\".") }
        if let region, scopeRegion != region {
            throw malformed("the region \"\(scopeRegion.prefix(32))\" is wrong; expecting \"\(region)\".")
        }
        guard !scopeRegion.isEmpty else { throw malformed("the scope names no region; expecting \"\(region ?? "us-east-1")\".") }
        guard day == String(form.date.prefix(8)) else {
            throw malformed("the scope's date \"\(day.prefix(16))\" must be the day of x-amz-date, \(form.date.prefix(8)).")
        }
        let signing = try signingKey(SigningScope(accessKeyID: accessKeyID, day: day, region: scopeRegion))
        if time.seconds > now.seconds + Int64(maxSkewSeconds) {
            throw S3Error.accessDenied(
                "Invalid according to Policy: the form is not valid yet: its x-amz-date \(Self.isoSeconds(time)) is more than \(maxSkewSeconds) seconds after the server's time \(Self.isoSeconds(now)).")
        }
        var computed: [UInt8] = []
        computed.reserveCapacity(2 * HMACSHA256.byteCount)
        HexDigits.appendLower(try Self.hmac(Array(form.policy.utf8), key: signing.key), to: &computed)
        guard Self.constantTimeEqual(computed, form.signature) else {
            throw S3Error("SignatureDoesNotMatch", status: 403,
                          "The request signature we calculated does not match the signature you provided. Check your key and signing method: the server signed the policy field (the StringToSign below) with the secret of \(accessKeyID.prefix(128)) for \(day)/\(scopeRegion)/s3, and found a different x-amz-signature (\(form.signature.prefix(64))).",
                          fields: [("AWSAccessKeyId", String(accessKeyID.prefix(128))), ("StringToSign", String(form.policy.prefix(Self.maxPolicyEcho))),
                                   ("SignatureProvided", String(form.signature.prefix(64)))])
        }
        signing.remember()
        return accessKeyID
    }

    /// The most of a policy a refusal repeats.
    static let maxPolicyEcho = 4096
}
