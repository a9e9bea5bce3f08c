#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI

/// One client connection, served on its own thread with blocking I/O: requests one after
/// another (pipelined ones from the buffer) until the client closes, an error closes it,
/// a deadline passes or the server stops.
struct Connection {
    let fd: Int32
    let id: Int
    let configuration: ServerConfiguration
    let handler: any HTTPHandler
    let registry: ConnectionRegistry
    let dates: HTTPDateCache

    func run() {
        defer { registry.remove(id) }
        let peer = Socket.peerName(fd)
        Socket.setNoDelay(fd)
        Socket.setTimeout(fd, SO_SNDTIMEO, seconds: configuration.writeTimeoutSeconds)
        var reader = RequestReader(source: SocketSource(fd: fd, id: id, configuration: configuration, registry: registry),
                                   limits: configuration.limits)
        while true {
            reader.source.beginRequest()
            let head: RequestHead
            do throws(HTTPError) {
                guard let next = try reader.nextHead() else { break }
                head = next
            } catch {
                refuse(error, head: nil, started: reader.source.requestStarted, peer: peer)
                return
            }
            if head.expectsContinue && !Socket.writeAll(fd, HTTPResponse.continueLine) { break }
            let body: [UInt8]
            do throws(HTTPError) {
                body = try reader.body(for: head)
            } catch {
                refuse(error, head: head, started: reader.source.requestStarted, peer: peer)
                return
            }
            let request = HTTPRequest(head: head, body: body)
            let handler = self.handler
            let response = Threads.runBlocking { await handler.respond(to: request) }
                ?? handler.refusal(HTTPError(500, PlugboardError(.httpInternal, "the request handler gave no answer")), head: head)
            let closes = HTTPError.closingStatuses.contains(response.status)
            let keepAlive = head.keepAlive && !closes && !registry.isStopping
            let sent = Socket.writeAll(fd, response.serialize(head: head.method == "HEAD", keepAlive: keepAlive,
                                                              version: head.version, date: dates.current()))
            handler.completed(Exchange(method: head.method, target: head.target, status: response.status,
                                       bytes: head.method == "HEAD" ? 0 : response.body.count,
                                       durationSeconds: Clock.now() - reader.source.requestStarted, peer: peer))
            if !sent { break }
            if !keepAlive {
                if closes { Socket.lingeringClose(fd) } else { close(fd) }
                return
            }
        }
        close(fd)
    }

    /// Answers a request refused at the HTTP level and closes the connection.
    private func refuse(_ error: HTTPError, head: RequestHead?, started: Double, peer: String) {
        let response = handler.refusal(error, head: head)
        _ = Socket.writeAll(fd, response.serialize(head: head?.method == "HEAD", keepAlive: false,
                                                   version: head?.version ?? .http11, date: dates.current()))
        handler.completed(Exchange(method: head?.method ?? "-", target: head?.target ?? "-", status: response.status,
                                   bytes: response.body.count, durationSeconds: Clock.now() - started, peer: peer))
        Socket.lingeringClose(fd)
    }
}

extension HTTPError {
    /// After these the server closes the connection (the HTTP API's rule).
    public static let closingStatuses: Set<Int> = [400, 408, 411, 413, 414, 431, 501]
}
