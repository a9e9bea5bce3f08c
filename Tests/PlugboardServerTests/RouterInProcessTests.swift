import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardServer
import PlugboardTestSupport
import PlugboardTesting
import Testing

/// The native API over the server core in process (`EmbeddedHTTPServer`): the router's
/// answers as a client reads them off the connection, at once or from a task, without a
/// port.
@Suite struct RouterInProcessTests {
    /// Runs `body` on its own thread (the driver blocks while tasks run on the pool), with
    /// the API over an in-memory storage.
    static func driving(_ body: @escaping @Sendable (EmbeddedHTTPServer, EmbeddedHTTPServer.Client) throws -> Void) async throws {
        let provider = ContainerProvider()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: InMemoryObjectStorage())
        }
        let router = APIRouter(provider: provider, apiToken: nil, logger: .disabled)
        try await OwnThread.run {
            Result {
                let server = try EmbeddedHTTPServer(handler: router)
                try body(server, try server.connect())
            }
        }.get()
    }

    @Test func putGetHeadDelete_overOneConnection() async throws {
        try await Self.driving { server, client in
            try server.send("PUT /v1/objects/a%2Fb HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello", on: client)
            let put = try server.response(on: client)
            #expect(put.status == 200)
            let etag = try #require(put.header("ETag"))

            // Both answered at once on the loop (MemoryStorage reads without waiting).
            try server.send("GET /v1/objects/a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            let get = try server.response(on: client)
            #expect(get.status == 200 && get.text == "hello" && get.header("ETag") == etag)
            #expect(get.header("Content-Type") == "text/plain")
            try server.send("HEAD /v1/objects/a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            let head = try server.response(on: client, head: true)
            #expect(head.status == 200 && head.header("Content-Length") == "5" && head.body.isEmpty)
            #expect(head.header("ETag") == etag)
            try server.send("HEAD /v1/objects/a%2Fb HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(etag)\r\n\r\n", on: client)
            #expect(try server.response(on: client, head: true).status == 304)

            try server.send("DELETE /v1/objects/a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            #expect(try server.response(on: client).status == 204)
            try server.send("HEAD /v1/objects/a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            let gone = try server.response(on: client, head: true)
            #expect(gone.status == 404 && gone.body.isEmpty)
            // The connection is still the same one, kept alive throughout.
            #expect(!server.isClosed(client))
            #expect(server.openConnections == 1)
        }
    }

    @Test func aMissingKey_isA404_andTheConnectionGoesOn_aKeyTheRulesRefuse_isA400_andItCloses() async throws {
        try await Self.driving { server, client in
            try server.send("GET /v1/objects/missing HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/objects/a%00b HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            let missing = try server.response(on: client)
            #expect(missing.status == 404)
            #expect(missing.header("Content-Type") == "application/json")
            let refused = try server.response(on: client)
            #expect(refused.status == 400)
            #expect(refused.header("Connection") == "close")
            // Its side is shut at once; it lingers for what the client still sends, then goes.
            #expect(server.isClosed(client))
            server.advance(by: ConnectionStateMachine.lingerSeconds + 1)
            #expect(server.openConnections == 0)
        }
    }
}
