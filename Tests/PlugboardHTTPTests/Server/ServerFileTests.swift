#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHTTP
import Testing

extension ServerTests {
    /// Answers whose body is a region of an open file, sent with `sendfile` (PlugboardAPI 1.7).
    @Suite struct FileBodies {
        /// A file of the test pattern in a temporary folder, removed with the value.
        final class PatternFile: Sendable {
            let path: String

            init(count: Int) throws {
                var template = Array("/tmp/plugboard-sendfile-XXXXXX".utf8CString)
                let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
                guard fd >= 0 else { throw WireError("mkstemp failed: \(String(cString: strerror(errno)))") }
                path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let bytes = patternBytes(count)
                let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
                guard written == count else { throw WireError("wrote \(written) of \(count) bytes") }
            }

            /// This process's descriptors open on the file (its path is this test's alone).
            var openDescriptors: Int { openDescriptorsOf(path) }

            deinit { unlink(path) }
        }

        @Test func aFileRegion_arrivesWhole_ranged_andAsHEAD_andTheConnectionGoesOn() async throws {
            let s = try TestServer()
            let size = 8 << 20
            let file = try PatternFile(count: size)
            try await offPool {
                let c = try s.client()
                let whole = try c.request("GET", "/file?path=\(file.path)&length=\(size)")
                #expect(whole.status == 200)
                #expect(whole.body.count == size)
                #expect(isPattern(whole.body))
                let ranged = try c.request("GET", "/file?path=\(file.path)&offset=1000&length=\(3 << 20)")
                #expect(ranged.body.count == 3 << 20)
                #expect(isPattern(ranged.body, from: 1000))
                let head = try c.request("HEAD", "/file?path=\(file.path)&length=\(size)")
                #expect(head.header("content-length") == "\(size)")
                #expect(try c.request("GET", "/hello").text == "hello")
            }
            #expect(s.probe.exchanges.filter { $0.target.hasPrefix("/file") }.map(\.bytes) == [size, 3 << 20, 0])
            #expect(try await offPool { eventually { file.openDescriptors == 0 } })
            #expect(await s.stop() == 0)
        }

        /// Pages the page cache does not hold are read on a blocking thread before they are
        /// sent (sendfile would wait for the disk on the loop's thread); the answer is the same.
        @Test func aFileOutOfThePageCache_arrivesWhole() async throws {
            let s = try TestServer()
            let size = 16 << 20
            let file = try PatternFile(count: size)
            let fd = open(file.path, O_RDONLY | O_CLOEXEC)
            #expect(fd >= 0)
            // Written and synced, so the kernel may drop the pages (tmpfs keeps them: then
            // this is the cached path again, still correct).
            fsync(fd)
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
            close(fd)
            try await offPool {
                let c = try s.client()
                let whole = try c.request("GET", "/file?path=\(file.path)&length=\(size)")
                #expect(whole.body.count == size)
                #expect(isPattern(whole.body))
                #expect(try c.request("GET", "/hello").text == "hello")
            }
            #expect(try await offPool { eventually { file.openDescriptors == 0 } })
            #expect(await s.stop() == 0)
        }

        /// The head announced more than the file holds: the connection ends when the file
        /// does, as for a producer that falls short.
        @Test func aFileShorterThanItsRegion_endsTheConnection() async throws {
            let s = try TestServer()
            let file = try PatternFile(count: 1 << 20)
            try await offPool {
                let c = try s.client()
                try c.send(Wire.requestBytes("GET", "/file?path=\(file.path)&length=\(2 << 20)"))
                #expect(try c.head().status == 200)
                let (read, intact) = try c.drain(2 << 20, patternFrom: 0)
                #expect(read == 1 << 20)
                #expect(intact)
            }
            #expect(try await offPool { eventually { s.server.openConnections == 0 && file.openDescriptors == 0 } })
            #expect(await s.stop() == 0)
        }

        /// A client that goes away mid-body: the connection closes and the region's
        /// descriptor with it; the server holds nothing of either.
        @Test func aClientThatLeavesMidBody_leavesNoDescriptorBehind() async throws {
            let s = try TestServer()
            let size = 64 << 20
            let file = try PatternFile(count: size)
            let before = openDescriptors()
            try await offPool {
                let c = try s.client(receiveBuffer: 64 << 10)
                try c.send(Wire.requestBytes("GET", "/file?path=\(file.path)&length=\(size)"))
                #expect(try c.head().status == 200)
                let (read, intact) = try c.drain(1 << 20, patternFrom: 0)
                #expect(read == 1 << 20)
                #expect(intact)
                // The server is held back by the client's full buffers, mid-file.
                #expect(file.openDescriptors == 1)
            }
            #expect(try await offPool { eventually { s.server.openConnections == 0 && file.openDescriptors == 0 } })
            #expect(serverDescriptorsLeft(since: before, port: s.port).isEmpty)
            #expect(await s.stop() == 0)
        }
    }
}

/// How many of this process's descriptors are open on `path`.
func openDescriptorsOf(_ path: String) -> Int {
    openDescriptors().filter { descriptorTarget($0) == path }.count
}
