#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import CPlugboardSystem

/// Watches folders with inotify and calls `onChange` when a watched name in one of them
/// is written, renamed into place, removed, or appears as a symbolic link.
///
/// Folders, not files (editors save by writing a new file and renaming it over the old,
/// and Kubernetes updates a mounted ConfigMap by swapping its `..data` link): a watch on
/// the file itself would go dead after the first save. In the manifest's folder, names
/// starting with `..` count too, for the ConfigMap's links.
public final class FolderWatcher: Sendable {
    /// A folder and the names in it that matter.
    public struct Target: Sendable, Hashable {
        public var folder: String
        public var names: Set<String>
        /// Also react to `..`-names (a ConfigMap's `..data` link swap).
        public var configMapLinks: Bool

        public init(folder: String, names: Set<String>, configMapLinks: Bool = false) {
            self.folder = folder
            self.names = names
            self.configMapLinks = configMapLinks
        }
    }

    private struct Watches {
        var byDescriptor: [Int32: Target] = [:]
        var byFolder: [String: Int32] = [:]
    }

    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let watches = LockedValueBox(Watches())
    private let onChange: @Sendable () -> Void
    private let logger: Logger

    /// - Throws: `reload.watch_failed` when inotify is not available.
    public init(logger: Logger, onChange: @escaping @Sendable () -> Void) throws(PlugboardError) {
        fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else {
            throw PlugboardError(.watchFailed, "could not start watching files: inotify_init1: \(PluginFile.errnoText(errno))",
                hint: "Raise fs.inotify.max_user_instances, or run with --no-watch and reload with SIGHUP or plugboard reload.")
        }
        var pair: [Int32] = [-1, -1]
        _ = plugboard_pipe_cloexec(&pair)
        wake = (pair[0], pair[1])
        self.onChange = onChange
        self.logger = logger.with("component", "watch")
    }

    /// Watches exactly `targets` from now on (folders no longer named are dropped).
    public func update(_ targets: [Target]) {
        let merged = Dictionary(targets.map { ($0.folder, $0) }) { a, b in
            Target(folder: a.folder, names: a.names.union(b.names), configMapLinks: a.configMapLinks || b.configMapLinks)
        }
        watches.withLock { w in
            for (folder, wd) in w.byFolder where merged[folder] == nil {
                inotify_rm_watch(fd, wd)
                w.byFolder[folder] = nil
                w.byDescriptor[wd] = nil
            }
            for (folder, target) in merged {
                let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ONLYDIR)
                let wd = inotify_add_watch(fd, folder, mask)
                guard wd >= 0 else {
                    logger.warning("cannot watch folder; changes in it are not seen (reload with SIGHUP)", metadata: [
                        "folder": .string(folder), "error": .string(PluginFile.errnoText(errno))])
                    continue
                }
                w.byFolder[folder] = wd
                w.byDescriptor[wd] = target
            }
        }
    }

    /// Reads events on a thread of its own until ``stop()``; false (logged) when the
    /// system refuses a thread: then no change is seen, and SIGHUP still reloads.
    @discardableResult
    public func start() -> Bool {
        guard Threads.spawn({ [self] in loop() }) else {
            logger.warning("cannot start the thread that watches files; changes are not seen (reload with SIGHUP)")
            return false
        }
        return true
    }

    /// Ends the reading thread; the watches go with the descriptor.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        defer {
            close(fd)
            close(wake.read)
            close(wake.write)
        }
        while true {
            let ready = poll(&fds, 2, -1)
            if ready < 0 { if errno == EINTR { continue }; return }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }; return }
            if relevant(buffer, count: n) { onChange() }
        }
    }

    /// Whether any event in the batch names a watched file.
    private func relevant(_ buffer: [UInt8], count: Int) -> Bool {
        let known = watches.withLock { $0.byDescriptor }
        var offset = 0
        var hit = false
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= count {
            let (wd, mask, length) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                return (event.wd, event.mask, Int(event.len))
            }
            let nameStart = offset + headerSize
            let nameEnd = min(nameStart + length, count)
            let name = String(decoding: buffer[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
            offset = nameStart + length
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { hit = true; continue }
            guard let target = known[wd] else { continue }
            guard target.names.contains(name) || (target.configMapLinks && name.hasPrefix("..")) else { continue }
            // A file being created is still being written; its close comes as its own
            // event. A link is whole as soon as it exists.
            if mask & UInt32(IN_CREATE) != 0 {
                var st = stat()
                guard lstat("\(target.folder)/\(name)", &st) == 0, st.st_mode & S_IFMT == S_IFLNK else { continue }
            }
            hit = true
        }
        return hit
    }
}

extension PluginHost {
    /// The folders to watch: the manifest's (its name, and `..` links), and each selected
    /// plugin file's (its name).
    public var watchTargets: [FolderWatcher.Target] {
        let (manifest, fingerprints) = state.withLock { ($0.manifest, $0.fingerprints) }
        let manifestPath = manifest.resolvePath(PluginFile.fileName(configuration.manifestPath))
        var targets = [FolderWatcher.Target(folder: manifest.directory, names: [PluginFile.fileName(manifestPath)],
                                            configMapLinks: true)]
        for fingerprint in fingerprints.values {
            guard let path = fingerprint.path else { continue }
            let absolute = manifest.resolvePath(path)
            targets.append(.init(folder: PluginFile.parentFolder(absolute), names: [PluginFile.fileName(absolute)]))
        }
        return targets
    }
}
