import Foundation
import PlugboardAPI
import PlugboardTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// FileStorage reads on the asking thread only what the kernel has cached
/// (`openat2(RESOLVE_CACHED)`, `preadv2(RWF_NOWAIT)`) and does the rest on a blocking
/// thread. Both ways must give the same bytes: here the object files' pages are dropped
/// from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`, checked with `mincore`), so
/// the first reads take the cold way, and the reads after them the cached one.
@Suite struct FileStorageColdReadTests {
    /// Object files under `folder`, recursively.
    private func files(in folder: String) -> [String] {
        let walker = FileManager.default.enumerator(atPath: folder)
        var out: [String] = []
        while let name = walker?.nextObject() as? String {
            var isFolder: ObjCBool = false
            let path = folder + "/" + name
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue { out.append(path) }
        }
        return out
    }

    /// Drops `path`'s pages from the page cache; returns how many are still resident.
    private func dropPages(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0, "could not open \(path)")
        defer { close(fd) }
        _ = fdatasync(fd)
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        var st = stat()
        try #require(fstat(fd, &st) == 0)
        let size = Int(st.st_size)
        guard size > 0 else { return 0 }
        guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return -1 }
        defer { munmap(map, size) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var residency = [UInt8](repeating: 0, count: (size + pageSize - 1) / pageSize)
        try #require(mincore(map, size, &residency) == 0)
        return residency.filter { $0 & 1 != 0 }.count
    }

    /// ext4, xfs and btrfs drop clean pages on POSIX_FADV_DONTNEED; tmpfs keeps them (it
    /// has no other copy), and then only the cached way is exercised. The type is the one
    /// /proc/self/mounts gives the longest mount point above `path`.
    private func dropsPages(_ path: String) -> Bool {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        var best: (point: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = String(fields[1])
            guard path == point || path.hasPrefix(point == "/" ? "/" : point + "/") else { continue }
            if best == nil || point.count > best!.point.count { best = (point, String(fields[2])) }
        }
        return ["ext4", "xfs", "btrfs"].contains(best?.type ?? "")
    }

    /// A storage in `fixture` holding `small` (1 KiB) and `large` (1 MiB), both just written.
    private static func smallAndLarge(in fixture: FileStorageFixture) async throws -> (any ObjectStorage, [UInt8], [UInt8]) {
        let storage = try await fixture.storage()
        let small = (0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let large = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try await storage.put("small", data: small)
        try await storage.put("large", data: large)
        return (storage, small, large)
    }

    @Test func readsAfterThePageCacheIsDropped_returnTheStoredBytes_andSoDoCachedReads() async throws {
        let fixture = FileStorageFixture("filestorage-cold-read")
        defer { fixture.remove() }
        let (storage, small, large) = try await Self.smallAndLarge(in: fixture)

        let objectFiles = files(in: fixture.objectsFolder)
        #expect(objectFiles.count == 2)
        for path in objectFiles {
            let resident = try dropPages(path)
            if dropsPages(path) { #expect(resident == 0, "\(resident) pages of \(path) still cached after the drop") }
        }
        // Cold: header and data come from the disk, on a blocking thread.
        #expect(try await storage.get("small").data == small)
        #expect(try await storage.get("large", range: .closed(first: 1000, last: 300_999)).body.collect(upTo: 1 << 20)
                == Array(large[1000...300_999]))
        for path in objectFiles { _ = try dropPages(path) }
        #expect(try await storage.head("large").size == large.count)
        #expect(try await storage.get("large", range: nil).body.collect(upTo: 2 << 20) == large)
        // Cached now: the same bytes from the asking thread.
        #expect(try await storage.get("small").data == small)
        #expect(try await storage.get("large", range: nil).body.collect(upTo: 2 << 20) == large)
        #expect(try await storage.get("small", range: .suffix(24)).body.collect(upTo: 100) == Array(small[1000...]))
    }

    /// The read at once (`getWithoutWaiting`, what the server answers on its event loop):
    /// a cached object of up to one chunk; nothing larger, which streams; and, of an object
    /// whose pages were dropped, nothing or its bytes.
    @Test func readsAtOnce_objectsOfOneChunk_nothingOrTheStoredBytesWhenCold() async throws {
        let fixture = FileStorageFixture("filestorage-read-at-once")
        defer { fixture.remove() }
        let (storage, small, large) = try await Self.smallAndLarge(in: fixture)
        let ready = try #require(try storage.getWithoutWaiting("small", range: nil), "a just-written 1 KiB object was not read at once")
        #expect(ready.bytes == small)
        #expect(ready.range == nil)
        #expect(ready.info == (try await storage.head("small")))
        #expect(try storage.getWithoutWaiting("small", range: .closed(first: 10, last: 19))?.bytes == Array(small[10...19]))
        #expect(try storage.getWithoutWaiting("large", range: nil) == nil)
        #expect(try storage.getWithoutWaiting("large", range: .closed(first: 0, last: 99))?.bytes == Array(large[0...99]))
        #expect(throws: PlugboardError.self) { try storage.getWithoutWaiting("small", range: .from(5000)) }
        #expect(throws: PlugboardError.self) { try storage.getWithoutWaiting("", range: nil) }
        // Cold (where the file system drops clean pages; tmpfs keeps them). RWF_NOWAIT
        // promises that the read does not wait for the disk, not that it refuses what was
        // uncached when it began: the kernel starts reading the missing pages in and answers
        // with them if they are there by the time it looks (a page dropped while a read of it
        // was in flight, which mincore counts as absent; a read back done while this thread
        // was off the CPU). Either answer is safe; wrong bytes never are. ARCHITECTURE.md,
        // "The server core", has the measurements.
        let objectFiles = files(in: fixture.objectsFolder)
        if objectFiles.allSatisfy(dropsPages) {
            for path in objectFiles { _ = try dropPages(path) }
            let coldSmall = try storage.getWithoutWaiting("small", range: nil)
            let coldLarge = try storage.getWithoutWaiting("large", range: .suffix(10))
            #expect(coldSmall == nil || coldSmall?.bytes == small)
            #expect(coldLarge == nil || coldLarge?.bytes == Array(large.suffix(10)))
            #expect(try await storage.get("small").data == small)
        }
    }
}
