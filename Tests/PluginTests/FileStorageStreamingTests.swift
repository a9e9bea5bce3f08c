import Foundation
import PlugboardAPI
import PlugboardTesting
import Testing

/// FileStorage's streaming forms beyond the conformance rules: chunks reach the disk as
/// they come (the body is never held whole), ranged reads come in bounded chunks from one
/// version of the object, and `.absent` holds across two storages on one root.
@Suite struct FileStorageStreamingTests {
    /// Bytes in the temporary folder's files: how much of an upload is on disk.
    private func temporaryBytes(_ fixture: FileStorageFixture) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fixture.temporaryFolder)) ?? []
        return names.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: fixture.temporaryFolder + "/" + name)[.size] as? Int) ?? 0
            return total + size
        }
    }

    @Test func streamedPut_writesChunksToTheTemporaryFileAsTheyCome() async throws {
        let fixture = FileStorageFixture("filestorage-stream-put")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        let chunk = [UInt8](repeating: 0xAB, count: 64 * 1024)
        let chunkCount = 64  // 4 MiB in all
        let onDisk = LockedBytes()
        let body = ObjectBody(length: chunk.count * chunkCount) {
            let index = onDisk.nextIndex()
            // Halfway through, what the storage wrote so far must already be on disk.
            if index == chunkCount / 2 { onDisk.record(temporaryBytes(fixture)) }
            return index < chunkCount ? chunk : nil
        }
        let info = try await storage.put("big", body: body, contentType: nil, metadata: [:], condition: .none)
        #expect(info.size == chunk.count * chunkCount)
        // 32 chunks were read; all but the pending 256 KiB are written.
        let halfway = try #require(onDisk.recorded)
        #expect(halfway >= 32 * chunk.count - 256 * 1024, "only \(halfway) bytes on disk after 2 MiB of the body")
        #expect(try await storage.head("big").etag == (try FileStorageFixture.md5(Array(repeating: 0xAB, count: chunk.count * chunkCount))))
        #expect(temporaryBytes(fixture) == 0)
    }

    @Test func rangedGet_readsInChunksOfAtMost256KiB_fromTheVersionItOpened() async throws {
        let fixture = FileStorageFixture("filestorage-stream-get")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        let first = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await storage.put("obj", data: first)
        let stream = try await storage.get("obj", range: .from(100))
        #expect(stream.range == 100..<(3 << 20))
        // Replace the object while the body is being read: the open file keeps the old one.
        try await storage.put("obj", data: [1, 2, 3])
        var sizes: [Int] = []
        var bytes: [UInt8] = []
        for try await chunk in stream.body {
            sizes.append(chunk.count)
            bytes += chunk
        }
        #expect(bytes == Array(first[100...]))
        #expect(sizes.allSatisfy { $0 <= 256 * 1024 })
        #expect(sizes.count == 12)
        #expect(try await storage.get("obj", range: nil).body.collect(upTo: 10) == [1, 2, 3])
    }

    /// A body of more than one chunk is also the file's region, which the server sends with
    /// sendfile (PlugboardAPI 1.7); one chunk or less is read at once and has none.
    @Test func get_handsOverTheFilesRegion_ofTheWholeObjectOrTheRange() async throws {
        let fixture = FileStorageFixture("filestorage-region")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        let data = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try await storage.put("obj", data: data)
        let whole = try await storage.get("obj", range: nil)
        let region = try #require(whole.body.fileRegion)
        #expect(region.length == data.count)
        #expect(try region.read(count: data.count, at: 0) == data)
        let ranged = try await storage.get("obj", range: .from(1000))
        let part = try #require(ranged.body.fileRegion)
        #expect(part.offset == region.offset + 1000)
        #expect(try part.read(count: part.length, at: 0) == Array(data[1000...]))
        // Iterating the body, as a layer does, still yields the bytes.
        #expect(try await ranged.body.collect(upTo: 1 << 20) == Array(data[1000...]))
        #expect(try await storage.get("obj", range: .from(data.count - 10)).body.fileRegion == nil)
    }

    @Test func absent_isExclusiveAcrossTwoStoragesOnOneRoot() async throws {
        let fixture = FileStorageFixture("filestorage-absent-two")
        defer { fixture.remove() }
        let one = try await fixture.storage()
        let two = try await fixture.storage()
        let results = await withTaskGroup(of: Bool.self) { group -> [Bool] in
            for index in 0..<16 {
                let storage = index % 2 == 0 ? one : two
                group.addTask {
                    (try? await storage.put("claim", data: [UInt8(index)], condition: .absent)) != nil
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0 }.count == 1)
        #expect(temporaryBytes(fixture) == 0)
    }
}

/// A counter and one recorded number, shared with a body's closure.
private final class LockedBytes: @unchecked Sendable {
    private let lock = NSLock()
    private var index = 0
    private var value: Int?

    func nextIndex() -> Int { lock.withLock { defer { index += 1 }; return index } }
    func record(_ bytes: Int) { lock.withLock { value = bytes } }
    var recorded: Int? { lock.withLock { value } }
}
