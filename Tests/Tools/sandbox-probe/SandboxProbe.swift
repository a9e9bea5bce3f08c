// sandbox-probe [--memory-mb N] [--open-files N] [--rw PATH]... [--ro PATH]... [--cache PATH]
//               [--leak-keep] [--start-thread] [--no-sandbox] ACTION [ARGUMENT]...
//
// SandboxProbeTests' child: applies the sandbox of an isolated plugin's worker (the default
// read-only paths, the given grants and limits; system calls refused are reported on
// standard error), then runs the actions in order and writes one line for each on standard
// output, straight to the descriptor so that a process killed midway keeps what it wrote:
//
//   execve                 execve("/bin/true")                  "execve: errno EPERM"
//   write PATH / read PATH open it (create for write), one byte "write /x: ok"
//   alloc MB               malloc and touch MB MiB              "alloc 2048: null"
//   swift-alloc MB         a Swift array of MB MiB (traps when refused)
//   thread                 a pthread started and joined         "thread: ok"
//   dispatch               a block on Dispatch's global queue   "dispatch: ok"
//   threads N              N Dispatch blocks held at once (each allocates), then the status below
//   unshare                unshare(CLONE_NEWUSER)
//   clone-new-user         a raw clone(CLONE_NEWUSER)
//   ptrace                 ptrace(PTRACE_ATTACH) of a child of its own
//   dlopen PATH            dlopen(PATH, RTLD_NOW | RTLD_LOCAL)  "dlopen ...: ok" or the loader's error
//   load PATH CACHE ROOT   the plugin loaded through PluginLoader (cache CACHE, config root ROOT or none for -),
//                          then a put and a get of its ObjectStorage  "load ...: ok" or the error
//   connect PORT           a TCP connection to 127.0.0.1:PORT    "connect 4242: ok"
//   resolve NAME           getaddrinfo(NAME) (/etc/hosts, /etc/nsswitch.conf, resolv.conf)
//   raw-socket             socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), which needs CAP_NET_RAW
//   kill-parent            kill(getppid(), SIGCONT)
//   replace-sigsys         sigaction(SIGSYS) with a handler of its own (killed by SIGSYS)
//   status                 VmSize, VmData, VmRSS and Threads of /proc/self/status
//   fds                    the open descriptors
//   open-many N            opens /dev/null N times, keeping them  "open-many 64: errno EMFILE after 29"
//   limits                 the data, open files and core lines of /proc/self/limits
//
// --leak-keep opens /dev/null twice before the sandbox without O_CLOEXEC and keeps the
// second ("leaked 3 kept 4"); --start-thread starts a Dispatch thread before it.
#if canImport(Glibc)
import Glibc
#endif
import CSandboxProbe
import Dispatch
import PlugboardAPI
import PlugboardBytes
import PlugboardHost

func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

// Not a closure of the top-level code: that would be the main actor's, and the runtime
// traps when another thread runs it.
func threadBody(_: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? { nil }

/// The text a detached load hands to the main thread, which reads it after the semaphore.
final class LoadOutcome: @unchecked Sendable {
    var text = ""
}

/// Loads the plugin as a worker would (the host's loader, a container of its own), then
/// puts and gets one object through the ObjectStorage it registered.
func load(_ path: String, cache: String, root: String) async -> String {
    do {
        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cache))
        let name = String(path.split(separator: "/").last ?? "plugin")
        let config = PluginConfig(root == "-" ? [:] : ["root": .string(root)], plugin: name)
        let record = await loader.load(.init(name: name, path: path, config: config))
        guard record.state == .active else { return "error \(record.error.map { "\($0)" } ?? "not active")" }
        let storage: any ObjectStorage = try container.resolve()
        _ = try await storage.put("sandboxed", data: Array("hello".utf8), contentType: "text/plain")
        let object = try await storage.get("sandboxed")
        return object.data == Array("hello".utf8) ? "ok" : "error read back \(object.data.count) bytes"
    } catch {
        return "error \(error)"
    }
}

func errnoName(_ code: Int32) -> String {
    let names: [Int32: String] = [EPERM: "EPERM", EACCES: "EACCES", ENOENT: "ENOENT", ENOMEM: "ENOMEM", EAGAIN: "EAGAIN",
                                  ENOSYS: "ENOSYS", EINVAL: "EINVAL", EROFS: "EROFS", EMFILE: "EMFILE"]
    return "errno " + (names[code] ?? String(code))
}

func result(_ ok: Bool) -> String { ok ? "ok" : errnoName(errno) }

func statusLines() -> [String] {
    let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return ["status: \(errnoName(errno))"] }
    defer { close(fd) }
    return String(decoding: (try? DescriptorIO.readToEnd(fd)) ?? [], as: UTF8.self).split(separator: "\n")
        .filter { ["VmSize:", "VmData:", "VmRSS:", "Threads:"].contains(where: $0.hasPrefix) }
        .map { "status " + $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
}

var arguments = Array(CommandLine.arguments.dropFirst())
var memoryMB = ManifestSandbox.defaultMemoryMB
var openFiles = ManifestSandbox.defaultOpenFiles
var readWrite: [String] = []
var readOnly: [String] = []
var cache: String?
var keep: [Int32] = []
var sandboxed = true
var startThread = false
while let first = arguments.first, first.hasPrefix("--") {
    arguments.removeFirst()
    switch first {
    case "--no-sandbox": sandboxed = false
    case "--memory-mb": memoryMB = Int(arguments.removeFirst()) ?? memoryMB
    case "--open-files": openFiles = Int(arguments.removeFirst()) ?? openFiles
    case "--rw": readWrite.append(arguments.removeFirst())
    case "--ro": readOnly.append(arguments.removeFirst())
    case "--cache": cache = arguments.removeFirst()
    case "--leak-keep":
        let leaked = open("/dev/null", O_RDONLY)
        let kept = open("/dev/null", O_RDONLY)
        keep.append(kept)
        say("leaked \(leaked) kept \(kept)")
    case "--start-thread": startThread = true
    default:
        say("usage: unknown option \(first)")
        exit(2)
    }
}

if startThread {
    let running = DispatchSemaphore(value: 0)
    DispatchQueue.global().async { running.signal() }
    running.wait()
}

if sandboxed {
    let grants = ManifestSandbox(memoryMB: memoryMB, openFiles: openFiles, readWritePaths: readWrite, readOnlyPaths: readOnly)
    do {
        let report = try Sandbox.apply(grants.policy(pluginCache: cache), reportDescriptor: 2, keepDescriptors: keep)
        say("\(report)")
    } catch {
        say("sandbox failed: \(error.code): \(error.message)")
        exit(3)
    }
}

while !arguments.isEmpty {
    let action = arguments.removeFirst()
    switch action {
    case "execve":
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = [nil]
        execve("/bin/true", argv, envp)
        say("execve: \(errnoName(errno))")
    case "write":
        let path = arguments.removeFirst()
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            say("write \(path): \(errnoName(errno))")
            continue
        }
        say("write \(path): \(result(write(fd, "x", 1) == 1))")
        close(fd)
    case "read":
        let path = arguments.removeFirst()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            say("read \(path): \(errnoName(errno))")
            continue
        }
        var byte: UInt8 = 0
        say("read \(path): \(result(read(fd, &byte, 1) >= 0))")
        close(fd)
    case "alloc":
        let mb = Int(arguments.removeFirst()) ?? 0
        if let pointer = malloc(mb << 20) {
            memset(pointer, 1, mb << 20)
            say("alloc \(mb): ok")
            free(pointer)
        } else {
            say("alloc \(mb): null")
        }
    case "swift-alloc":
        let mb = Int(arguments.removeFirst()) ?? 0
        let array = [UInt8](repeating: 1, count: mb << 20)
        say("swift-alloc \(mb): ok \(array.count)")
    case "thread":
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, threadBody, nil)
        if started == 0 { pthread_join(thread, nil) }
        say("thread: \(started == 0 ? "ok" : errnoName(started))")
    case "dispatch":
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { done.signal() }
        say("dispatch: \(done.wait(timeout: .now() + 60) == .success ? "ok" : "timed out")")
    case "threads":
        let count = Int(arguments.removeFirst()) ?? 1
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            DispatchQueue.global().async {
                // A small allocation on each thread gives it a malloc arena, as a plugin's work would.
                free(malloc(1024))
                started.signal()
                release.wait()
            }
        }
        for _ in 0..<count { started.wait() }
        statusLines().forEach(say)
        for _ in 0..<count { release.signal() }
    case "unshare":
        say("unshare: \(result(sandbox_probe_unshare_user() == 0))")
    case "clone-new-user":
        say("clone-new-user: \(result(sandbox_probe_clone_new_user() == 0))")
    case "ptrace":
        say("ptrace: \(result(sandbox_probe_ptrace_child() == 0))")
    case "dlopen":
        let path = arguments.removeFirst()
        if dlopen(path, RTLD_NOW | RTLD_LOCAL) != nil {
            say("dlopen \(path): ok")
        } else {
            say("dlopen \(path): error \(dlerror().map { String(cString: $0) } ?? "?")")
        }
    case "load":
        let (path, cache, root) = (arguments.removeFirst(), arguments.removeFirst(), arguments.removeFirst())
        let done = DispatchSemaphore(value: 0)
        let outcome = LoadOutcome()
        // Detached: the top-level code is the main actor's, and the main thread waits here.
        Task.detached {
            outcome.text = await load(path, cache: cache, root: root)
            done.signal()
        }
        done.wait()
        say("load \(path): \(outcome.text)")
    case "connect":
        let port = arguments.removeFirst()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port) ?? 0).bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        say("connect \(port): \(result(fd >= 0 && connected))")
        close(fd)
    case "raw-socket":
        let fd = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_ICMP))
        say("raw-socket: \(result(fd >= 0))")
        if fd >= 0 { close(fd) }
    case "resolve":
        let name = arguments.removeFirst()
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, nil, &found)
        say("resolve \(name): \(status == 0 ? "ok" : String(cString: gai_strerror(status)))")
        if let found { freeaddrinfo(found) }
    case "kill-parent":
        say("kill-parent: \(result(kill(getppid(), SIGCONT) == 0))")
    case "replace-sigsys":
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        let replaced = sigaction(SIGSYS, &action, nil) == 0
        say("replace-sigsys: \(replaced ? "ok" : errnoName(errno))")
    case "open-many":
        let count = Int(arguments.removeFirst()) ?? 0
        var opened = 0
        var failure: Int32 = 0
        while opened < count {
            guard open("/dev/null", O_RDONLY) >= 0 else {
                failure = errno
                break
            }
            opened += 1
        }
        say("open-many \(count): \(opened == count ? "ok" : "\(errnoName(failure)) after \(opened)")")
    case "limits":
        let fd = open("/proc/self/limits", O_RDONLY)
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = fd >= 0 ? read(fd, &bytes, bytes.count) : -1
        for line in String(decoding: bytes.prefix(max(n, 0)), as: UTF8.self).split(separator: "\n")
            where ["Max data size", "Max open files", "Max core file size"].contains(where: line.hasPrefix) {
            say("limits " + line.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " "))
        }
    case "status":
        statusLines().forEach(say)
    case "fds":
        var fds: [String] = []
        for fd in Int32(0)..<1024 where fcntl(fd, F_GETFD) >= 0 { fds.append(String(fd)) }
        say("fds: \(fds.joined(separator: " "))")
    default:
        say("usage: unknown action \(action)")
        exit(2)
    }
}
exit(0)
