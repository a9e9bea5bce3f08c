import PlugboardAPI
import PlugboardConcurrency

/// Bodies the streaming rules put: given chunks, with an honest or a false length, or
/// one that fails or stalls partway, so that every backend is fed exactly the same ones.
enum ConformanceBody {
    /// What a failing body throws, so that a rule can tell it from the backend's own errors.
    struct Failure: Error, CustomStringConvertible {
        var description: String { "the conformance suite's body failed on purpose after its first chunks" }
    }

    /// `data` cut into chunks whose sizes cycle through `sizes` (odd ones, so that no
    /// backend's buffer size lines up with them).
    static func chunks(_ data: [UInt8], sizes: [Int] = [1, 7, 4093, 65_537, 13]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var offset = 0, index = 0
        while offset < data.count {
            let size = min(sizes[index % sizes.count], data.count - offset)
            out.append(Array(data[offset..<(offset + size)]))
            offset += size
            index += 1
        }
        return out
    }

    /// A body that yields `chunks` in order, then ends; or, with `failAfter`, throws
    /// ``Failure`` once that many chunks are out.
    static func make(_ chunks: [[UInt8]], length: Int?, failAfter: Int? = nil) -> ObjectBody {
        let next = LockedValueBox(0)
        return ObjectBody(length: length) {
            let index = next.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            if let failAfter, index >= failAfter { throw Failure() }
            return index < chunks.count ? chunks[index] : nil
        }
    }

    /// A body that yields `first`, then reports through `started` and waits (a long
    /// sleep, which cancellation ends with `CancellationError`), as an upload whose
    /// client went quiet does.
    static func stalling(after first: [UInt8], length: Int, started: AsyncStream<Void>.Continuation) -> ObjectBody {
        let sent = LockedValueBox(false)
        return ObjectBody(length: length) {
            if !sent.withLock({ value in defer { value = true }; return value }) { return first }
            started.yield()
            try await Task.sleep(for: .seconds(600))
            return nil
        }
    }
}
