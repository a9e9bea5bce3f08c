#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PlugboardCLI
import PlugboardHost

// The whole CLI lives in PlugboardCLI; this captures the environment once, runs it, and
// exits with the status it returns.
//
// The entry point is synchronous on purpose: with an async top level, the main thread
// becomes libdispatch's signal thread and `exit` runs on a pool thread; when a plugin has
// pulled Foundation in with dlopen, exiting from there never finishes (its exit handlers
// end that thread instead). Exiting from the main thread, after the work is done on the
// pool, always does.
let arguments = Array(CommandLine.arguments.dropFirst())
// An isolated plugin's worker reads its request and sandboxes itself while this is still
// the only thread: Landlock confines the thread that applies it and those it starts later.
if arguments.first == "worker" { WorkerChild.bootstrap(Array(arguments.dropFirst())) }
let captured = ProcessEnvironmentSnapshot.capture()
let done = DispatchSemaphore(value: 0)
nonisolated(unsafe) var status: Int32 = 1
Task.detached {
    status = await PlugboardCLI.main(arguments, environment: captured)
    done.signal()
}
done.wait()
exit(status)
