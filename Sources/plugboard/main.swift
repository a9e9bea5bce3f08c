#if canImport(Glibc)
import Glibc
#endif
import PlugboardCLI

// The whole CLI lives in PlugboardCLI; this captures the environment once and exits with
// the status it returns.
var environment: [String: String] = [:]
var entry = environ
while let pointer = entry.pointee {
    let pair = String(cString: pointer)
    if let eq = pair.firstIndex(of: "=") {
        environment[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
    }
    entry += 1
}
let status = await PlugboardCLI.main(Array(CommandLine.arguments.dropFirst()), environment: environment)
exit(status)
