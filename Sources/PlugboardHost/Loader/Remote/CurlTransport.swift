#if canImport(Glibc)
import Glibc
#endif
import CPlugboardSystem
import PlugboardBytes
import PlugboardHTTPClient

/// The `https://` transport of remote plugin sources: libcurl, loaded with `dlopen` on the
/// first https request and kept for the life of the process (never closed), so that a
/// host whose sources are local or plain http maps no TLS library at all and starts as
/// before (docs/ARCHITECTURE.md, "Remote sources over https").
///
/// Why libcurl and not URLSession: FoundationNetworking is libcurl under a Foundation
/// layer that costs every process linking it (docs/BENCHMARKS.md), hands a body over
/// whole, and on Linux takes no CA file but the system bundle (its override variable is
/// read on Android only), so a store behind a private CA could not be trusted at all.
/// Here the CA file is a per-request option taken from the captured environment.
///
/// One request blocks the calling thread (the fetch thread staging already runs on); no
/// handle is shared between threads.
struct CurlTransport: Sendable {
    /// The library's name, as given to `dlopen` (the dynamic loader's search path finds it).
    static let libraryName = "libcurl.so.4"

    /// Why a request got no HTTP answer.
    struct Failure: Error, Sendable {
        enum Kind: Sendable {
            /// No connection, or it broke: worth another attempt.
            case unreachable
            /// No progress within the timeout: worth another attempt.
            case timedOut
            /// The TLS handshake failed, most often because the server's certificate is not
            /// signed by a trusted CA: another attempt would fail alike.
            case tls
            /// libcurl is not installed, or refused an option.
            case unavailable
        }
        let kind: Kind
        let text: String

        /// As the retry policy classifies failures.
        var transportFailure: TransportFailure {
            switch kind {
            case .unreachable: TransportFailure(.cannotConnect, text)
            case .timedOut: TransportFailure(.timedOut, text)
            case .tls, .unavailable: TransportFailure(.other, text)
            }
        }
    }

    /// How long a connection or a transfer may go without progress.
    let timeoutSeconds: Int
    /// PEM file of the CAs to trust instead of libcurl's default bundle; nil for the default.
    let caFile: String?
    /// The most body bytes kept; one more is kept beyond it, so that the caller sees the
    /// answer was larger, and the transfer stops there.
    let maxBodyBytes: Int

    /// Sends `request` and returns its answer with the whole body: libcurl pushes pieces
    /// into a callback, which the cache's pull-style writer cannot take as they come, so
    /// the body (at most a plugin's size) is kept until the transfer ends.
    func send(_ request: HTTPRequest) -> Result<HTTPResponse, Failure> {
        let library: Library
        switch Library.shared {
        case .success(let loaded): library = loaded
        case .failure(let failure): return .failure(failure)
        }
        // The header list outlives the handle that points at it (freed after the cleanup).
        var list: OpaquePointer?
        defer { library.slistFreeAll(list) }
        // An empty Expect: a PUT waits for no 100 Continue.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            list = line.withCString { library.slistAppend(list, $0) }
        }
        guard let handle = library.easyInit() else {
            return .failure(Failure(kind: .unavailable, text: "curl_easy_init failed"))
        }
        defer { library.easyCleanup(handle) }
        let received = Received(limit: maxBodyBytes)
        var errorBuffer = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(received).toOpaque()
        let code: Int32 = errorBuffer.withUnsafeMutableBufferPointer { errorText in
            request.url.withCString { url in
                (caFile ?? "").withCString { ca in
                    request.method.rawValue.withCString { method in
                        request.body.withUnsafeBytes { body -> Int32 in
                            let h = UnsafeMutableRawPointer(handle)
                            var options: [(Int32, Int)] = [
                                (Option.noSignal, 1), (Option.followLocation, 0), (Option.protocols, Option.protocolHTTPS),
                                (Option.connectTimeout, timeoutSeconds), (Option.lowSpeedLimit, 1), (Option.lowSpeedTime, timeoutSeconds),
                            ]
                            if request.method == .head { options.append((Option.noBody, 1)) }
                            for (option, value) in options where plugboard_curl_setopt_long(library.setopt, h, option, value) != 0 {
                                return -1
                            }
                            var pointers: [(Int32, UnsafeRawPointer?)] = [
                                (Option.url, UnsafeRawPointer(url)), (Option.customRequest, UnsafeRawPointer(method)),
                                (Option.httpHeader, UnsafeRawPointer(list)), (Option.errorBuffer, UnsafeRawPointer(errorText.baseAddress)),
                                (Option.writeData, UnsafeRawPointer(context)), (Option.headerData, UnsafeRawPointer(context)),
                                // No proxy from the process's own variables: the host reads the
                                // environment it captured, nothing else.
                                (Option.proxy, UnsafeRawPointer(("" as StaticString).utf8Start)),
                            ]
                            if caFile != nil { pointers.append((Option.caInfo, UnsafeRawPointer(ca))) }
                            if request.sendsBody {
                                guard plugboard_curl_setopt_offset(library.setopt, h, Option.postFieldSizeLarge, Int64(body.count)) == 0 else { return -1 }
                                pointers.append((Option.postFields, body.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start)))
                            }
                            for (option, value) in pointers where plugboard_curl_setopt_pointer(library.setopt, h, option, value) != 0 {
                                return -1
                            }
                            guard plugboard_curl_setopt_callback(library.setopt, h, Option.writeFunction, { CurlTransport.written($0, $1, $2, $3) }) == 0,
                                  plugboard_curl_setopt_callback(library.setopt, h, Option.headerFunction, { CurlTransport.headerLine($0, $1, $2, $3) }) == 0
                            else { return -1 }
                            return library.easyPerform(handle)
                        }
                    }
                }
            }
        }
        let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let text = detail.isEmpty ? library.describe(code) : "\(detail) (curl error \(code))"
        var status = 0
        _ = plugboard_curl_getinfo_long(library.getinfo, UnsafeMutableRawPointer(handle), Option.responseCode, &status)
        // A body beyond the limit stops the transfer with a write error; its answer still
        // goes back, and the cache refuses its size.
        if code == 0 || (code == Code.writeError && received.overflowed), status > 0 {
            return .success(HTTPResponse(status: status, headers: received.headers, body: received.body))
        }
        switch code {
        case -1: return .failure(Failure(kind: .unavailable, text: "\(Self.libraryName) refused an option of the request"))
        case Code.timedOut: return .failure(Failure(kind: .timedOut, text: text))
        case _ where Code.tls.contains(code): return .failure(Failure(kind: .tls, text: text))
        default: return .failure(Failure(kind: .unreachable, text: text))
        }
    }

    /// What the callbacks gather; touched only by the thread running the transfer.
    private final class Received {
        let limit: Int
        var body: [UInt8] = []
        var headers: [String: String] = [:]
        var overflowed = false
        init(limit: Int) { self.limit = limit }
    }

    /// CURLOPT_WRITEFUNCTION: keeps the body up to the limit, then stops the transfer.
    private static func written(_ data: UnsafeMutablePointer<CChar>?, _ size: UInt, _ count: UInt, _ context: UnsafeMutableRawPointer?) -> UInt {
        guard let data, let context else { return 0 }
        let received = Unmanaged<Received>.fromOpaque(context).takeUnretainedValue()
        let length = Int(size * count)
        let kept = min(length, received.limit + 1 - received.body.count)
        received.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: max(kept, 0)))
        guard kept == length else {
            received.overflowed = true
            return 0
        }
        return UInt(length)
    }

    /// CURLOPT_HEADERFUNCTION: one header line a call, the status line included.
    private static func headerLine(_ data: UnsafeMutablePointer<CChar>?, _ size: UInt, _ count: UInt, _ context: UnsafeMutableRawPointer?) -> UInt {
        guard let data, let context else { return 0 }
        let received = Unmanaged<Received>.fromOpaque(context).takeUnretainedValue()
        let length = Int(size * count)
        let raw = UnsafeRawBufferPointer(start: data, count: length)
        let end = raw.lastIndex { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }.map { $0 + 1 } ?? 0
        let line = String(decoding: raw[..<end], as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // Each response's head starts anew (a 100 Continue comes before the answer).
            received.headers = [:]
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = ASCIIText.trimmed(line[line.index(after: colon)...])
            received.headers[name] = String(value)
        }
        return UInt(length)
    }

    /// libcurl's option and info numbers (curl/curl.h), which its ABI keeps.
    private enum Option {
        static let writeData: Int32 = 10001
        static let url: Int32 = 10002
        static let proxy: Int32 = 10004
        static let errorBuffer: Int32 = 10010
        static let postFields: Int32 = 10015
        static let httpHeader: Int32 = 10023
        static let headerData: Int32 = 10029
        static let customRequest: Int32 = 10036
        static let caInfo: Int32 = 10065
        static let writeFunction: Int32 = 20011
        static let headerFunction: Int32 = 20079
        static let lowSpeedLimit: Int32 = 19
        static let lowSpeedTime: Int32 = 20
        static let noBody: Int32 = 44
        static let followLocation: Int32 = 52
        static let connectTimeout: Int32 = 78
        static let noSignal: Int32 = 99
        static let protocols: Int32 = 181
        static let protocolHTTPS = 2
        static let postFieldSizeLarge: Int32 = 30120
        static let responseCode: Int32 = 0x200002
    }

    /// libcurl's result codes the transport tells apart.
    private enum Code {
        static let writeError: Int32 = 23
        static let timedOut: Int32 = 28
        /// SSL_CONNECT_ERROR, SSL_CERTPROBLEM, SSL_CIPHER, PEER_FAILED_VERIFICATION,
        /// SSL_ENGINE_*, SSL_CACERT_BADFILE, SSL_SHUTDOWN_FAILED, SSL_CRL_BADFILE,
        /// SSL_ISSUER_ERROR, SSL_PINNEDPUBKEYNOTMATCH, SSL_INVALIDCERTSTATUS, SSL_CLIENTCERT.
        static let tls: Set<Int32> = [35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98]
    }

    /// The functions of libcurl the transport calls, looked up once.
    struct Library: @unchecked Sendable {
        // @unchecked Sendable: function pointers into a library that is never unloaded.
        typealias EasyInit = @convention(c) () -> OpaquePointer?
        typealias EasyCleanup = @convention(c) (OpaquePointer?) -> Void
        typealias EasyPerform = @convention(c) (OpaquePointer?) -> Int32
        typealias EasyStrerror = @convention(c) (Int32) -> UnsafePointer<CChar>?
        typealias SlistAppend = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?
        typealias SlistFreeAll = @convention(c) (OpaquePointer?) -> Void
        typealias GlobalInit = @convention(c) (Int) -> Int32

        let easyInit: EasyInit
        let easyCleanup: EasyCleanup
        let easyPerform: EasyPerform
        let easyStrerror: EasyStrerror
        let slistAppend: SlistAppend
        let slistFreeAll: SlistFreeAll
        let setopt: UnsafeMutableRawPointer
        let getinfo: UnsafeMutableRawPointer

        /// Loaded on first use: a host that never fetches over https never maps it.
        static let shared: Result<Library, Failure> = load(CurlTransport.libraryName)

        /// `dlopen(name)` with `RTLD_NOW` (a missing function fails here) and never closed.
        static func load(_ name: String) -> Result<Library, Failure> {
            _ = dlerror()
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                let reason = dlerror().map { String(cString: $0) } ?? "no reason given"
                return .failure(Failure(kind: .unavailable, text: "could not load \(name) (the dynamic loader reported: \(reason))"))
            }
            var missing: [String] = []
            func symbol(_ name: String) -> UnsafeMutableRawPointer? {
                let found = dlsym(handle, name)
                if found == nil { missing.append(name) }
                return found
            }
            let pointers = ["curl_global_init", "curl_easy_init", "curl_easy_cleanup", "curl_easy_perform", "curl_easy_strerror",
                            "curl_slist_append", "curl_slist_free_all", "curl_easy_setopt", "curl_easy_getinfo"].map(symbol)
            guard missing.isEmpty else {
                return .failure(Failure(kind: .unavailable, text: "\(name) does not export \(missing.joined(separator: ", "))"))
            }
            let p = pointers.map { $0! }
            // CURL_GLOBAL_DEFAULT (SSL | WIN32), once, before any handle.
            guard unsafeBitCast(p[0], to: GlobalInit.self)(3) == 0 else {
                return .failure(Failure(kind: .unavailable, text: "curl_global_init failed"))
            }
            return .success(Library(easyInit: unsafeBitCast(p[1], to: EasyInit.self), easyCleanup: unsafeBitCast(p[2], to: EasyCleanup.self),
                                    easyPerform: unsafeBitCast(p[3], to: EasyPerform.self), easyStrerror: unsafeBitCast(p[4], to: EasyStrerror.self),
                                    slistAppend: unsafeBitCast(p[5], to: SlistAppend.self), slistFreeAll: unsafeBitCast(p[6], to: SlistFreeAll.self),
                                    setopt: p[7], getinfo: p[8]))
        }

        func describe(_ code: Int32) -> String {
            let text = easyStrerror(code).map { String(cString: $0) } ?? "unknown error"
            return "\(text) (curl error \(code))"
        }
    }
}
