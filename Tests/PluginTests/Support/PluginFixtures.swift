#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport

/// The real plugin files the package builds, loaded the way the host loads them, and the
/// few process and file-system helpers the plugin tests need (no Foundation).
enum PluginFixtures {
    /// The folder with the package's build products (`.build/<triple>/debug`): the test
    /// runner's own folder, outside any `.xctest` bundle.
    static var productsFolder: String { BuildProducts.folder }

    /// `lib<name>.so` in the products folder.
    static func product(_ name: String) -> String { BuildProducts.library(name) }

    /// A plugin loaded into a fresh container by a fresh loader.
    struct Loaded {
        let container: Container
        let record: PluginRecord

        /// The `ObjectStorage` the plugin registered.
        func storage() throws -> any ObjectStorage { try container.resolve() }
    }

    /// The loader's cache, shared by every load of this test process (it is
    /// content-addressed) and removed when the process exits.
    static let cacheFolder: String = {
        let folder = temporaryFolder("plugin-tests-cache")
        atexit { PluginFixtures.removeTree(PluginFixtures.cacheFolder) }
        return folder
    }()

    /// Loads `lib<plugin>.so` through `PluginLoader` into a new container.
    static func load(_ plugin: String, config: [String: ConfigValue] = [:], as name: String? = nil) async throws -> Loaded {
        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cacheFolder))
        let name = name ?? plugin
        let record = await loader.load(.init(name: name, path: product(plugin), config: PluginConfig(config, plugin: name)))
        return Loaded(container: container, record: record)
    }

    /// Loads `lib<plugin>.so` and resolves its storage; throws when the load failed.
    static func loadStorage(_ plugin: String, config: [String: ConfigValue] = [:]) async throws -> any ObjectStorage {
        let loaded = try await load(plugin, config: config)
        guard loaded.record.state == .active else {
            throw FixtureError("plugin \(plugin) did not load: \(loaded.record.error.map { "\($0)" } ?? "no error")")
        }
        return try loaded.storage()
    }

    // MARK: - Files

    /// A fresh folder under /tmp (mode 0755).
    static func temporaryFolder(_ label: String = "plugin-tests") -> String {
        BuildProducts.temporaryFolder(label)
    }

    /// Removes a folder under /tmp and everything in it (without following links).
    static func removeTree(_ path: String) {
        guard path.hasPrefix("/tmp/"), !path.contains("/../") else { return }
        chmod(path, 0o700)
        // paths(under:) lists a folder before its content, so reversed, content comes first.
        for entry in paths(under: path).reversed() { _ = remove(entry) }
        _ = remove(path)
    }

    /// Every path under `folder` (files, folders, links), depth first, without `folder`.
    static func paths(under folder: String) -> [String] {
        var out: [String] = []
        guard let dir = opendir(folder) else { return out }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw -> String in
                let bytes = raw.bindMemory(to: UInt8.self)
                return String(decoding: bytes[0..<(bytes.firstIndex(of: 0) ?? bytes.count)], as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let path = "\(folder)/\(name)"
            out.append(path)
            if entry.pointee.d_type == UInt8(DT_DIR) { out += paths(under: path) }
        }
        return out
    }

    /// The status of `path` without following a final symbolic link, or nil.
    static func status(_ path: String) -> stat? {
        var st = stat()
        return lstat(path, &st) == 0 ? st : nil
    }

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        guard fd >= 0 else { throw FixtureError("could not create \(path)") }
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw FixtureError("could not write \(path)") }
    }

    static func readAll(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw FixtureError("could not open \(path)") }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    // MARK: - Processes

    /// Starts `program` (searched on PATH when it has no `/`) with `arguments`, its output
    /// and errors going to the file `output`, and `extraEnvironment` added to ours.
    static func spawn(_ program: String, _ arguments: [String], output: String,
                      extraEnvironment: [String: String] = [:]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)

        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let pair = String(cString: pointer)
            let name = String(pair.prefix { $0 != "=" })
            if extraEnvironment[name] == nil { environment.append(pair) }
            entry += 1
        }
        environment += extraEnvironment.map { "\($0.key)=\($0.value)" }

        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, program, &actions, nil, argv, envp)
        guard status == 0 else { throw FixtureError("could not start \(program): \(String(cString: strerror(status)))") }
        return pid
    }

    /// Waits for `pid`; returns its exit status, or 128 + the signal that ended it.
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// Runs `program` to completion; returns its output (stdout and stderr), or throws when
    /// it exits with a non-zero status.
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let folder = temporaryFolder("plugin-tests-run")
        defer { unlink("\(folder)/output"); rmdir(folder) }
        let pid = try spawn(program, arguments, output: "\(folder)/output")
        let status = wait(pid)
        let output = String(decoding: (try? readAll("\(folder)/output")) ?? [], as: UTF8.self)
        guard status == 0 else { throw FixtureError("\(program) \(arguments.joined(separator: " ")) exited with \(status): \(output)") }
        return output
    }

    // MARK: - Paths

    static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The process's working directory.
    static var currentDirectory: String {
        guard let pointer = getcwd(nil, 0) else { return "/" }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
