#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PlugboardCLI

// The whole CLI lives in PlugboardCLI; this captures the environment once, runs it, and
// exits with the status it returns.
//
// The entry point is synchronous on purpose: with an async top level, the main thread
// becomes libdispatch's signal thread and `exit` runs on a pool thread; when a plugin has
// pulled Foundation in with dlopen, exiting from there never finishes (its exit handlers
// end that thread instead). Exiting from the main thread, after the work is done on the
// pool, always does.
var environment: [String: String] = [:]
var entry = environ
while let pointer = entry.pointee {
    let pair = String(cString: pointer)
    if let eq = pair.firstIndex(of: "=") {
        environment[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
    }
    entry += 1
}
let arguments = Array(CommandLine.arguments.dropFirst())
let captured = environment
let done = DispatchSemaphore(value: 0)
nonisolated(unsafe) var status: Int32 = 1
Task.detached {
    status = await PlugboardCLI.main(arguments, environment: captured)
    done.signal()
}
done.wait()
exit(status)
