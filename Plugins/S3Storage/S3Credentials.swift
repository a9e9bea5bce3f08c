import PlugboardAPI

/// AWS credentials, and where they were found. Never printed: ``description`` shows only
/// the source and the access key id's first four characters.
struct S3Credentials: Sendable, Equatable, CustomStringConvertible {
    var accessKeyId: String
    var secretAccessKey: String
    var sessionToken: String?
    /// Where they came from, for logs: `plugin config`, `environment`, or
    /// `shared credentials file /home/me/.aws/credentials, profile default`.
    var source: String

    var description: String {
        "S3Credentials(accessKeyId: \(accessKeyId.prefix(4))..., sessionToken: \(sessionToken == nil ? "none" : "set"), source: \(source))"
    }

    /// The secret values, for scrubbing them from any text that leaves the plugin.
    var secrets: [String] {
        [secretAccessKey] + (sessionToken.map { [$0] } ?? [])
    }

    /// Finds credentials in the order AWS SDKs use: the plugin's config
    /// (`accessKeyId`, `secretAccessKey`, `sessionToken`), then `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, then the shared credentials file
    /// (`AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`, profile `AWS_PROFILE` or
    /// `default`).
    ///
    /// - Throws: `plugin.config_invalid` when a source holds half a key pair, a named
    ///   profile is missing, or no source has credentials; the message says what to set.
    static func resolve(_ config: PluginConfig, environment: ProcessEnvironment) throws(PlugboardError) -> S3Credentials {
        let id = try config.string("accessKeyId", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        let secret = try config.string("secretAccessKey", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        let token = try config.string("sessionToken", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        switch (id, secret) {
        case let (id?, secret?):
            return S3Credentials(accessKeyId: id, secretAccessKey: secret, sessionToken: token, source: "plugin config")
        case (nil, nil):
            break
        case (nil, _?):
            throw halfPair(config, present: "secretAccessKey", missing: "accessKeyId", place: "the plugin's config")
        case (_?, nil):
            throw halfPair(config, present: "accessKeyId", missing: "secretAccessKey", place: "the plugin's config")
        }
        switch (environment["AWS_ACCESS_KEY_ID"], environment["AWS_SECRET_ACCESS_KEY"]) {
        case let (id?, secret?):
            return S3Credentials(accessKeyId: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"],
                                 source: "environment")
        case (nil, nil):
            break
        case (nil, _?):
            throw halfPair(config, present: "AWS_SECRET_ACCESS_KEY", missing: "AWS_ACCESS_KEY_ID", place: "the environment")
        case (_?, nil):
            throw halfPair(config, present: "AWS_ACCESS_KEY_ID", missing: "AWS_SECRET_ACCESS_KEY", place: "the environment")
        }
        let explicitFile = environment["AWS_SHARED_CREDENTIALS_FILE"]
        let file = explicitFile ?? environment["HOME"].map { "\($0)/.aws/credentials" }
        let explicitProfile = environment["AWS_PROFILE"]
        let profile = explicitProfile ?? "default"
        if let file {
            switch SharedCredentialsFile.read(file) {
            case .missing:
                if explicitFile != nil {
                    throw PlugboardError(
                        .configInvalid, "plugin \"\(config.plugin)\": cannot read the shared credentials file \(PlugboardError.quoted(file))",
                        detail: "AWS_SHARED_CREDENTIALS_FILE names this file, which does not exist or cannot be read.",
                        hint: "Correct AWS_SHARED_CREDENTIALS_FILE, or unset it to use ~/.aws/credentials.")
                }
            case .contents(let text):
                let profiles = SharedCredentialsFile.parse(text)
                if let entries = profiles[profile] {
                    let fileID = entries["aws_access_key_id"].flatMap { $0.isEmpty ? nil : $0 }
                    let fileSecret = entries["aws_secret_access_key"].flatMap { $0.isEmpty ? nil : $0 }
                    let place = "profile \(PlugboardError.quoted(profile)) of \(PlugboardError.quoted(file))"
                    switch (fileID, fileSecret) {
                    case let (id?, secret?):
                        return S3Credentials(accessKeyId: id, secretAccessKey: secret,
                                             sessionToken: entries["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 },
                                             source: "shared credentials file \(file), profile \(profile)")
                    case (nil, nil):
                        break
                    case (nil, _?):
                        throw halfPair(config, present: "aws_secret_access_key", missing: "aws_access_key_id", place: place)
                    case (_?, nil):
                        throw halfPair(config, present: "aws_access_key_id", missing: "aws_secret_access_key", place: place)
                    }
                } else if explicitProfile != nil {
                    throw PlugboardError(
                        .configInvalid, "plugin \"\(config.plugin)\": no profile \(PlugboardError.quoted(profile)) in \(PlugboardError.quoted(file))",
                        detail: "AWS_PROFILE names this profile; the file has \(profiles.isEmpty ? "no profiles" : "the profiles " + profiles.keys.sorted().map { PlugboardError.quoted($0) }.joined(separator: ", ")).",
                        hint: "Add a [\(profile)] section with aws_access_key_id and aws_secret_access_key, or correct AWS_PROFILE.")
                }
            }
        }
        throw PlugboardError(
            .configInvalid, "plugin \"\(config.plugin)\": no S3 credentials found",
            detail: "Looked, in order, at \(config.path).accessKeyId and \(config.path).secretAccessKey, at AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and at profile \(PlugboardError.quoted(profile)) of \(file.map { PlugboardError.quoted($0) } ?? "~/.aws/credentials (HOME is not set)"); none holds a key pair.",
            hint: "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or add them to the shared credentials file, or give accessKeyId and secretAccessKey in the plugin's config as {\"secret\": \"${VAR}\"}.")
    }

    private static func halfPair(_ config: PluginConfig, present: String, missing: String, place: String) -> PlugboardError {
        PlugboardError(
            .configInvalid, "plugin \"\(config.plugin)\": incomplete S3 credentials in \(place)",
            detail: "Expected both an access key id and a secret access key; \(present) is set but \(missing) is not.",
            hint: "Set \(missing) as well, or remove \(present) so that the next source in the AWS order is used.")
    }
}

/// The AWS shared credentials file: an INI file of `[profile]` sections with
/// `name = value` lines; `#` and `;` start comment lines.
enum SharedCredentialsFile {
    enum Read: Equatable {
        case missing
        case contents(String)
    }

    static func read(_ path: String) -> Read {
        guard let bytes = try? PlainFile.read(path, limit: 1 << 20) else { return .missing }
        return .contents(String(decoding: bytes, as: UTF8.self))
    }

    /// Every profile's entries, names lowercased as AWS SDKs read them.
    static func parse(_ text: String) -> [String: [String: String]] {
        var profiles: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard let close = line.firstIndex(of: "]") else {
                    current = nil
                    continue
                }
                var name = line[line.index(after: line.startIndex)..<close].trimmingSpaces
                // The config file's "[profile name]" spelling, accepted here too.
                if name.hasPrefix("profile ") { name = name.dropFirst("profile ".count).trimmingSpaces }
                current = String(name)
                if profiles[String(name)] == nil { profiles[String(name)] = [:] }
                continue
            }
            guard let profile = current, let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingSpaces.lowercased()
            let value = line[line.index(after: equals)...].trimmingSpaces
            profiles[profile, default: [:]][name] = String(value)
        }
        return profiles
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        let text = Substring(self)
        guard let first = text.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = text.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return text[first...last]
    }
}
