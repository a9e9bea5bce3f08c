/// Where an error's texts come from. Each error holds one, shared by its copies, so the
/// texts of a lazy error are rendered once however often and wherever they are read.
protocol ErrorText: AnyObject, Sendable {
    var rendered: PlugboardError.Rendered { get }
}

/// Texts known when the error is made: no lock, as nothing is computed later.
final class FixedText: ErrorText {
    let rendered: PlugboardError.Rendered

    init(_ rendered: PlugboardError.Rendered) { self.rendered = rendered }
}

/// Texts a closure computes on first read; the closure runs at most once, as
/// ``PlugboardError/init(_:underlying:describe:)`` promises.
///
/// `@unchecked Sendable`: `cached` and `describe` are only touched under `lock`.
final class DescribedText: ErrorText, @unchecked Sendable {
    private let lock = PThreadMutex()
    private var cached: PlugboardError.Rendered?
    private var describe: (@Sendable () -> PlugboardError.Rendered)?

    init(_ describe: @escaping @Sendable () -> PlugboardError.Rendered) { self.describe = describe }

    var rendered: PlugboardError.Rendered {
        lock.withLock {
            if let cached { return cached }
            let r = describe?() ?? PlugboardError.Rendered(message: "unexplained error")
            cached = r
            describe = nil
            return r
        }
    }
}
