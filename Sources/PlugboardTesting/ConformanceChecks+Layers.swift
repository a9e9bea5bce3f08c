import PlugboardAPI

/// A layer (`registerLayer`, PlugboardAPI 1.6) that implements only the whole-object
/// `get(_:)` passes every other rule, and turns each GET into a whole read held in memory:
/// the API's default `get(_:range:)` reads the whole object and slices it, and its default
/// `getWithoutWaiting` answers nil, so the server waits for what the storage below had at
/// once. This rule watches what reaches the storage below.
extension ConformanceChecks {
    static let layerRules: [Definition] = [
        Definition("layer_keeps_reads_streamed",
                   sinceMinor: 6, upgrade: "forward get(_:range:) and getWithoutWaiting(_:range:) to the storage below",
                   "Through a layer, a ranged or a whole get(_:range:) reaches the storage below as get(_:range:), never as a whole get(_:) that the layer slices, and a read the storage below answers at once (getWithoutWaiting) the layer answers at once too. Skipped for a storage that is not a layer over a storage the suite observes (PluginUnderTest.load with wraps, or ObjectStorageConformance(layer:over:)).",
                   keepsReadsStreamed),
    ]

    private static func keepsReadsStreamed(_ c: ConformanceContext) async throws {
        guard let below = c.below else {
            throw ConformanceSkip("not a layer over a storage the suite observes")
        }
        let key = c.key("object")
        let data = c.bytes(3000, seed: 71)
        try await c.put(key, data)
        guard let base = below.storage else {
            throw ConformanceCheckFailure("put of key \(c.show(key)) through the layer succeeded, but the layer was never handed the storage below: expected a layer built over the storage it wraps (registerLayer's below)")
        }
        _ = below.take(key)
        for range: ByteRange? in [.closed(first: 10, last: 99), nil] {
            let what = "get(_:range:) of key \(c.show(key)) with range \(range.map { "\($0)" } ?? "nil") through the layer"
            let bytes: [UInt8]
            do {
                bytes = try await c.storage.get(key, range: range).body.collect(upTo: 1 << 20)
            } catch {
                throw ConformanceCheckFailure("\(what) failed with \(ConformanceText.describe(error))")
            }
            let expected = range == nil ? data : Array(data[10...99])
            try c.expect(bytes == expected, "\(what): expected \(expected.count) bytes of the object, found \(bytes.count) bytes\(bytes.count == expected.count ? " with different content" : "")")
            let reads = below.take(key)
            if reads.contains(.whole) {
                throw ConformanceCheckFailure("\(what) reached the storage below as get(_:), a whole read held in memory: expected get(_:range:) below (a layer that does not implement get(_:range:) gets the API's default, which reads the whole object and slices it); forward get(_:range:) to the storage below")
            }
        }
        let direct: ReadyObject?
        do throws(PlugboardError) {
            direct = try base.getWithoutWaiting(key, range: nil)
        } catch {
            throw ConformanceCheckFailure("getWithoutWaiting of key \(c.show(key)) on the storage below failed with \(ConformanceText.describe(error))")
        }
        // A storage below that waits for every read (S3, REST) leaves nothing to keep at once.
        guard direct != nil else { return }
        let above: ReadyObject?
        do throws(PlugboardError) {
            above = try c.storage.getWithoutWaiting(key, range: nil)
        } catch {
            throw ConformanceCheckFailure("getWithoutWaiting of key \(c.show(key)) through the layer failed with \(ConformanceText.describe(error)), where the storage below answers it at once")
        }
        _ = below.take(key)
        try c.expect(above != nil, "getWithoutWaiting of key \(c.show(key)) through the layer: expected an answer at once, as the storage below gives, found nil (wait for get), the API's default for a storage that does not implement it; forward getWithoutWaiting(_:range:) to the storage below")
    }
}
