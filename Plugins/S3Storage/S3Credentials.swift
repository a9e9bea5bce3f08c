import PlugboardAPI
import PlugboardSigV4

extension AWSCredentials {
    /// Finds credentials in the order AWS SDKs use: the plugin's config
    /// (`accessKeyId`, `secretAccessKey`, `sessionToken`), then the shared chain
    /// (``AWSCredentials/fromEnvironment(_:)``: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`
    /// and `AWS_SESSION_TOKEN`, then the shared credentials file).
    ///
    /// - Throws: `plugin.config_invalid` when a source holds half a key pair, a named
    ///   profile is missing, or no source has credentials; the message says what to set.
    static func resolve(_ config: PluginConfig, environment: AWSEnvironment) throws(PlugboardError) -> AWSCredentials {
        let id = try config.string("accessKeyId", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        let secret = try config.string("secretAccessKey", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        let token = try config.string("sessionToken", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        switch (id, secret) {
        case let (id?, secret?):
            return AWSCredentials(accessKeyId: id, secretAccessKey: secret, sessionToken: token, source: "plugin config")
        case (nil, nil):
            break
        case (nil, _?):
            throw halfPair(config, present: "secretAccessKey", missing: "accessKeyId", place: "the plugin's config")
        case (_?, nil):
            throw halfPair(config, present: "accessKeyId", missing: "secretAccessKey", place: "the plugin's config")
        }
        let found: AWSCredentials?
        do {
            found = try AWSCredentials.fromEnvironment(environment)
        } catch {
            throw Self.error(error, config: config)
        }
        if let found { return found }
        let file = environment.sharedCredentialsFile
        throw PlugboardError(
            .configInvalid, "plugin \"\(config.plugin)\": no S3 credentials found",
            detail: "Looked, in order, at \(config.path).accessKeyId and \(config.path).secretAccessKey, at AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and at profile \(PlugboardError.quoted(environment.profile)) of \(file.map { PlugboardError.quoted($0) } ?? "~/.aws/credentials (HOME is not set)"); none holds a key pair.",
            hint: "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or add them to the shared credentials file, or give accessKeyId and secretAccessKey in the plugin's config as {\"secret\": \"${VAR}\"}.")
    }

    /// The chain's problem as the plugin's configuration error.
    private static func error(_ problem: Problem, config: PluginConfig) -> PlugboardError {
        switch problem {
        case .incomplete(let present, let missing, .environment):
            return halfPair(config, present: present, missing: missing, place: "the environment")
        case .incomplete(let present, let missing, .profile(let profile, let file)):
            return halfPair(config, present: present, missing: missing,
                            place: "profile \(PlugboardError.quoted(profile)) of \(PlugboardError.quoted(file))")
        case .unreadableFile(let file):
            return PlugboardError(
                .configInvalid, "plugin \"\(config.plugin)\": cannot read the shared credentials file \(PlugboardError.quoted(file))",
                detail: "AWS_SHARED_CREDENTIALS_FILE names this file, which does not exist or cannot be read.",
                hint: "Correct AWS_SHARED_CREDENTIALS_FILE, or unset it to use ~/.aws/credentials.")
        case .missingProfile(let profile, let file, let available):
            return PlugboardError(
                .configInvalid, "plugin \"\(config.plugin)\": no profile \(PlugboardError.quoted(profile)) in \(PlugboardError.quoted(file))",
                detail: "AWS_PROFILE names this profile; the file has \(available.isEmpty ? "no profiles" : "the profiles " + available.map { PlugboardError.quoted($0) }.joined(separator: ", ")).",
                hint: "Add a [\(profile)] section with aws_access_key_id and aws_secret_access_key, or correct AWS_PROFILE.")
        }
    }

    private static func halfPair(_ config: PluginConfig, present: String, missing: String, place: String) -> PlugboardError {
        PlugboardError(
            .configInvalid, "plugin \"\(config.plugin)\": incomplete S3 credentials in \(place)",
            detail: "Expected both an access key id and a secret access key; \(present) is set but \(missing) is not.",
            hint: "Set \(missing) as well, or remove \(present) so that the next source in the AWS order is used.")
    }
}
