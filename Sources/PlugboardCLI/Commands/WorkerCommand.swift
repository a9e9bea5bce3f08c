import PlugboardAPI
import PlugboardHost
import PlugboardIPC

/// `plugboard worker`: internal. The host runs it as the child process of an isolated
/// plugin, with the wire on descriptors 3 and up (``WorkerChild``). Not for people to run.
enum WorkerCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        guard let text = ctx.parsed.value("parent-pid"), let parent = Int32(text),
              let kind = ctx.parsed.value("transport").flatMap(TransportKind.init(rawValue:)),
              let count = ctx.parsed.value("descriptors").flatMap(Int.init), (1...4).contains(count) else {
            throw UsageError.make("plugboard worker needs --parent-pid, --transport socket|ring and --descriptors 1-4",
                                  detail: "It is an internal command: the host runs it with its wire on descriptors 3 and up.",
                                  hint: "Set \"isolation\": \"process\" on a plugin's manifest entry to run it in a worker.")
        }
        // Dies with the host; if the host is already gone, there is nobody to serve.
        guard PreflightProbe.attach(parent: parent) else { return 3 }
        return await WorkerChild.run(transport: kind, descriptors: count, logger: ctx.logger, environment: ctx.processEnvironment)
    }
}
