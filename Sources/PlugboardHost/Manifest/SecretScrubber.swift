import PlugboardAPI
import PlugboardJSON

/// Hides the secrets the host knows in every text a plugin hands back: its errors (with
/// their details, hints and underlying errors), the lines it logs, the version it declares.
///
/// A plugin may quote a secret that landed in a field it validates (`${AWS_SECRET_ACCESS_KEY}`
/// written in `region`), and quoting cuts long texts at 80 characters
/// (`PlugboardError.quoted`). A scrubber that matched whole values after that would let a
/// long secret's first 80 characters through, so this one hides a run of eight characters
/// or more that is a piece of a secret where it stands as a cut or quoted secret would:
/// each of its ends is the secret's own end, the text's end, or a character that is not
/// a letter or digit. A piece that runs into other letters or digits, where the secret
/// has other ones, is ordinary text sharing characters with a secret (the S3 front end's
/// `_plugboard-s3/` when a secret begins `plugboard-s`) and is shown; a secret met whole
/// is hidden wherever it is, since both its ends are its own. A secret of four to seven
/// characters is hidden where it occurs whole. Each hidden run becomes one
/// ``ConfigSecrets/marker``. docs/SECURITY.md states the rule.
///
/// The secrets are the resolved values of every secret of the manifest's configs (see
/// ``ConfigSecrets``), of every secret access key of the manifest's `s3` object (as read
/// at start), and of every environment variable whose name looks secret
/// (`AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`): a plugin may read those itself.
public struct SecretScrubber: Sendable {
    /// No secrets: every text passes unchanged.
    public static let none = SecretScrubber(secrets: [String]())

    /// The secrets of four to seven bytes, matched whole.
    private let short: [[UInt8]]
    /// Every eight-byte window of every longer secret, packed into an integer.
    private let pieces: Set<UInt64>
    /// The first and the last window of every longer secret: a run of pieces that begins
    /// (ends) with one of these begins (ends) where a secret does.
    private let heads: Set<UInt64>
    private let tails: Set<UInt64>
    /// The secrets, for handing to a preflight child.
    public let secrets: [String]

    /// Shorter secrets are not hidden: they would hide ordinary words.
    static let minimumLength = 4
    /// The length of a piece of a secret that is hidden wherever it occurs.
    static let pieceLength = 8

    public init(secrets: some Sequence<String>) {
        let kept = Set(secrets.filter { $0.utf8.count >= Self.minimumLength }).sorted()
        self.secrets = kept
        var short: [[UInt8]] = []
        var pieces = Set<UInt64>()
        var heads = Set<UInt64>()
        var tails = Set<UInt64>()
        for secret in kept {
            let bytes = Array(secret.utf8)
            guard bytes.count >= Self.pieceLength else { short.append(bytes); continue }
            for start in 0...(bytes.count - Self.pieceLength) { pieces.insert(Self.pack(bytes, at: start)) }
            heads.insert(Self.pack(bytes, at: 0))
            tails.insert(Self.pack(bytes, at: bytes.count - Self.pieceLength))
        }
        self.short = short.sorted { $0.count > $1.count }
        self.pieces = pieces
        self.heads = heads
        self.tails = tails
    }

    /// The secrets of `plugins`' resolved configs, of the environment's secret-looking
    /// variables, and `extra` (the S3 API's secret access keys from the manifest's `s3`).
    init(plugins: [ManifestPlugin], configs: [String: PluginConfig], environment: [String: String], extra: [String] = []) {
        var found = environment.filter { ConfigSecrets.isSecretKey($0.key) }.map(\.value) + extra
        for plugin in plugins {
            guard let config = configs[plugin.name] else { continue }
            ConfigSecrets.secretValues(raw: plugin.rawConfig, resolved: .object(config.values), into: &found)
        }
        self.init(secrets: found)
    }

    public var isEmpty: Bool { secrets.isEmpty }

    /// `text` with every piece of a secret replaced by the marker.
    public func scrub(_ text: String) -> String {
        guard !isEmpty else { return text }
        let bytes = Array(text.utf8)
        var hidden = [Bool](repeating: false, count: bytes.count)
        var any = false
        if bytes.count >= Self.pieceLength {
            var piece = [Bool](repeating: false, count: bytes.count)
            for start in 0...(bytes.count - Self.pieceLength) where pieces.contains(Self.pack(bytes, at: start)) {
                for i in start..<(start + Self.pieceLength) { piece[i] = true }
            }
            var start = 0
            while start < bytes.count {
                guard piece[start] else { start += 1; continue }
                var end = start
                while end < bytes.count && piece[end] { end += 1 }
                if standsAlone(bytes, start, end) {
                    for i in start..<end { hidden[i] = true }
                    any = true
                }
                start = end
            }
        }
        for secret in short where bytes.count >= secret.count {
            for start in 0...(bytes.count - secret.count) where bytes[start..<(start + secret.count)].elementsEqual(secret) {
                for i in start..<(start + secret.count) { hidden[i] = true }
                any = true
            }
        }
        guard any else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if hidden[i] {
                out += ConfigSecrets.marker.utf8
                while i < bytes.count && hidden[i] { i += 1 }
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        // A cut through a multi-byte character leaves a replacement character, not bad UTF-8.
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether the run of pieces `bytes[start..<end]` stands where a secret, cut or whole,
    /// would: at each end the secret's own end, the text's end, or no letter or digit.
    private func standsAlone(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Bool {
        func isLetterOrDigit(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
        }
        let left = start == 0 || !isLetterOrDigit(bytes[start - 1]) || heads.contains(Self.pack(bytes, at: start))
        let right = end == bytes.count || !isLetterOrDigit(bytes[end]) || tails.contains(Self.pack(bytes, at: end - Self.pieceLength))
        return left && right
    }

    public func scrub(_ text: String?) -> String? { text.map { scrub($0) } }

    /// `error` with its texts, and those of the errors under it, scrubbed; the same error
    /// when nothing in it is secret.
    public func scrub(_ error: PlugboardError) -> PlugboardError {
        guard !isEmpty else { return error }
        return scrubbed(error).error
    }

    private func scrubbed(_ error: PlugboardError) -> (error: PlugboardError, changed: Bool) {
        let message = scrub(error.message), detail = scrub(error.detail), hint = scrub(error.hint)
        let underlying = error.underlying.map { scrubbed(any: $0) }
        guard message != error.message || detail != error.detail || hint != error.hint || underlying?.changed == true else {
            return (error, false)
        }
        return (PlugboardError(error.code, message, detail: detail, hint: hint, underlying: underlying?.error), true)
    }

    private func scrubbed(any error: any Error) -> (error: any Error, changed: Bool) {
        if let e = error as? PlugboardError {
            let r = scrubbed(e)
            return (r.error, r.changed)
        }
        let text = "\(error)"
        let scrubbed = scrub(text)
        return scrubbed == text ? (error, false) : (ScrubbedError(description: scrubbed), true)
    }

    func scrub(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let s): return .string(scrub(s))
        case .array(let a): return .array(a.map { scrub($0) })
        case .dictionary(let d): return .dictionary(d.mapValues { scrub($0) })
        @unknown default: return .string(ConfigSecrets.marker)
        }
    }

    private static func pack(_ bytes: [UInt8], at start: Int) -> UInt64 {
        var word: UInt64 = 0
        for i in start..<(start + pieceLength) { word = word << 8 | UInt64(bytes[i]) }
        return word
    }
}

/// An underlying error that is not a ``PlugboardError``, kept as its scrubbed text.
struct ScrubbedError: Error, CustomStringConvertible {
    let description: String
}

/// The handler behind a plugin's logger: scrubs each line's message and metadata, then
/// hands it to the host's handler.
struct ScrubbingLogHandler: LogHandler {
    let base: any LogHandler
    let scrubber: SecretScrubber

    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        base.log(level: level, label: label, message: scrubber.scrub(message), metadata: metadata.mapValues { scrubber.scrub($0) })
    }
}

extension Logger {
    /// This logger, its lines scrubbed of `secrets` (itself when there are none).
    func scrubbing(_ secrets: SecretScrubber) -> Logger {
        guard !secrets.isEmpty else { return self }
        var copy = self
        copy.handler = ScrubbingLogHandler(base: handler, scrubber: secrets)
        return copy
    }
}
