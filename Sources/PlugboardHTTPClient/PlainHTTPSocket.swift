import Glibc

/// A connected TCP socket with blocking sends and receives bounded by a timeout
/// (SO_RCVTIMEO, SO_SNDTIMEO). Used by one exchange at a time; only `PlainHTTPCancelBox`
/// calls `shutdown` from another thread.
final class PlainHTTPSocket: @unchecked Sendable {
    let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Connects to the first address of `host` that accepts within `timeoutSeconds`,
    /// giving up within 0.1 s once `isCancelled` says so (shutdown does not end a connect).
    static func connect(host: String, port: Int, timeoutSeconds: Double,
                        isCancelled: () -> Bool = { false }) throws(PlainHTTPError) -> PlainHTTPSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .cannotConnect("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var failure = PlainHTTPError.cannotConnect("no address for \(host)")
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            next = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else {
                failure = .cannotConnect("socket(): \(errnoText())")
                continue
            }
            let socket = PlainHTTPSocket(fd: fd)
            socket.configure(timeoutSeconds: timeoutSeconds)
            let code = socket.connect(info.pointee.ai_addr, info.pointee.ai_addrlen, timeoutSeconds: timeoutSeconds, isCancelled: isCancelled)
            if code == 0 { return socket }
            if code == ECANCELED { throw .cancelled }
            failure = code == ETIMEDOUT ? .timedOut : .cannotConnect("\(host) port \(port): \(String(cString: strerror(code)))")
        }
        throw failure
    }

    /// 0 when connected, else an errno (ETIMEDOUT, ECANCELED, ECONNREFUSED...): a
    /// non-blocking connect, waited for in slices of at most 0.1 s.
    private func connect(_ address: UnsafePointer<sockaddr>, _ length: socklen_t, timeoutSeconds: Double,
                         isCancelled: () -> Bool) -> Int32 {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        if Glibc.connect(fd, address, length) == 0 { return 0 }
        guard errno == EINPROGRESS else { return errno }
        var remaining = Int((timeoutSeconds * 1000).rounded(.up))
        while remaining > 0 {
            if isCancelled() { return ECANCELED }
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let slice = min(remaining, 100)
            let ready = poll(&entry, 1, Int32(slice))
            if ready < 0 && errno != EINTR { return errno }
            if ready > 0 {
                var error: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 else { return errno }
                return error
            }
            remaining -= slice
        }
        return ETIMEDOUT
    }

    private func configure(timeoutSeconds: Double) {
        let whole = timeoutSeconds.rounded(.down)
        var time = timeval(tv_sec: Int(whole), tv_usec: Int((timeoutSeconds - whole) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func send(_ bytes: [UInt8]) throws(PlainHTTPError) {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if result >= 0 {
                sent += result
                continue
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { throw .timedOut }
            throw .connectionLost("sending: \(String(cString: strerror(code)))")
        }
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(PlainHTTPError) -> Int {
        while true {
            let result = recv(fd, buffer.baseAddress, buffer.count, 0)
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { throw .timedOut }
            throw .connectionLost("receiving: \(String(cString: strerror(code)))")
        }
    }

    /// Whether an idle connection has news: the server closed it, or sent bytes nobody
    /// asked for. Either way it must not carry another request.
    var hasPendingInput: Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) != 0
    }

    /// Wakes a thread blocked in `send` or `recv` on this socket (cancellation).
    func shutdownBothWays() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// Reads a response from a socket, after `prefix`: bytes of it already read (by the
/// wait for `100 Continue`).
struct PlainHTTPSocketSource: PlainHTTPByteSource {
    let socket: PlainHTTPSocket
    var prefix: ArraySlice<UInt8> = []

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(PlainHTTPError) -> Int {
        guard prefix.isEmpty else {
            let count = min(buffer.count, prefix.count)
            buffer.copyBytes(from: prefix.prefix(count))
            prefix = prefix.dropFirst(count)
            return count
        }
        return try socket.receive(into: buffer)
    }
}

extension PlainHTTPSocket {
    /// What the server said after a head with `Expect: 100-continue`.
    enum ContinueAnswer {
        /// Send the body: `100 Continue` came, or nothing within the wait (a server that
        /// ignores the expectation must still get the body, RFC 9110 section 10.1.1).
        /// `surplus` is what arrived after the interim answer.
        case proceed(surplus: [UInt8])
        /// A final answer came first (a refusal): the body is not sent. `read` is what of
        /// it has arrived, for the response reader.
        case answered(read: [UInt8])
    }

    /// Waits up to `seconds` for the server's first word after a head that expects
    /// `100 Continue`, reading no further than the end of an interim answer's head.
    func awaitContinue(seconds: Double) throws(PlainHTTPError) -> ContinueAnswer {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32((seconds * 1000).rounded(.up))) > 0 else { return .proceed(surplus: []) }
        var read: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 4096)
        while true {
            var n = 0
            var failure: PlainHTTPError?
            piece.withUnsafeMutableBytes { raw in
                do throws(PlainHTTPError) {
                    n = try receive(into: raw)
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            // Closed or over a head's worth: the reader reports what it makes of it.
            guard n > 0 else { return .answered(read: read) }
            read += piece[..<n]
            // `HTTP/1.x 1dd` (not 101): an interim answer, skipped up to its blank line.
            if read.count >= 12 {
                guard read.starts(with: "HTTP/1.".utf8), read[9] == UInt8(ascii: "1"), read[10...11] != [0x30, 0x31] else {
                    return .answered(read: read)
                }
                if let end = Self.endOfHead(read) { return .proceed(surplus: Array(read[end...])) }
            }
            if read.count > 16 << 10 { return .answered(read: read) }
        }
    }

    /// The index just past the blank line that ends a head in `bytes`, if it is there.
    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        var i = 0
        while i + 3 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i + 4 }
            i += 1
        }
        return nil
    }
}

private func errnoText() -> String {
    String(cString: strerror(errno))
}
