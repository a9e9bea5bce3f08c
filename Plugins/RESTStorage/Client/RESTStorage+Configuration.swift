import PlugboardAPI

extension RESTStorage {
    /// How a ``RESTStorage`` is set up, validated once from the plugin's `config`.
    ///
    /// ```json
    /// { "name": "Remote", "product": "RESTStorage",
    ///   "config": { "baseURL": "http://10.0.0.5:8080", "token": {"secret": "${PLUGBOARD_REMOTE_TOKEN}"} } }
    /// ```
    public struct Configuration: Sendable, Equatable {
        /// The configuration keys RESTStorage knows; any other is refused.
        public static let keys: Set<String> = ["baseURL", "token", "timeoutSeconds", "maxRetries"]
        public static let defaultTimeoutSeconds = 30.0
        public static let maxTimeoutSeconds = 3600.0
        public static let defaultMaxRetries = 3
        public static let maxMaxRetries = 10

        /// Where the other host's API is.
        public var endpoint: Endpoint
        /// The bearer token sent with every request, or nil. A secret: never logged.
        public var token: String?
        /// The longest the server may stay silent during one request before it counts as
        /// timed out: the connect and every wait for data over `http://`, URLSession's
        /// `timeoutIntervalForRequest` over `https://`.
        public var timeoutSeconds: Double
        /// How many times an idempotent request is retried after a retryable failure.
        public var maxRetries: Int

        public init(endpoint: Endpoint, token: String? = nil, timeoutSeconds: Double = defaultTimeoutSeconds,
                    maxRetries: Int = defaultMaxRetries) {
            self.endpoint = endpoint
            self.token = token
            self.timeoutSeconds = timeoutSeconds
            self.maxRetries = maxRetries
        }

        /// Reads and checks the plugin's `config`.
        ///
        /// - Throws: `plugin.config_invalid` naming the key: an unknown key, a missing
        ///   `baseURL` or one that is not an absolute `http` or `https` URL without user
        ///   information, query or fragment; an empty token or one that cannot travel in
        ///   a header; a timeout outside 0 (exclusive) to 3600 seconds; retries outside 0
        ///   to 10; a value of the wrong type.
        public init(_ config: PluginConfig) throws(PlugboardError) {
            try config.requireOnly(Self.keys)
            let base = try Self.checkedBaseURL(try config.string("baseURL"), config)
            let token = try config.string("token", default: nil)
            if let token { try Self.checkToken(token, config) }
            let timeout = try config.double("timeoutSeconds", default: Self.defaultTimeoutSeconds)
            guard timeout > 0, timeout <= Self.maxTimeoutSeconds else {
                throw Self.invalid(config, "timeoutSeconds", "a number of seconds above 0 and at most \(Int(Self.maxTimeoutSeconds))",
                                   config["timeoutSeconds"].map { "\($0)" } ?? "\(timeout)")
            }
            let retries = try config.int("maxRetries", default: Self.defaultMaxRetries)
            guard (0...Self.maxMaxRetries).contains(retries) else {
                throw Self.invalid(config, "maxRetries", "an integer from 0 to \(Self.maxMaxRetries)", "\(retries)")
            }
            self.init(endpoint: Endpoint(base: base), token: token, timeoutSeconds: timeout, maxRetries: retries)
        }

        /// `text` as a base URL: `http` or `https` (lower-cased), a host, an optional port
        /// and path prefix; no user information (a password there would be logged with
        /// the URL), query or fragment (the API's paths and queries are appended).
        static func checkedBaseURL(_ text: String, _ config: PluginConfig) throws(PlugboardError) -> String {
            let expected = "an absolute http or https URL such as \"http://127.0.0.1:8080\""
            if let offset = text.utf8.firstIndex(where: { $0 <= 0x20 || $0 >= 0x7F }).map({ text.utf8.distance(from: text.utf8.startIndex, to: $0) }) {
                throw invalid(config, "baseURL", expected, "a space, control or non-ASCII character at offset \(offset)")
            }
            let parts = text.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw invalid(config, "baseURL", expected, text.isEmpty ? "an empty string" : "\(RESTStorageText.quote(text)) without a scheme")
            }
            let scheme = parts[0].lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw invalid(config, "baseURL", expected, "the scheme \(RESTStorageText.quote(scheme))")
            }
            let rest = parts[1]
            let authority = rest.prefix { $0 != "/" }
            let path = rest.dropFirst(authority.count)
            if authority.contains("@") {
                // Not quoted: the user information may hold a password.
                throw invalid(config, "baseURL", expected + " without user information", "a URL with user information (\"user@\" or \"user:password@\")",
                              hint: "Remove the user information from \"baseURL\" and give the bearer token in \"token\".")
            }
            if text.contains("?") || text.contains("#") {
                throw invalid(config, "baseURL", expected + " without query or fragment", RESTStorageText.quote(text))
            }
            guard let host = checkedHost(authority), !host.isEmpty else {
                throw invalid(config, "baseURL", expected, "\(RESTStorageText.quote(text)), whose host or port is not valid")
            }
            return scheme + "://" + authority + path
        }

        /// The host of `authority` (`host`, `host:port`, `[v6]`, `[v6]:port`) when the port,
        /// if any, is 1 to 65535; nil otherwise.
        private static func checkedHost(_ authority: Substring) -> Substring? {
            guard let (host, port) = Endpoint.split(authority) else { return nil }
            if let port, Endpoint.portNumber(port) == nil { return nil }
            return host
        }

        /// A token is sent as `Authorization: Bearer <token>`: visible ASCII, no spaces.
        /// The messages never show the token.
        private static func checkToken(_ token: String, _ config: PluginConfig) throws(PlugboardError) {
            if token.isEmpty {
                throw invalid(config, "token", "a bearer token, or no \"token\" key for a server without one", "an empty string")
            }
            if let offset = token.utf8.firstIndex(where: { $0 <= 0x20 || $0 >= 0x7F }).map({ token.utf8.distance(from: token.utf8.startIndex, to: $0) }) {
                throw invalid(config, "token", "a bearer token of visible ASCII characters without spaces",
                              "a string of \(token.utf8.count) bytes with a space, control or non-ASCII byte at offset \(offset)")
            }
        }

        private static func invalid(_ config: PluginConfig, _ key: String, _ expected: String, _ found: String,
                                    hint: String? = nil) -> PlugboardError {
            PlugboardError(
                .configInvalid, "plugin \"\(config.plugin)\": invalid value for configuration key \"\(config.path).\(key)\"",
                detail: "Expected \(expected), found \(found).",
                hint: hint ?? "Correct \"\(key)\" in the plugin's config in \(config.manifest ?? "the manifest").")
        }
    }
}
