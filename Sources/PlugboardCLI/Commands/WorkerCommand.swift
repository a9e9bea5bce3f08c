import PlugboardAPI
import PlugboardHost

/// `plugboard worker`: internal. The host runs it as the child process of an isolated
/// plugin, with the wire on descriptors 3 and up. Its first steps (the wire, the load
/// request, the sandbox) ran in the executable's entry point before any thread
/// (``WorkerChild/bootstrap(_:)``); this serves the plugin. Not for people to run.
enum WorkerCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        try await WorkerChild.run(logger: ctx.logger, environment: ctx.processEnvironment)
    }
}
