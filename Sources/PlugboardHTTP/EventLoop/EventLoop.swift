#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import PlugboardConcurrency
import Synchronization

/// One thread running one `epoll` instance, in SwiftNIO's shape: the loop owns the
/// descriptors registered with it and everything attached to them, which only its own
/// thread touches; other threads hand it work with ``execute(_:)``, which rings an
/// eventfd doorbell. A ticker runs every ``tickSeconds`` for deadlines.
///
/// Descriptors are registered under an id the loop never reuses, not under their number:
/// an event read in the same batch as a close must not reach the connection that was
/// accepted on the same number a moment later.
final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: `slots`, `freeSlots`, `nextID`, `running`, `now`, `local` and
    // `scratch` are touched only on the loop's thread; `queue` is locked, `thread` atomic.

    let index: Int
    static let tickSeconds = 0.25
    private let epoll: Int32
    private let doorbell: Int32
    private let queue = LockedValueBox(Queue())
    private struct Queue {
        var work: [@Sendable () -> Void] = []
        var rung = false
        /// The loop's thread has ended and its doorbell is closed: work runs on the caller.
        var ended = false
    }
    /// Registered sources by slot; an id is its slot in the low 32 bits and a count that
    /// never repeats above them, so a slot reused by a new descriptor does not answer to
    /// the old id. An array, not a dictionary: looked up for every event, and hashing the
    /// id showed in a small GET's profile.
    private var slots: [(id: UInt64, source: (any EventSource)?)] = []
    private var freeSlots: [Int] = []
    private var nextID: UInt64 = 16
    /// The loop's thread once it runs, else 0: atomic, not locked, because every answer
    /// asks ``inLoop``.
    private let thread = Atomic<UInt>(0)
    private var running = true
    /// The monotonic time when the loop last woke (loop thread only): deadlines and
    /// transfer rates read it instead of the clock, which they asked six times a request.
    private(set) var now = MonotonicClock.now()
    private var dates = HTTPDateCache()
    /// The `Date` header's text for an answer written now (loop thread only).
    var httpDate: String { dates.current() }
    /// Work queued from the loop's own thread: no lock, no doorbell (loop thread only).
    private var local: [@Sendable () -> Void] = []
    private var localBatch: [@Sendable () -> Void] = []
    /// Connections holding an answer made at once, to write after the batch (loop thread
    /// only): a list of connections rather than a closure each, whose context was an
    /// allocation an answer.
    private var answersReady: [Connection] = []
    private var answersBatch: [Connection] = []
    /// A scratch buffer for `recv`: a connection copies out only what it keeps, so an
    /// idle connection owns no buffer at all.
    var scratch = [UInt8](repeating: 0, count: 64 << 10)

    private static let doorbellID: UInt64 = 1

    init(index: Int) throws(EventLoopError) {
        self.index = index
        epoll = plugboard_epoll_create()
        guard epoll >= 0 else { throw EventLoopError(call: "epoll_create1", errno: errno) }
        doorbell = plugboard_eventfd()
        guard doorbell >= 0 else {
            let code = errno
            close(epoll)
            throw EventLoopError(call: "eventfd", errno: code)
        }
        guard plugboard_epoll_add(epoll, doorbell, UInt32(PLUGBOARD_EPOLL_IN), Self.doorbellID) == 0 else {
            let code = errno
            close(doorbell)
            close(epoll)
            throw EventLoopError(call: "epoll_ctl", errno: code)
        }
    }

    /// Starts the loop's thread.
    func start() throws(EventLoopError) {
        let started = Threads.spawn(stackBytes: 8 << 20) { self.run() }
        guard started else { throw EventLoopError(call: "pthread_create", errno: errno) }
    }

    /// Whether the caller runs on this loop's thread.
    var inLoop: Bool {
        let thread = thread.load(ordering: .acquiring)
        return thread != 0 && pthread_equal(thread, pthread_self()) != 0
    }

    /// Traps, in debug builds, when called off the loop's thread while the loop runs
    /// (SwiftNIO's `assertInEventLoop`): what the loop owns is touched on its thread only.
    /// Before the loop starts and after it ends no thread runs it, and anyone may.
    @inline(__always)
    func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop || thread.load(ordering: .acquiring) == 0, "loop \(index)'s state touched off its thread",
               file: file, line: line)
    }

    /// Runs `work` on the loop's thread, soon; from the loop's own thread it is queued too,
    /// so that it never runs inside the caller's stack (it runs after the current batch of
    /// events, without ringing the doorbell).
    ///
    /// Once the loop has ended, `work` runs at once on the caller's thread: every
    /// connection is closed by then, and work for a closed connection only fails what
    /// waits on it (a task finishing late must not leave a continuation hanging, nor ring
    /// a doorbell whose number another descriptor may have taken).
    func execute(_ work: @escaping @Sendable () -> Void) {
        // Every small answer is queued from the loop itself: that path takes no lock.
        if inLoop {
            local.append(work)
            return
        }
        let runNow = queue.withLock { q -> Bool in
            if q.ended { return true }
            q.work.append(work)
            if !q.rung {
                q.rung = true
                // Under the lock: the loop closes the doorbell under it too.
                var one: UInt64 = 1
                _ = write(doorbell, &one, 8)
            }
            return false
        }
        if runNow { work() }
    }

    /// Has `connection` write its ready answer after the current batch (loop thread only),
    /// as ``execute(_:)`` would run it.
    func answerLater(_ connection: Connection) {
        assertInLoop()
        answersReady.append(connection)
    }

    /// Registers `fd` for `events`; returns its id for ``modify`` and ``remove``.
    func register(_ fd: Int32, events: UInt32, source: any EventSource) -> UInt64? {
        assertInLoop()
        let slot = freeSlots.popLast() ?? slots.count
        let id = nextID << 32 | UInt64(slot)
        nextID += 1
        guard plugboard_epoll_add(epoll, fd, events, id) == 0 else {
            if slot < slots.count { freeSlots.append(slot) }
            return nil
        }
        if slot == slots.count { slots.append((id, source)) } else { slots[slot] = (id, source) }
        return id
    }

    /// The source registered under `id`, if it still is (loop thread only).
    func source(_ id: UInt64) -> (any EventSource)? {
        let slot = Int(truncatingIfNeeded: id & 0xFFFF_FFFF)
        guard slot < slots.count, slots[slot].id == id else { return nil }
        return slots[slot].source
    }

    func modify(_ fd: Int32, id: UInt64, events: UInt32) {
        assertInLoop()
        _ = plugboard_epoll_modify(epoll, fd, events, id)
    }

    /// Deregisters `fd`; the caller closes it afterwards, so the number cannot be reused
    /// while the loop still knows it.
    func remove(_ fd: Int32, id: UInt64) {
        assertInLoop()
        _ = plugboard_epoll_delete(epoll, fd)
        let slot = Int(truncatingIfNeeded: id & 0xFFFF_FFFF)
        guard slot < slots.count, slots[slot].id == id else { return }
        slots[slot] = (0, nil)
        freeSlots.append(slot)
    }

    /// What is registered now (loop thread only).
    func registeredSources() -> [any EventSource] {
        assertInLoop()
        return slots.compactMap(\.source)
    }

    /// Ends the loop after the work queued so far.
    func shutdown() {
        execute { self.running = false }
    }

    private func run() {
        thread.store(pthread_self(), ordering: .releasing)
        // A process inherits its parent's blocked signals (test runners and some
        // supervisors block SIGTERM and SIGINT); the loops take them, so that a stop
        // signal always reaches its handler.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        now = MonotonicClock.now()
        nextTick = now + Self.tickSeconds
        while running {
            turn(timeoutMilliseconds: max(0, Int32(((nextTick - now) * 1000).rounded(.up))))
        }
        thread.store(0, ordering: .releasing)
        end()
    }

    /// Once no thread runs the loop (its own, or an embedded loop's driver): the work still
    /// queued runs, and from here on work queued runs at once on its caller (see
    /// ``execute(_:)``); the descriptors close.
    func end() {
        let left = queue.withLock { q -> [@Sendable () -> Void] in
            q.ended = true
            close(doorbell)
            defer { q.work = [] }
            return q.work
        }
        let mine = local
        local = []
        for item in mine + left { item() }
        for connection in answersReady { connection.writeReadyAnswer() }
        answersReady = []
        close(epoll)
    }

    /// The events of one `epoll_wait` (loop thread only).
    private var eventData = [UInt64](repeating: 0, count: 256)
    private var eventMasks = [UInt32](repeating: 0, count: 256)
    /// When the registered sources are next ticked (loop thread only).
    private var nextTick = 0.0
    /// The time of an embedded loop (``EmbeddedHTTPServer``), which its driver sets; nil
    /// for a loop on its own thread, which reads the monotonic clock.
    private var manualTime: Double?

    /// One turn of the loop: waits up to `timeoutMilliseconds` for events, hands them to
    /// their sources, runs the work queued meanwhile, and ticks every source when a tick
    /// is due.
    func turn(timeoutMilliseconds: Int32) {
        assertInLoop()
        let n = eventData.withUnsafeMutableBufferPointer { d in
            eventMasks.withUnsafeMutableBufferPointer { e in
                plugboard_epoll_wait(epoll, d.baseAddress, e.baseAddress, 256, timeoutMilliseconds)
            }
        }
        now = clock()
        if n > 0 {
            for i in 0..<Int(n) {
                if eventData[i] == Self.doorbellID {
                    var count: UInt64 = 0
                    _ = read(doorbell, &count, 8)
                    continue
                }
                // A source removed earlier in this batch is skipped.
                source(eventData[i])?.ready(eventMasks[i], loop: self)
            }
        }
        runQueued()
        now = clock()
        if now >= nextTick {
            nextTick = now + Self.tickSeconds
            for source in registeredSources() { source.tick(now, loop: self) }
        }
    }

    /// The time now, to the moment: the monotonic clock, or an embedded loop's own (which
    /// moves only when its driver moves it). ``now`` is the time the loop last woke.
    func clock() -> Double {
        manualTime ?? MonotonicClock.now()
    }

    /// Makes this loop an embedded one, run by the caller's turns on a clock it sets
    /// (``EmbeddedHTTPServer``): it never starts a thread of its own.
    func embed(now time: Double) {
        manualTime = time
        now = time
        nextTick = time + Self.tickSeconds
    }

    /// Sets an embedded loop's clock.
    func setTime(_ time: Double) {
        assertInLoop()
        manualTime = time
    }

    /// Runs the caller's `body` as the loop's thread: an embedded loop's driver does so
    /// around its turns, so that the loop's checks and ``execute(_:)`` see it as the loop.
    func runAsLoopThread<T>(_ body: () throws -> T) rethrows -> T {
        thread.store(pthread_self(), ordering: .releasing)
        defer { thread.store(0, ordering: .releasing) }
        return try body()
    }

    /// The batch being run (loop thread only): swapped with the queue's array, so that
    /// neither is allocated again for every batch.
    private var batch: [@Sendable () -> Void] = []

    /// What `queue` holds, with `spare` (empty) put in its place, so that neither array is
    /// allocated again for every batch. The two accesses end before the items run: running
    /// one may queue more (``execute(_:)``, ``answerLater(_:)``), which an access still
    /// held across the run would make a simultaneous modification (a trap in debug builds).
    private static func take<Item>(_ queue: inout [Item], spare: inout [Item]) -> [Item] {
        var mine: [Item] = []
        swap(&spare, &mine)
        swap(&queue, &mine)
        return mine
    }

    /// `items`, once run, emptied and kept as the next spare.
    private static func recycle<Item>(_ items: consuming [Item], as spare: inout [Item]) {
        var items = items
        items.removeAll(keepingCapacity: items.count <= 1024)
        spare = items
    }

    private func runQueued() {
        // Work the loop queues for itself while this runs did not ring the doorbell, so it
        // runs now, not after the next wait.
        while true {
            if !answersReady.isEmpty {
                let ready = Self.take(&answersReady, spare: &answersBatch)
                for connection in ready { connection.writeReadyAnswer() }
                Self.recycle(ready, as: &answersBatch)
                continue
            }
            if !local.isEmpty {
                let work = Self.take(&local, spare: &localBatch)
                for item in work { item() }
                Self.recycle(work, as: &localBatch)
                continue
            }
            var taken = batch
            batch = []
            queue.withLock { q in
                swap(&q.work, &taken)
                q.rung = false
            }
            if taken.isEmpty {
                batch = taken
                return
            }
            for item in taken { item() }
            taken.removeAll(keepingCapacity: taken.count <= 1024)
            batch = taken
        }
    }
}

/// What an ``EventLoop`` calls back, on its own thread, for a registered descriptor.
protocol EventSource: AnyObject {
    /// `events` is a mask of PLUGBOARD_EPOLL_* bits.
    func ready(_ events: UInt32, loop: EventLoop)
    /// Every ``EventLoop/tickSeconds``, with the monotonic time: for deadlines.
    func tick(_ now: Double, loop: EventLoop)
}

/// A system call the event loop needed failed.
struct EventLoopError: Error {
    let call: String
    let errno: Int32
    var message: String { "\(call)() failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}
