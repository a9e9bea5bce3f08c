import PlugboardAPI
import PlugboardHost

extension S3Router {
    /// What the S3 endpoint serves with: the key pairs requests are signed with, the region,
    /// and the domain of virtual-hosted addressing.
    ///
    /// `serve` fills it from its flags, the manifest's `s3` section and the environment, then
    /// calls ``validate()`` once before anything starts (argument-parser's shape): every
    /// rule of the S3 configuration is there, so the manifest only reads its section and the
    /// command line only reads its flags.
    public struct Configuration: Sendable {
        /// The key pairs, the manifest's first, then the environment's. A pair from the
        /// environment replaces a manifest pair with its ID (``effectiveCredentials``).
        public var credentials: [S3Credential]
        /// Answered by GetBucketLocation and HeadBucket, and required in signatures' scope.
        public var region: String
        /// With a domain, `bucket.domain` in `Host` names the bucket (virtual-hosted style).
        public var domain: String?
        /// Serve Signature Version 2 (the manifest's `s3.signatureV2`) beside SigV4: for
        /// older clients and appliances; off, V2 is `InvalidRequest` as AWS answers it.
        public var signatureV2: Bool
        /// What the configuration was read from, for the refusals that name it.
        public var sources: Sources

        /// Where a configuration came from: what ``validate()``'s refusals name.
        public struct Sources: Sendable {
            /// `--s3-listen` as it was given.
            public var listen: String
            /// The manifest the pairs were read from.
            public var manifestPath: String
            /// The environment variables of a pair that are not set.
            public var unsetVariables: [String]

            public init(listen: String = "", manifestPath: String = "", unsetVariables: [String] = []) {
                self.listen = listen
                self.manifestPath = manifestPath
                self.unsetVariables = unsetVariables
            }
        }

        public init(credentials: [S3Credential], region: String = "us-east-1", domain: String? = nil,
                    signatureV2: Bool = false, sources: Sources = Sources()) {
            self.credentials = credentials
            self.region = region
            self.domain = domain
            self.signatureV2 = signatureV2
            self.sources = sources
        }

        /// An access key ID is 3 to 128 printable ASCII characters, without spaces or `/`.
        public static let accessKeyIDLengths = 3...128

        /// The pairs the endpoint checks signatures against: ``credentials`` with a manifest
        /// pair dropped where the environment gives its ID.
        public var effectiveCredentials: [S3Credential] {
            let fromEnvironment = Set(credentials.compactMap { $0.isFromEnvironment ? $0.accessKeyID : nil })
            return credentials.filter { $0.isFromEnvironment || !fromEnvironment.contains($0.accessKeyID) }
        }

        /// Refuses a configuration the endpoint cannot serve with, the most basic mismatch
        /// first: the region and the domain (`usage`, as the flags they come from), then
        /// each pair in order (`manifest.invalid_value` naming where a manifest pair was
        /// written, `serve.weak_credential` naming an environment variable), then no pair at
        /// all (`serve.unprotected_listen`): there is no anonymous mode, on loopback either,
        /// since S3 clients always sign and a signature with no secret to check protects
        /// nothing. No message shows a secret.
        public func validate() throws(PlugboardError) {
            try validateAddressing()
            try validateCredentials()
        }

        /// The region and the domain alone: `serve` checks its flags before it reads the
        /// manifest the pairs come from.
        public func validateAddressing() throws(PlugboardError) {
            if region.isEmpty || region.count > 64 || !region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
                throw PlugboardError(.usage, "invalid --s3-region \"\(region.prefix(80))\"",
                                     detail: "Expected a region name of letters, digits and '-', such as us-east-1.")
            }
            if let domain, domain.isEmpty || domain.hasPrefix(".") || domain.contains("/") || domain.contains(":") {
                throw PlugboardError(.usage, "invalid --s3-domain \"\(domain.prefix(80))\"",
                                     detail: "Expected a host name such as s3.example.test, without a port.",
                                     hint: "Clients then address bucket b as b.s3.example.test.")
            }
        }

        /// The rules a manifest's `s3` pairs must keep that the file alone shows: every
        /// value written without `${...}` (its ID, its secret, a duplicate ID), refused
        /// whenever the manifest is read, by every command and every reload, as the
        /// manifest's own errors are (``PluginHost/Configuration/manifestRules``). A value
        /// that names variables is checked by ``validate()`` once `serve --s3-listen` has
        /// expanded it.
        public static func checkWritten(_ manifest: Manifest) throws(PlugboardError) {
            guard let settings = manifest.s3 else { return }
            var firstIndex: [String: Int] = [:]
            for credential in settings.writtenCredentials() {
                guard case .manifest(let place)? = credential.origin else { continue }
                try checkManifestPair(credential, place, writtenOnly: true, firstIndex: &firstIndex)
            }
        }

        /// The rules for one manifest pair (its ID, a duplicate of an earlier ID, its
        /// secret); `writtenOnly` leaves out a value that names variables.
        private static func checkManifestPair(_ credential: S3Credential, _ place: S3Credential.ManifestPlace, writtenOnly: Bool,
                                              firstIndex: inout [String: Int]) throws(PlugboardError) {
            if !(writtenOnly && place.accessKeyIDNamesVariables) {
                try checkAccessKeyID(credential.accessKeyID, place)
                if let first = firstIndex[credential.accessKeyID] { throw duplicate(place, first: first) }
                firstIndex[credential.accessKeyID] = place.index
            }
            if !(writtenOnly && place.secretNamesVariables) { try checkSecret(credential.secretAccessKey, place) }
        }

        private func validateCredentials() throws(PlugboardError) {
            var firstIndex: [String: Int] = [:]
            for credential in credentials {
                switch credential.origin {
                case .manifest(let place):
                    try Self.checkManifestPair(credential, place, writtenOnly: false, firstIndex: &firstIndex)
                case .environment(_, let secretVariable):
                    if let refusal = CredentialRule.refusal(credential.secretAccessKey, variable: secretVariable, what: "a secret access key") {
                        throw refusal
                    }
                case nil:
                    break
                }
            }
            guard credentials.isEmpty else { return }
            let missing = sources.unsetVariables
            throw PlugboardError(.serveUnprotected, "refusing to serve the S3 API without credentials",
                detail: "--s3-listen \(sources.listen) was given, the manifest \(ConfigValue.string(sources.manifestPath).description) has no \"s3\" credentials, and \(missing.joined(separator: " and ")) \(missing.count == 1 ? "is" : "are") not set: every S3 request is checked against a key pair (SigV4).",
                hint: "Add \"s3\": {\"credentials\": [{\"accessKeyId\": \"${S3_KEY_ID}\", \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}}]} to the manifest (docs/MANIFEST.md), or set PLUGBOARD_S3_ACCESS_KEY_ID and PLUGBOARD_S3_SECRET_ACCESS_KEY; give the S3 client the same pair (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).")
        }

        // MARK: the rules, worded for the manifest

        /// " once its variables are expanded" for a value with `${...}`s, so that the
        /// message says why a value that looks right in the file is refused.
        private static func suffix(_ namesVariables: Bool) -> String {
            namesVariables ? " once its variables are expanded" : ""
        }

        private static func checkAccessKeyID(_ id: String, _ place: S3Credential.ManifestPlace) throws(PlugboardError) {
            let count = id.unicodeScalars.count
            let rule = "An access key ID is 3 to 128 printable ASCII characters, without spaces or \"/\"."
            let suffix = suffix(place.accessKeyIDNamesVariables)
            guard accessKeyIDLengths.contains(count) else {
                throw PlugboardError(.manifestInvalidValue,
                    "\(place.accessKeyID): expected an access key ID of 3 to 128 characters, found \(count) character\(count == 1 ? "" : "s")\(suffix)",
                    detail: rule, hint: "Write the access key ID the S3 clients use, such as \"plugboard-admin\".")
            }
            if let offset = id.unicodeScalars.firstIndex(where: { !(0x21...0x7E).contains($0.value) || $0 == "/" }) {
                let position = id.unicodeScalars.distance(from: id.unicodeScalars.startIndex, to: offset) + 1
                let c = id.unicodeScalars[offset]
                let what = c == " " ? "a space" : c == "/" ? "a \"/\"" : "a character that is not printable ASCII"
                throw PlugboardError(.manifestInvalidValue,
                    "\(place.accessKeyID): expected an access key ID of printable ASCII without spaces or \"/\", found \(what) at character \(position)\(suffix)",
                    detail: rule, hint: "Use letters, digits and punctuation such as \"-\" and \"_\".")
            }
        }

        /// Never quotes the secret: only what about it breaks ``CredentialRule``.
        private static func checkSecret(_ secret: String, _ place: S3Credential.ManifestPlace) throws(PlugboardError) {
            guard let violation = CredentialRule.violation(secret, what: "a secret access key") else { return }
            let tooLong = secret.unicodeScalars.count > CredentialRule.lengths.upperBound
            throw PlugboardError(.manifestInvalidValue,
                "\(place.secretAccessKey): \(violation)\(suffix(place.secretNamesVariables))",
                detail: CredentialRule.text + " S3 clients sign every request with the secret.",
                hint: tooLong ? "Use a shorter secret." : CredentialRule.hint)
        }

        private static func duplicate(_ place: S3Credential.ManifestPlace, first: Int) -> PlugboardError {
            PlugboardError(.manifestInvalidValue,
                "\(place.accessKeyID): expected a unique access key ID, found the one of s3.credentials[\(first)] again",
                detail: "s3.credentials[\(first)] and s3.credentials[\(place.index)] have the same accessKeyId; a request signed with it could not tell which secret to check.",
                hint: "Give each key pair its own access key ID, or remove one of the two.")
        }
    }
}

extension S3Credential {
    var isFromEnvironment: Bool {
        if case .environment = origin { true } else { false }
    }
}
