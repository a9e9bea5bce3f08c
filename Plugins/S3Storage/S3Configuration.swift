import PlugboardAPI
import PlugboardSigV4

/// How an ``S3Storage`` is set up, validated once from the plugin's `config`.
///
/// ```json
/// { "name": "S3Storage", "product": "S3Storage",
///   "config": { "bucket": "photos", "region": "eu-west-1" } }
/// ```
struct S3Configuration: Sendable {
    /// The configuration keys S3Storage knows; any other is refused.
    static let keys: Set<String> = ["bucket", "region", "endpoint", "pathStyle", "accessKeyId",
                                    "secretAccessKey", "sessionToken", "timeoutSeconds", "maxRetries"]
    static let defaultRegion = "us-east-1"
    static let defaultTimeoutSeconds = 30.0
    static let defaultMaxRetries = 3

    var bucket: String
    var region: String
    var endpoint: S3Endpoint
    /// `https://endpoint/bucket/key` when true, `https://bucket.endpoint/key` when false.
    var pathStyle: Bool
    var credentials: AWSCredentials
    /// The longest a request may wait for data from the server before it fails (and is
    /// retried), in whole seconds.
    var timeoutSeconds: Double
    /// How many times a failed idempotent request is sent again (0 to 10).
    var maxRetries: Int

    init(bucket: String, region: String = defaultRegion, endpoint: S3Endpoint, pathStyle: Bool,
         credentials: AWSCredentials, timeoutSeconds: Double = defaultTimeoutSeconds, maxRetries: Int = defaultMaxRetries) {
        self.bucket = bucket
        self.region = region
        self.endpoint = endpoint
        self.pathStyle = pathStyle
        self.credentials = credentials
        self.timeoutSeconds = timeoutSeconds
        self.maxRetries = maxRetries
    }

    /// Reads and checks the plugin's `config`; credentials missing from it are looked up
    /// in `environment` and the shared credentials file.
    ///
    /// - Throws: `plugin.config_invalid` naming the key and what was expected, never a
    ///   secret's value.
    init(_ config: PluginConfig, environment: AWSEnvironment) throws(PlugboardError) {
        try config.requireOnly(Self.keys)
        guard let bucket = try config.string("bucket", default: nil), !bucket.isEmpty else {
            throw PlugboardError(
                .configInvalid, "plugin \"\(config.plugin)\": missing configuration key \"\(config.path).bucket\"",
                detail: "Expected the name of an S3 bucket at \(config.path).bucket, found \(config["bucket"] == nil ? "nothing" : "an empty string").",
                hint: "Set \"bucket\" in the plugin's config (the shipped plugins.json reads it from PLUGBOARD_S3_BUCKET).")
        }
        guard S3BucketName.isValid(bucket) else {
            throw Self.invalid(config, "bucket", "3 to 63 lowercase letters, digits, \".\" and \"-\", starting and ending with a letter or digit",
                               PlugboardError.quoted(bucket))
        }
        let writtenRegion = try config.string("region", default: nil).flatMap { $0.isEmpty ? nil : $0 }
        let region = writtenRegion ?? environment.region ?? Self.defaultRegion
        guard !region.isEmpty, region.utf8.count <= 64,
              region.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") }) else {
            throw Self.invalid(config, "region", "an AWS region name such as \"us-east-1\" (lowercase letters, digits and \"-\")", PlugboardError.quoted(region))
        }
        let endpoint: S3Endpoint
        if let written = try config.string("endpoint", default: nil), !written.isEmpty {
            do {
                endpoint = try S3Endpoint.parse(written)
            } catch {
                // The URL may carry a password: describe the problem, never echo the text.
                throw Self.invalid(config, "endpoint", "a URL of the form http://host[:port] or https://host[:port], without path, query or user name",
                                   Self.describe(error))
            }
        } else {
            endpoint = .aws(region: region)
        }
        let dnsCompatible = S3BucketName.isDNSCompatible(bucket, https: endpoint.scheme == "https")
        let pathStyle = try config.bool("pathStyle", default: !endpoint.isAWS || !dnsCompatible)
        if !pathStyle && !dnsCompatible {
            throw PlugboardError(
                .configInvalid, "plugin \"\(config.plugin)\": bucket \(PlugboardError.quoted(bucket)) cannot be addressed virtual-hosted",
                detail: "\"\(config.path).pathStyle\" is false, so the bucket would be part of the host name, which needs a DNS-compatible name without \".\" over https.",
                hint: "Set \"pathStyle\" to true, or rename the bucket.")
        }
        let written = try config.double("timeoutSeconds", default: Self.defaultTimeoutSeconds)
        guard written > 0, written <= 3600 else {
            throw Self.invalid(config, "timeoutSeconds", "a number of seconds above 0 and at most 3600", "\(written)")
        }
        // FoundationNetworking counts the timeout in whole seconds (it truncates): round
        // up, so that 0.5 does not become "no time at all".
        let timeout = written.rounded(.up)
        let retries = try config.int("maxRetries", default: Self.defaultMaxRetries)
        guard (0...10).contains(retries) else {
            throw Self.invalid(config, "maxRetries", "an integer from 0 to 10", "\(retries)")
        }
        let credentials = try AWSCredentials.resolve(config, environment: environment)
        self.init(bucket: bucket, region: region, endpoint: endpoint, pathStyle: pathStyle,
                  credentials: credentials, timeoutSeconds: timeout, maxRetries: retries)
    }

    private static func describe(_ problem: S3Endpoint.Problem) -> String {
        switch problem {
        case .scheme: "a value not starting with http:// or https://"
        case .userInfo: "a URL with a user name or password (\"@\"); credentials belong in accessKeyId and secretAccessKey"
        case .path: "a URL with a path, query or fragment"
        case .host: "a URL whose host is empty or has characters a host name cannot have"
        case .port: "a URL whose port is not a number from 1 to 65535"
        }
    }

    static func invalid(_ config: PluginConfig, _ key: String, _ expected: String, _ found: String) -> PlugboardError {
        PlugboardError(
            .configInvalid, "plugin \"\(config.plugin)\": invalid value for configuration key \"\(config.path).\(key)\"",
            detail: "Expected \(expected), found \(found).",
            hint: "Correct \"\(key)\" in the plugin's config in \(config.manifest ?? "the manifest").")
    }
}

/// S3's rules for bucket names.
enum S3BucketName {
    /// 3 to 63 lowercase letters, digits, `.` and `-`, starting and ending with a letter or
    /// digit, without `..` and not shaped like an IPv4 address. Underscores and capitals
    /// (legacy us-east-1 names) are accepted too, for path-style use.
    static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...255).contains(bytes.count), let first = bytes.first, let last = bytes.last,
              isAlphanumeric(first), isAlphanumeric(last) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    /// Whether the name can be the first label(s) of a host name: lowercase, at most 63
    /// bytes, no `_` or `..`; over https also no `.` (the certificate's wildcard covers
    /// one label only).
    static func isDNSCompatible(_ name: String, https: Bool) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count), !name.contains(".."), !name.contains("_") else { return false }
        if https && name.contains(".") { return false }
        return bytes.allSatisfy { !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
