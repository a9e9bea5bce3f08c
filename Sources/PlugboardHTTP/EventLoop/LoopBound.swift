/// A reference that belongs to one ``EventLoop`` (SwiftNIO's `NIOLoopBound`): it may be
/// handed to a task on any thread, but reached only on the loop's thread, where
/// ``execute(_:)`` queues the work. ``value`` checks the thread in debug builds.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    // @unchecked Sendable: the value is touched only on the loop's thread (`value` checks
    // it in debug builds; `execute` runs there), or after the loop ended, when nothing
    // else runs it.
    private let wrapped: Value
    let loop: EventLoop

    init(_ value: Value, loop: EventLoop) {
        loop.assertInLoop()
        wrapped = value
        self.loop = loop
    }

    var value: Value {
        loop.assertInLoop()
        return wrapped
    }

    /// Runs `work` with the value on the loop's thread, soon (``EventLoop/execute(_:)``).
    func execute(_ work: @escaping @Sendable (Value) -> Void) {
        loop.execute { work(self.value) }
    }
}
