#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failure of the load benchmark's set-up (compiling, writing files, a plugin that did
/// not load): the benchmark stops with this message.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `argv` (argv[0] a path) to completion with standard output and standard error
/// sent to the given files (nil: /dev/null); returns the exit status (128 + signal if it
/// was killed).
func runProcess(_ argv: [String], stdout: String? = nil, stderr: String? = nil) throws(BenchFailure) -> Int32 {
    let pid = try spawnProcess(argv, stdout: stdout, stderr: stderr)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw BenchFailure("waitpid failed: \(String(cString: strerror(errno)))") }
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
}

/// Starts `argv` (argv[0] a path) with standard output and standard error sent to the
/// given files (nil: /dev/null) and `descriptors` as its 3, 4, ... (a worker's wire), and
/// returns without waiting.
func spawnProcess(_ argv: [String], stdout: String? = nil, stderr: String? = nil, descriptors: [Int32] = []) throws(BenchFailure) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    // Staged above the target numbers first, so that no dup2 overwrites a descriptor still
    // to be moved (a source may already be 3 or 4).
    let staged = descriptors.map { fcntl($0, F_DUPFD_CLOEXEC, 3 + Int32(descriptors.count)) }
    defer { for fd in staged where fd >= 0 { close(fd) } }
    guard !staged.contains(-1) else { throw BenchFailure("could not duplicate a descriptor: \(String(cString: strerror(errno)))") }
    for (index, fd) in staged.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, 3 + Int32(index)) }
    let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    defer { for a in cArgs { free(a) } }
    var pid = pid_t()
    let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
    guard rc == 0 else { throw BenchFailure("could not start \(argv[0]): \(String(cString: strerror(rc)))") }
    return pid
}

/// The first executable `name` in `$PATH`, or nil.
func findInPath(_ name: String) -> String? {
    guard let path = getenv("PATH") else { return nil }
    for folder in String(cString: path).split(separator: ":") where !folder.isEmpty {
        let candidate = "\(folder)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// The folder of the running executable (the build folder: `.build/release`).
func executableFolder() -> String? {
    guard let p = realpath("/proc/self/exe", nil) else { return nil }
    defer { free(p) }
    let path = String(cString: p)
    guard let slash = path.lastIndex(of: "/") else { return nil }
    return String(path[..<slash])
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// Creates `path` with mode 0700 (its parent must exist); an existing folder is fine.
func makeFolder(_ path: String) throws(BenchFailure) {
    if mkdir(path, 0o700) != 0 && errno != EEXIST {
        throw BenchFailure("could not create \(path): \(String(cString: strerror(errno)))")
    }
}

/// Removes `path` and everything under it (no symbolic links are followed).
func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if st.st_mode & S_IFMT == S_IFDIR {
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree("\(path)/\(name)") }
        }
        rmdir(path)
    } else {
        unlink(path)
    }
}

func readFile(_ path: String) throws(BenchFailure) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchFailure("could not open \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n == 0 { break }
        if n < 0 {
            if errno == EINTR { continue }
            throw BenchFailure("could not read \(path): \(String(cString: strerror(errno)))")
        }
        out.append(contentsOf: chunk[0..<n])
    }
    return out
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws(BenchFailure) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw BenchFailure("could not create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    let ok = bytes.withUnsafeBytes { buf -> Bool in
        guard buf.count > 0 else { return true }
        var off = 0
        while off < buf.count {
            let n = write(fd, buf.baseAddress! + off, buf.count - off)
            if n < 0 { if errno == EINTR { continue }; return false }
            off += n
        }
        return true
    }
    guard ok else { throw BenchFailure("could not write \(path): \(String(cString: strerror(errno)))") }
}

func writeFile(_ path: String, _ text: String) throws(BenchFailure) {
    try writeFile(path, Array(text.utf8))
}
