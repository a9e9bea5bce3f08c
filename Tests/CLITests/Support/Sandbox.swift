#if canImport(Glibc)
import Glibc
#endif

/// A fresh temporary folder to run `plugboard` in: the working directory, a `home`
/// (so that nothing reaches the real `~/.cache`), a plugin cache, and the manifests and
/// files a test writes.
struct Sandbox: Sendable {
    /// The folder (mode 0755, so the loader's folder checks pass).
    let root: String

    init(_ label: String = "plugboard-cli") throws {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buf -> String? in
            guard let base = buf.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        guard let made else { throw FixtureError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        chmod(made, 0o755)
        root = made
        try makeFolder("home")
    }

    /// The plugin cache every run is given with `--cache-dir`.
    var cacheDirectory: String { "\(root)/cache" }

    /// `HOME` for every run.
    var home: String { "\(root)/home" }

    /// An absolute path inside the sandbox.
    func path(_ relative: String) -> String { "\(root)/\(relative)" }

    @discardableResult
    func write(_ relative: String, _ text: String) throws -> String {
        try write(relative, Array(text.utf8))
    }

    @discardableResult
    func write(_ relative: String, _ bytes: [UInt8]) throws -> String {
        let target = path(relative)
        let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FixtureError("could not create \(target): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw FixtureError("could not write \(target)") }
            off += n
        }
        return target
    }

    func read(_ relative: String) throws -> [UInt8] {
        let source = relative.hasPrefix("/") ? relative : path(relative)
        let fd = open(source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FixtureError("could not open \(source): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return out }
            out += chunk[0..<n]
        }
    }

    /// The names in a folder (without `.` and `..`); empty when it does not exist.
    func entries(_ relative: String) -> [String] {
        guard let folder = opendir(relative.hasPrefix("/") ? relative : path(relative)) else { return [] }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    func exists(_ relative: String) -> Bool {
        access(relative.hasPrefix("/") ? relative : path(relative), F_OK) == 0
    }

    @discardableResult
    func makeFolder(_ relative: String) throws -> String {
        let target = path(relative)
        guard mkdir(target, 0o755) == 0 || errno == EEXIST else {
            throw FixtureError("could not create folder \(target): \(String(cString: strerror(errno)))")
        }
        return target
    }

    /// Runs `plugboard arguments` in the sandbox with `--cache-dir` set to
    /// ``cacheDirectory`` (appended after the arguments, where global options are
    /// accepted too), unless the arguments already name one or contain `--`, or the
    /// command maps no plugin.
    func run(_ arguments: [String], stdin: [UInt8] = [], environment: [String: String] = [:],
             cacheDir: Bool = true) async -> CommandResult {
        var args = arguments
        // Commands that map no plugin refuse --cache-dir as a usage error.
        let mapsPlugins = !["new-plugin", "new-contract", "reload", "version", "completion"].contains(args.first ?? "")
        if cacheDir && mapsPlugins && !args.contains("--cache-dir") && !args.contains("--") {
            args += ["--cache-dir", cacheDirectory]
        }
        return await runExactly(args, stdin: stdin, environment: environment)
    }

    /// Runs `plugboard arguments` as given, in the sandbox, with `HOME` in it.
    func runExactly(_ arguments: [String], stdin: [UInt8] = [], environment: [String: String] = [:]) async -> CommandResult {
        var env = ["HOME": home]
        for (k, v) in environment { env[k] = v }
        return await CommandRunner.run(arguments, in: root, stdin: stdin, environment: env)
    }

    /// Removes the folder and everything in it. Blocking (`rm` takes milliseconds): it runs
    /// in `defer` blocks, a `deinit` and `atexit`, none of which can await.
    func remove() {
        _ = CommandRunner.spawnBlocking("/bin/rm", ["-rf", root], in: "/", environment: [:])
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
