#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import Testing

/// A body that is a region of an open file (PlugboardAPI 1.7): who closes the descriptor,
/// and what a consumer that iterates the body instead of sending the region gets.
@Suite struct ObjectFileRegionTests {
    /// A file of `count` bytes (byte i is i % 251) in a folder of its own, removed by `done`.
    final class TestFile {
        let path: String
        let bytes: [UInt8]

        init(count: Int) throws {
            var template = Array("/tmp/plugboard-region-XXXXXX".utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else { throw PlugboardError(.storageFailed, "mkstemp failed") }
            path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            bytes = (0..<count).map { UInt8($0 % 251) }
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            guard written == count else { throw PlugboardError(.storageFailed, "short write") }
        }

        /// A new descriptor of the file, for a region to own.
        func open() -> Int32 { Glibc.open(path, O_RDONLY | O_CLOEXEC) }

        /// How many of this process's descriptors are open on the file: the path is this
        /// test's alone, so no other test's descriptors are counted.
        var openDescriptors: Int {
            var count = 0
            guard let dir = opendir("/proc/self/fd") else { return -1 }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                var target = [CChar](repeating: 0, count: 4096)
                let n = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
                if n > 0, String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == path { count += 1 }
            }
            return count
        }

        deinit { unlink(path) }
    }

    @Test func theRegionClosesItsDescriptor_whenItsLastReferenceGoes() throws {
        let file = try TestFile(count: 4096)
        do {
            let body = ObjectBody(try ObjectFileRegion(descriptor: file.open(), offset: 0, length: 4096))
            #expect(file.openDescriptors == 1)
            #expect(body.fileRegion?.length == 4096)
        }
        #expect(file.openDescriptors == 0)
    }

    @Test func aRefusedRegion_closesTheDescriptorItWasHanded() throws {
        let file = try TestFile(count: 16)
        let error = #expect(throws: PlugboardError.self) {
            try ObjectFileRegion(descriptor: file.open(), offset: -1, length: 16)
        }
        #expect(error?.code == .storageInvalidArgument)
        #expect(file.openDescriptors == 0)
    }

    @Test func iteratingARegionBody_yieldsTheFilesBytesOfTheRegion_inChunks() async throws {
        let file = try TestFile(count: 700_000)
        let body = ObjectBody(try ObjectFileRegion(descriptor: file.open(), offset: 1000, length: 600_000))
        #expect(body.length == 600_000)
        var chunks = 0
        var bytes: [UInt8] = []
        for try await chunk in body {
            chunks += 1
            bytes += chunk
        }
        #expect(chunks > 1)
        #expect(bytes == Array(file.bytes[1000..<601_000]))
    }

    @Test func aLayerThatMapsARegionBody_getsTheBytes_andNoRegion() async throws {
        let file = try TestFile(count: 300_000)
        let body = ObjectBody(try ObjectFileRegion(descriptor: file.open(), offset: 0, length: 300_000))
        let mapped = body.mapChunks { $0 }
        #expect(mapped.fileRegion == nil)
        #expect(try await mapped.collect(upTo: 1 << 20) == file.bytes)
    }

    @Test func aRegionBodyWithItsOwnReader_yieldsWhatTheReaderYields() async throws {
        let file = try TestFile(count: 64)
        let reader = ObjectBody(file.bytes).makeAsyncIterator()
        let body = ObjectBody(try ObjectFileRegion(descriptor: file.open(), offset: 0, length: 64)) {
            var next = reader
            return try await next.next()
        }
        #expect(body.fileRegion?.offset == 0)
        #expect(try await body.collect(upTo: 64) == file.bytes)
    }

    @Test func aFileCutShorterThanItsRegion_failsTheRead() throws {
        let file = try TestFile(count: 100)
        let region = try ObjectFileRegion(descriptor: file.open(), offset: 50, length: 100)
        let error = #expect(throws: PlugboardError.self) { try region.read(count: 100, at: 0) }
        #expect(error?.code == .storageFailed)
    }

    /// A body as 1.6 and older plugins make it: no region, its bytes as before.
    @Test func aBytesBody_hasNoRegion_andYieldsItsBytes() async throws {
        let body = ObjectBody([1, 2, 3])
        #expect(body.fileRegion == nil)
        #expect(try await body.collect(upTo: 3) == [1, 2, 3])
    }
}
