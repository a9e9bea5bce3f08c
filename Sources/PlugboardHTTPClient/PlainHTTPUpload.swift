import Dispatch
import PlugboardConcurrency
import PlugboardHTTPCodec

/// The body side of one ``PlainHTTPClient/upload(_:_:)``: each piece sent from the
/// upload's own serial queue (blocking sends, off Swift's cooperative pool).
public final class PlainHTTPUpload: Sendable {
    private let socket: PlainHTTPSocket
    private let queue: DispatchQueue
    private let box: PlainHTTPCancelBox
    private let chunked: Bool
    /// Bytes of the answer already read while waiting for `100 Continue`.
    private let early = LockedValueBox<[UInt8]>([])
    /// How long an upload waits for `100 Continue` before it sends its body anyway (curl's
    /// default too).
    static let continueWaitSeconds = 1.0

    init(socket: PlainHTTPSocket, queue: DispatchQueue, box: PlainHTTPCancelBox, chunked: Bool) {
        self.socket = socket
        self.queue = queue
        self.box = box
        self.chunked = chunked
    }

    /// Sends `bytes`, the next piece of the body (as one chunk of a chunked body).
    public func send(_ bytes: [UInt8]) async throws(PlainHTTPError) {
        guard !bytes.isEmpty || !chunked else { return }  // an empty chunk would end the body
        try await write(chunked ? Self.chunk(bytes) : bytes)
    }

    /// False when the server answered before the body was sent (the answer is then read
    /// by ``response(method:limits:)``): the body must not be sent.
    func awaitContinue() async throws(PlainHTTPError) -> Bool {
        let socket = self.socket, box = self.box, early = self.early
        return try await PlainHTTPClient.run(on: queue) { () throws(PlainHTTPError) -> Bool in
            if box.isCancelled { throw .cancelled }
            switch try socket.awaitContinue(seconds: Self.continueWaitSeconds) {
            case .proceed(let surplus):
                early.withLock { $0 = surplus }
                return true
            case .answered(let read):
                early.withLock { $0 = read }
                return false
            }
        }
    }

    /// Ends a chunked body with its last chunk; nothing for a body framed by its length.
    func finish() async throws(PlainHTTPError) {
        if chunked { try await write(Array("0\r\n\r\n".utf8)) }
    }

    private func write(_ bytes: [UInt8]) async throws(PlainHTTPError) {
        let socket = self.socket, box = self.box
        try await PlainHTTPClient.run(on: queue) { () throws(PlainHTTPError) in
            if box.isCancelled { throw .cancelled }
            try socket.send(bytes)
        }
    }

    /// `size CRLF bytes CRLF` (RFC 9112 section 7.1).
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        var framed = Array(String(bytes.count, radix: 16).utf8)
        framed.reserveCapacity(framed.count + bytes.count + 4)
        framed += [13, 10]
        framed += bytes
        framed += [13, 10]
        return framed
    }

    /// Reads the answer once the body is sent.
    func response(method: String, limits: PlainHTTPLimits) async throws(PlainHTTPError) -> PlainHTTPResponse {
        let socket = self.socket, box = self.box, prefix = early.withLock { $0 }
        return try await PlainHTTPClient.run(on: queue) { () throws(PlainHTTPError) -> PlainHTTPResponse in
            var reader = PlainHTTPResponseReader(PlainHTTPSocketSource(socket: socket, prefix: prefix[...]), limits: limits)
            do throws(PlainHTTPError) {
                let response = try reader.read(method: method)
                _ = box.detach()
                return response
            } catch {
                if !box.detach() { throw .cancelled }
                throw error
            }
        }
    }
}
