#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost

/// `plugboard preflight`: internal. The host runs it as a child process to try plugins
/// before it maps them (hot swap, `check`); the request comes on descriptor 3, the report
/// goes to descriptor 4. Not for people to run.
enum PreflightCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        guard let text = ctx.parsed.value("parent-pid"), let parent = Int32(text) else {
            throw UsageError.make("plugboard preflight needs --parent-pid",
                                  detail: "It is an internal command: the host runs it with descriptors 3 and 4 set up.",
                                  hint: "Use plugboard check to check plugins.")
        }
        // Dies with the host; if the host is already gone, there is nobody to report to.
        guard PreflightProbe.attach(parent: parent) else { return 3 }
        var stat = stat()
        guard fstat(PreflightProbe.requestDescriptor, &stat) == 0, fstat(PreflightProbe.reportDescriptor, &stat) == 0 else {
            throw UsageError.make("plugboard preflight: descriptors 3 and 4 are not open",
                                  detail: "It is an internal command: the host runs it with its request on 3 and reads its report from 4.",
                                  hint: "Use plugboard check to check plugins.")
        }
        return await PreflightProbe.run(logger: ctx.logger, environment: ctx.processEnvironment)
    }
}
