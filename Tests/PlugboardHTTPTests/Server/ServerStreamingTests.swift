#if canImport(Glibc)
import Glibc
#endif
@testable import PlugboardHTTP
import Testing

extension ServerTests {
    /// Responses produced while they are sent (`HTTPResponse(status:headers:stream:)`).
    @Suite struct Streaming {
        @Test func a32MiBStream_arrivesIntact_andTheConnectionGoesOn() async throws {
            let s = try TestServer()
            let size = 32 << 20
            try await offPool {
                let c = try s.client()
                try c.send(Wire.requestBytes("GET", "/stream?size=\(size)"))
                let head = try c.head()
                #expect(head.status == 200)
                #expect(head.header("content-length") == "\(size)")
                let (read, intact) = try c.drain(size, patternFrom: 0)
                #expect(read == size)
                #expect(intact)
                #expect(try c.request("GET", "/hello").text == "hello")
                // HEAD of a stream: the length, no body.
                let h = try c.request("HEAD", "/stream?size=1000")
                #expect(h.header("content-length") == "1000")
                #expect(try c.request("GET", "/hello").text == "hello")
            }
            #expect(await s.stop() == 0)
        }

        @Test(arguments: ["throw", "short", "long"])
        func aProducerThatFailsOrMiscounts_endsTheConnection(mode: String) async throws {
            let s = try TestServer()
            let size = 4 << 20
            try await offPool {
                let c = try s.client()
                try c.send(Wire.requestBytes("GET", "/stream?size=\(size)&mode=\(mode)"))
                let head = try c.head()
                #expect(head.status == 200)
                #expect(head.header("content-length") == "\(size)")
                let (read, intact) = try c.drain(size + (1 << 20), patternFrom: 0)
                #expect(read < size || mode == "long", "read \(read)")
                #expect(read <= size)
                #expect(intact)
                #expect(c.isClosedByServer())
            }
            #expect(try await offPool { eventually { s.server.openConnections == 0 } })
            // The server goes on serving others.
            #expect(try await offPool { try s.client().request("GET", "/hello").status } == 200)
            #expect(await s.stop() == 0)
        }

        /// Once --max-buffered-bytes is spent, a connection holds at most the one chunk it
        /// is sending: a client that stops reading stops its producer with it, well short
        /// of the connection's own high water.
        @Test func overTheBufferBudget_aStalledReadersConnectionHoldsOneChunk() async throws {
            let s = try TestServer { $0.maxBufferedBytes = 1 }
            let size = 32 << 20
            try await offPool {
                let (c, _) = try s.streamingClient(size: size)
                #expect(producerHeldBack(s.probe, timeoutSeconds: 30))
                #expect(s.server.bufferedBytes <= patternBlock.count, "\(s.server.bufferedBytes) bytes held")
                #expect(s.probe.produced < size)
                let (read, intact) = try c.drain(size, patternFrom: 0)
                #expect(read == size)
                #expect(intact)
            }
            #expect(try await offPool { eventually { s.server.bufferedBytes == 0 } })
            #expect(await s.stop() == 0)
        }

        /// A client that reads slowly makes the producer wait: what was produced stays
        /// within the server's high water plus the kernel's buffers of what was read.
        @Test func aSlowReader_makesTheProducerWait() async throws {
            let s = try TestServer()
            let size = 32 << 20
            try await offPool {
                let (c, _) = try s.streamingClient(size: size)
                var read = 0
                var intact = true
                for _ in 0..<20 {
                    // Wait until the producer is held back, then take a little.
                    producerHeldBack(s.probe)
                    let ahead = s.probe.produced - read
                    #expect(ahead <= 8 << 20, "produced \(s.probe.produced), read \(read)")
                    let (n, ok) = try c.drain(256 << 10, patternFrom: read)
                    read += n
                    intact = intact && ok
                }
                let (rest, ok) = try c.drain(size - read, patternFrom: read)
                #expect(read + rest == size)
                #expect(intact && ok)
            }
            #expect(await s.stop() == 0)
        }
    }
}
