#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import PlugboardS3Server

/// What every command gets: the global options, resolved once, the captured process
/// environment, and the output channels.
struct CommandContext {
    let parsed: ParsedCommand
    let json: Bool
    let manifestPath: String
    let environment: Environment?
    let cacheDirectory: String?
    let logger: Logger
    /// The format of ``logger``'s lines, which the preflight child is told to use too.
    let logFormat: LogFormat
    let processEnvironment: [String: String]

    init(parsed: ParsedCommand, processEnvironment: [String: String]) throws(PlugboardError) {
        self.parsed = parsed
        self.processEnvironment = processEnvironment
        json = parsed.flag("json")
        // A variable set to the empty string counts as unset, as the shell's ${VAR:-...}.
        func variable(_ name: String) -> String? { processEnvironment[name].flatMap { $0.isEmpty ? nil : $0 } }
        manifestPath = parsed.value("manifest") ?? variable("PLUGBOARD_MANIFEST") ?? "plugins.json"
        let envName = parsed.value("env") ?? variable("PLUGBOARD_ENV")
        if let envName {
            guard let e = Environment(envName) else {
                let names = Environment.all.map(\.name)
                let hint = UsageError.suggestion(for: envName, among: names).map { "Did you mean \"\($0)\"?" }
                throw UsageError.make("unknown environment \"\(envName)\"",
                                      detail: "Expected one of: \(names.joined(separator: ", ")).", hint: hint)
            }
            environment = e
        } else {
            environment = nil
        }
        cacheDirectory = parsed.value("cache-dir")
        let levelName = parsed.value("log-level") ?? "warning"
        guard let level = Logger.Level(rawValue: levelName) else {
            let names = Logger.Level.allCases.map(\.rawValue)
            throw UsageError.make("unknown log level \"\(levelName)\"", detail: "Expected one of: \(names.joined(separator: ", ")).",
                                  hint: UsageError.suggestion(for: levelName, among: names).map { "Did you mean \"\($0)\"?" })
        }
        let formatName = parsed.value("log-format") ?? variable("PLUGBOARD_LOG_FORMAT") ?? LogFormat.text.rawValue
        guard let format = LogFormat(rawValue: formatName) else {
            let names = LogFormat.allCases.map(\.rawValue)
            throw UsageError.make("unknown log format \"\(formatName)\"", detail: "Expected one of: \(names.joined(separator: ", ")).",
                                  hint: UsageError.suggestion(for: formatName, among: names).map { "Did you mean \"\($0)\"?" })
        }
        logFormat = format
        logger = Logger(label: "plugboard", logLevel: level, handler: ConsoleLogHandler(format: format))
    }

    var hostConfiguration: PluginHost.Configuration {
        var configuration = PluginHost.Configuration(manifestPath: manifestPath, environment: environment, cacheDirectory: cacheDirectory,
                                                     processEnvironment: processEnvironment, logger: logger)
        // The preflight child (serve's hot swap, check) logs to the same standard error,
        // in the same format, told so on its command line.
        configuration.preflightArguments = ["--log-format", logFormat.rawValue]
        // The S3 front end's rules for the manifest's `s3` pairs, on every read of it.
        configuration.manifestRules = [{ manifest throws(PlugboardError) in try S3Router.Configuration.checkWritten(manifest) }]
        return configuration
    }

    /// Starts the host from the manifest. `reportsPlugins`: the command prints every
    /// plugin's state and error itself, so a failure's log line drops to `info` (shown
    /// with --log-level info) instead of telling the same story twice.
    /// `checkOnly`: `check`'s load (``PluginHost/Configuration/checkOnly``).
    func startHost(reportsPlugins: Bool = false, checkOnly: Bool = false) async throws(PlugboardError) -> PluginHost {
        var configuration = hostConfiguration
        if reportsPlugins { configuration.pluginFailureLogLevel = .info }
        configuration.checkOnly = checkOnly
        return try await PluginHost.start(configuration)
    }

    // MARK: - Output

    func out(_ text: String) { Output.write(text, to: 1) }
    func err(_ text: String) { Output.write(text, to: 2) }
    func out(_ json: JSONOutput) { Output.write(json.render() + "\n", to: 1) }
}

/// Writes to standard output and standard error, whole buffers at a time.
enum Output {
    static func write(_ text: String, to fd: Int32) {
        write(Array(text.utf8), to: fd)
    }

    static func write(_ bytes: [UInt8], to fd: Int32) {
        PreflightProbe.write(fd, bytes)
    }
}
