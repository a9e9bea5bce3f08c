import PlugboardAPI
import PlugboardEtcd
import PlugboardFleet
import PlugboardHost
import PlugboardJSON
import PlugboardServer

/// The `plugboard` command line: parses arguments, runs one command, maps errors to exit
/// status and output. `Sources/plugboard/main.swift` only calls ``main(_:environment:)``.
public enum PlugboardCLI {
    /// The version `--version` prints.
    public static let version = "0.1.0"

    /// Runs the command line `argv` (without the executable's name) and returns the exit
    /// status: 0 success, 1 the operation failed, 2 bad usage or an invalid manifest.
    public static func main(_ argv: [String], environment: [String: String]) async -> Int32 {
        let parser = ArgumentParser(root: CLISpec.root)
        let parsed: ParsedCommand
        do {
            parsed = try parser.parse(argv)
        } catch {
            // The words were not understood, so `--json` is honoured wherever it appears
            // before `--`.
            let json = argv.prefix(while: { $0 != "--" }).contains("--json")
            return report(error, json: json)
        }
        if parsed.wantsHelp {
            Output.write(parser.help(for: parsed.path), to: 1)
            return 0
        }
        if parsed.flag("version") || parsed.path == ["version"] { return printVersion(json: parsed.flag("json")) }
        do throws(PlugboardError) {
            let ctx = try CommandContext(parsed: parsed, processEnvironment: environment)
            switch parsed.path {
            case ["check"]: return try await PluginsCommand.check(ctx)
            case ["plugins"]: return try await PluginsCommand.plugins(ctx)
            case ["services"]: return try await ServicesCommand.run(ctx)
            case ["inspect"]: return try await InspectCommand.run(ctx)
            case ["keygen"]: return try SigningCommands.keygen(ctx)
            case ["sign"]: return try SigningCommands.sign(ctx)
            case ["graph"]: return try await GraphCommand.run(ctx)
            case ["storage", "put"]: return try await StorageCommand.put(ctx)
            case ["storage", "get"]: return try await StorageCommand.get(ctx)
            case ["storage", "head"]: return try await StorageCommand.head(ctx)
            case ["storage", "delete"]: return try await StorageCommand.delete(ctx)
            case ["storage", "list"]: return try await StorageCommand.list(ctx)
            case ["new-plugin"]: return try await NewPluginCommand.run(ctx)
            case ["new-contract"]: return try await NewContractCommand.run(ctx)
            case ["serve"]: return try await ServeCommand.run(ctx)
            case ["reload"]: return try await ReloadCommand.run(ctx)
            case ["publish"]: return try await PublishCommand.run(ctx)
            case ["preflight"]: return try await PreflightCommand.run(ctx)
            case ["worker"]: return try await WorkerCommand.run(ctx)
            case ["completion"]: return try CompletionCommand.run(ctx)
            case ["fleet", "status"]: return try await FleetCommand.status(ctx)
            case ["fleet", "set"]: return try await FleetCommand.set(ctx)
            case ["fleet", "rollout"]: return try await FleetCommand.rollout(ctx)
            default:
                throw UsageError.make("command \"\(parsed.path.joined(separator: " "))\" cannot be run on its own",
                                      hint: UsageError.helpHint(parsed.path))
            }
        } catch {
            return report(error, json: parsed.flag("json"))
        }
    }

    /// Prints `error` for people (standard error) or scripts (JSON on standard output)
    /// and returns its exit status.
    static func report(_ error: PlugboardError, json: Bool) -> Int32 {
        var error = error
        // A usage error always says where the usage is, for scripts (JSON) and people alike.
        if error.code == .usage && error.hint == nil {
            error = PlugboardError(.usage, error.message, detail: error.detail, hint: UsageError.helpHint([]),
                                   underlying: error.underlying)
        }
        let status = exitStatus(for: error)
        if json {
            Output.write(JSONOutput.error(error).render() + "\n", to: 1)
        } else {
            var text = "plugboard: error: \(error.message)\n"
            if let d = error.detail { text += "DETAIL: \(d)\n" }
            if let h = error.hint { text += "HINT: \(h)\n" }
            Output.write(text, to: 2)
        }
        return status
    }

    /// 2 for usage and manifest-level errors (and a server that would expose its admin
    /// API without a token), 1 for everything else.
    static func exitStatus(for error: PlugboardError) -> Int32 {
        error.code == .usage || error.code == .serveUnprotected || error.code == .serveWeakCredential || error.code == .watchRefused || error.code.area == "manifest"
            || error.code == .fleetURLInvalid || error.code == .fleetWavesInvalid ? 2 : 1
    }

    static func printVersion(json: Bool) -> Int32 {
        let api = APIVersion.current
        if json {
            Output.write(JSONOutput.object([("plugboard", .string(version)), ("api", .string(api.description)),
                                            ("abi", .int(Int64(PluginABI.current)))]).render() + "\n", to: 1)
        } else {
            Output.write("plugboard \(version) (PlugboardAPI \(api), plugin ABI \(PluginABI.current))\n", to: 1)
        }
        return 0
    }
}
