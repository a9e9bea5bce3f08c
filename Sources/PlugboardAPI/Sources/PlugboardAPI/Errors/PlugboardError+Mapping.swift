extension PlugboardError {
    /// What the HTTP front ends answer for one of a plugin's own error codes: the status
    /// on both, and S3's error code on the S3 endpoint (PlugboardAPI 1.6).
    ///
    /// A plugin declares its mappings once, when it registers
    /// (``PluginRegistrar/mapErrors(_:)``); a code nobody mapped is answered
    /// `500 Internal Server Error`, as before. Only the statuses in ``allowedStatuses`` may
    /// be claimed, and only for codes outside ``reservedAreas``: the host's own codes
    /// already have their answers.
    ///
    /// ```swift
    /// try registrar.mapErrors(["quota.exceeded": .init(status: 403, s3Code: "QuotaExceeded")])
    /// ```
    public struct Mapping: Sendable, Hashable, CustomStringConvertible {
        /// The HTTP status, one of ``allowedStatuses``.
        public let status: Int
        /// S3's `<Code>`: ASCII letters and digits, starting with a letter, at most 64.
        public let s3Code: String

        /// A mapping; ``PluginRegistrar/mapErrors(_:)`` checks it.
        public init(status: Int, s3Code: String) {
            self.status = status
            self.s3Code = s3Code
        }

        public var description: String { "\(status) \(s3Code)" }

        /// The statuses a plugin may claim. Refusals a client can act on, whose answer
        /// needs no header the host would have to invent: not 401 or 407 (a challenge),
        /// 405 (`Allow`), 416 (`Content-Range`), 426 (`Upgrade`); not the host's own
        /// refusals of the request itself (408, 411, 412 for its conditions, 414, 417,
        /// 431); not 2xx, 3xx (304 breaks caches) or 5xx other than 503, which a client
        /// may retry (answered with `Retry-After`, as `storage.unavailable` is).
        public static let allowedStatuses: [Int] = [400, 403, 404, 409, 410, 413, 415, 422, 423, 428, 429, 451, 503]

        /// The areas of the codes PlugboardAPI and the host raise (docs/ERRORS.md has a
        /// section for each): their answers are the host's, so no plugin remaps them.
        public static let reservedAreas: Set<String> = [
            "cli", "container", "etcd", "fleet", "host", "http", "loader", "manifest", "plugin", "reload", "s3",
            "isolation", "sandbox", "serve", "storage",
        ]

        /// The longest code a mapping takes; codes are short identifiers.
        public static let maximumCodeLength = 128

        /// Refuses a mapping outside the rules with `plugin.error_mapping_invalid`, naming
        /// the code, what was given and what is allowed.
        public static func check(_ mapping: Mapping, for code: Code) throws(PlugboardError) {
            let raw = code.rawValue
            let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
            let wellFormed = raw.utf8.count <= maximumCodeLength && parts.count >= 2
                && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy(isCodeByte) }
            guard wellFormed else {
                throw PlugboardError(.errorMappingInvalid, "cannot map error code \(quoted(raw, maxCharacters: 64))",
                                     detail: "Expected area.name in lower-case letters, digits and underscores, at most \(maximumCodeLength) characters.",
                                     hint: "Map the codes the plugin throws, such as \"quota.exceeded\".")
            }
            guard !reservedAreas.contains(String(code.area)) else {
                throw PlugboardError(.errorMappingInvalid, "cannot map error code \"\(raw)\": the \(code.area).* codes are the host's",
                                     detail: "The areas \(reservedAreas.sorted().joined(separator: ", ")) have their answers already (docs/ERRORS.md).",
                                     hint: "Give the plugin's own errors a code in an area of its own, such as \"quota.exceeded\".")
            }
            guard allowedStatuses.contains(mapping.status) else {
                throw PlugboardError(.errorMappingInvalid, "cannot map error code \"\(raw)\" to status \(mapping.status)",
                                     detail: "Allowed statuses: \(allowedStatuses.map(String.init).joined(separator: ", ")); found \(mapping.status).",
                                     hint: "Pick one of the allowed statuses; docs/ERRORS.md says why the others are the host's.")
            }
            let s3 = Array(mapping.s3Code.utf8)
            guard (1...64).contains(s3.count), s3[0].isASCIILetter, s3.allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit }) else {
                throw PlugboardError(.errorMappingInvalid,
                                     "cannot map error code \"\(raw)\" to S3 code \(quoted(mapping.s3Code, maxCharacters: 80))",
                                     detail: "Expected 1 to 64 ASCII letters and digits starting with a letter, as S3's codes are (QuotaExceeded).",
                                     hint: "Name the S3 code in S3's style, such as \"QuotaExceeded\".")
            }
        }

        /// The mapping the generation `resolver` sees has for `code`, or nil: the
        /// registration ``PluginRegistrar/mapErrors(_:)`` made under the code's name.
        public static func registered(for code: Code, in resolver: some ServiceResolver) -> Mapping? {
            guard !reservedAreas.contains(String(code.area)) else { return nil }
            return try? resolver.resolve(Mapping.self, name: code.rawValue)
        }

        private static func isCodeByte(_ byte: UInt8) -> Bool {
            (byte >= 0x61 && byte <= 0x7A) || byte.isASCIIDigit || byte == 0x5F
        }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool { (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A) }
    fileprivate var isASCIIDigit: Bool { self >= 0x30 && self <= 0x39 }
}
