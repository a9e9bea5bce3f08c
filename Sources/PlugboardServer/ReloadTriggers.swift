#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardConcurrency
import Synchronization

/// What makes `plugboard serve` reload: SIGHUP, and the watchers on the manifest's folder
/// and the plugin files' folders (`POST /v1/admin/reload` is a route).
///
/// With hot swap off, SIGHUP is logged and ignored (it never ends the process), and a
/// changed manifest is logged once with "restart to apply".
final class ReloadTriggers: Sendable {
    private let watcher: FolderWatcher?
    private let hangup: HangupReader?

    private init(watcher: FolderWatcher?, hangup: HangupReader?) {
        self.watcher = watcher
        self.hangup = hangup
    }

    static func start(host: PluginHost, mode: PluginHost.HotSwapMode, logger: Logger,
                      notifier: SystemdNotifier?) -> ReloadTriggers {
        let log = logger.with("component", "hot-swap")
        let hangup = HangupReader.install { [host] in
            guard host.hotSwapMode.enabled else {
                let reason = host.hotSwapMode.reason ?? "hot swap is off"
                log.notice("SIGHUP received; \(reason); restart to apply")
                // systemd's reload (Type=notify-reload sends SIGHUP) waits for RELOADING=1
                // and READY=1; answering at once ends it instead of timing it out.
                notifier?.reloading(status: "SIGHUP: \(reason)")
                notifier?.ready(status: "\(reason); restart to apply")
                return
            }
            Task { _ = await host.reload(trigger: "signal") }
        }
        var watcher: FolderWatcher?
        let warned = Atomic<Bool>(false)
        do throws(PlugboardError) {
            if mode.watching {
                let w = try FolderWatcher(logger: logger) { [host] in host.fileChanged() }
                host.onReload { [weak w, host] _ in w?.update(host.watchTargets) }
                w.update(host.watchTargets)
                watcher = w
            } else if !mode.enabled {
                let w = try FolderWatcher(logger: logger) {
                    guard !warned.exchange(true, ordering: .relaxed) else { return }
                    log.notice("the manifest changed; \(mode.reason ?? "hot swap is off"); restart to apply")
                }
                w.update(Array(host.watchTargets.prefix(1)))
                watcher = w
            }
            watcher?.start()
        } catch {
            log.warning("\(error.message); reload with SIGHUP or plugboard reload", metadata: ["code": .string(error.code.rawValue)])
        }
        return ReloadTriggers(watcher: watcher, hangup: hangup)
    }

    func stop() {
        watcher?.stop()
        hangup?.stop()
    }
}

/// SIGHUP writes one byte to a pipe, which is all a signal handler may safely do; a
/// thread reads it and calls `action`.
final class HangupReader: Sendable {
    static let descriptor = Atomic<Int32>(-1)
    private let read: Int32
    private let write: Int32

    private init(read: Int32, write: Int32) {
        self.read = read
        self.write = write
    }

    static func install(_ action: @escaping @Sendable () -> Void) -> HangupReader? {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let reader = HangupReader(read: fds[0], write: fds[1])
        descriptor.store(fds[1], ordering: .sequentiallyConsistent)
        signal(SIGHUP) { _ in
            let fd = HangupReader.descriptor.load(ordering: .sequentiallyConsistent)
            var byte: UInt8 = 1
            if fd >= 0 { _ = Glibc.write(fd, &byte, 1) }
        }
        // A process inherits its parent's blocked signals; this thread takes SIGHUP.
        let readEnd = fds[0]
        let started = Threads.spawn {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGHUP)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            var byte: UInt8 = 0
            while true {
                let n = Glibc.read(readEnd, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 || byte == 0 { return }
                action()
            }
        }
        guard started else {
            // No thread to act on it: SIGHUP is ignored rather than left to end the process.
            reader.stop()
            return nil
        }
        return reader
    }

    /// Ends the reading thread; SIGHUP is ignored from here to exit.
    func stop() {
        signal(SIGHUP, SIG_IGN)
        HangupReader.descriptor.store(-1, ordering: .sequentiallyConsistent)
        var zero: UInt8 = 0
        _ = Glibc.write(write, &zero, 1)
    }
}
