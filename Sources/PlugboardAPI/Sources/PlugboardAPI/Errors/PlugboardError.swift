/// The one error type of Plugboard: a stable code, a primary message, an optional detail
/// and an optional hint, in the shape of PostgreSQL's `ereport`.
///
/// The primary message is short, lower-case and has no final period
/// (`incompatible plugin "S3Storage": API version mismatch`). The detail is a factual
/// sentence (`Host provides PlugboardAPI 1.2, the plugin was built against 2.0.`), the hint
/// says how to fix it (`Rebuild the plugin against this host's PlugboardAPI.`). Tests and
/// scripts match on ``code``, never on wording.
///
/// Some errors are cheap to raise and expensive to explain (a resolve miss lists the
/// registered services that come closest). Those carry a describer that runs only when the
/// message is first read, so that a miss on the hot path costs no string work.
public struct PlugboardError: Error, Sendable, CustomStringConvertible {
    /// The stable, machine-readable code, such as `container.not_registered`.
    public let code: Code
    /// The underlying error, for example what a factory threw.
    public let underlying: (any Error)?
    private let text: any ErrorText

    /// Creates an error whose texts are known now.
    public init(_ code: Code, _ message: String, detail: String? = nil, hint: String? = nil,
                underlying: (any Error)? = nil) {
        self.code = code
        self.underlying = underlying
        self.text = FixedText(Rendered(message: message, detail: detail, hint: hint))
    }

    /// Creates an error whose texts `text` renders when first read: for the container's
    /// own lazy errors, whose describer is one object rather than a closure and its lock.
    init(_ code: Code, text: any ErrorText) {
        self.code = code
        self.underlying = nil
        self.text = text
    }

    /// Creates an error whose texts are computed on first use.
    ///
    /// The closure runs at most once, when ``message``, ``detail`` or ``hint`` is first read.
    public init(_ code: Code, underlying: (any Error)? = nil,
                describe: @escaping @Sendable () -> Rendered) {
        self.code = code
        self.underlying = underlying
        self.text = DescribedText(describe)
    }

    /// The primary message: short, lower-case, no final period.
    public var message: String { text.rendered.message }
    /// Facts about the failure, as a complete sentence, or nil.
    public var detail: String? { text.rendered.detail }
    /// What to do about it, as a complete sentence, or nil.
    public var hint: String? { text.rendered.hint }

    /// `code: message`, then `DETAIL:` and `HINT:` lines when present.
    public var description: String {
        let r = text.rendered
        var out = "\(code): \(r.message)"
        if let d = r.detail { out += "\nDETAIL: \(d)" }
        if let h = r.hint { out += "\nHINT: \(h)" }
        return out
    }

    /// The three texts of an error.
    public struct Rendered: Sendable, Equatable {
        public var message: String
        public var detail: String?
        public var hint: String?
        public init(message: String, detail: String? = nil, hint: String? = nil) {
            self.message = message
            self.detail = detail
            self.hint = hint
        }
    }
}

extension PlugboardError {
    /// A stable error code, `area.name` in lower case.
    ///
    /// A struct rather than an enum so that any module (the host, a plugin) can add codes
    /// without a breaking change; the codes of this package are static members in
    /// `PlugboardError+Codes.swift` and listed in `docs/ERRORS.md`.
    public struct Code: Hashable, Sendable, CustomStringConvertible,
        ExpressibleByStringLiteral {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }
        /// The part before the dot: `container`, `plugin`, `storage`, ...
        public var area: Substring { rawValue.prefix { $0 != "." } }
    }
}
