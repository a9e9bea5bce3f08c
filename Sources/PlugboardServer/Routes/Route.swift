#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHTTP

/// The HTTP API's routes, matched on the raw (still percent-encoded) path.
enum Route: Equatable {
    /// `/v1/objects/{key}`, the key still encoded.
    case object(Substring)
    case listing
    case healthz
    case readyz
    case metrics
    case adminPlugins
    case adminServices
    case adminReload
    case adminEvents
    case unknown

    static let objectPrefix = "/v1/objects/"

    /// Compared byte by byte over the contiguous bytes: `Substring ==` and `hasPrefix`
    /// compare by Unicode rules, and generic `starts(with:)` over UTF-8 views walks index
    /// by index; both showed in the benchmark profile, and paths are ASCII here anyway.
    init(path: Substring) {
        var path = path
        let found: Route? = path.withUTF8 { bytes -> Route? in
            // Against byte arrays made once: a String passed as a pointer is copied each time.
            if bytes.count >= Self.objectPrefixBytes.count,
               memcmp(bytes.baseAddress!, Self.objectPrefixBytes, Self.objectPrefixBytes.count) == 0 { return nil }
            for (text, route) in Self.fixedBytes where text.count == bytes.count {
                if memcmp(text, bytes.baseAddress!, bytes.count) == 0 { return route }
            }
            return .unknown
        }
        if let found {
            self = found
        } else {
            self = .object(path[path.utf8.index(path.startIndex, offsetBy: Self.objectPrefix.utf8.count)...])
        }
    }

    private static let objectPrefixBytes = Array(objectPrefix.utf8)
    private static let fixedBytes = fixed.map { (Array($0.0.utf8), $0.1) }

    private static let fixed: [(String, Route)] = [
        ("/v1/objects", .listing), ("/healthz", .healthz), ("/readyz", .readyz), ("/metrics", .metrics),
        ("/v1/admin/plugins", .adminPlugins), ("/v1/admin/services", .adminServices),
        ("/v1/admin/reload", .adminReload), ("/v1/admin/events", .adminEvents),
    ]

    /// Metrics labels, indexed by ``index``: bounded, never the key.
    static let labels = ["object", "listing", "healthz", "readyz", "metrics", "admin_plugins", "admin_services",
                         "admin_reload", "admin_events", "unknown", "none"]
    /// The label of every `/v1/objects/{key}` answer.
    static let objectLabel = labels[0]
    /// The index of `label`, one of ``labels``.
    static func labelIndex(_ label: String) -> Int? { labels.firstIndex(of: label) }

    /// The label index of a request that never had a head.
    static let noneIndex = 10

    var index: Int {
        switch self {
        case .object: return 0
        case .listing: return 1
        case .healthz: return 2
        case .readyz: return 3
        case .metrics: return 4
        case .adminPlugins: return 5
        case .adminServices: return 6
        case .adminReload: return 7
        case .adminEvents: return 8
        case .unknown: return 9
        }
    }

    /// Whether the route takes `method`.
    func allows(_ method: String) -> Bool { allowedMethods.contains(method) }

    /// Arrays made once: the methods are asked of every request.
    var allowedMethods: [String] {
        switch self {
        case .object: return Self.objectMethods
        case .adminReload: return Self.reloadMethods
        case .unknown: return []
        default: return Self.readMethods
        }
    }

    private static let objectMethods = ["GET", "HEAD", "PUT", "DELETE"]
    private static let reloadMethods = ["POST"]
    private static let readMethods = ["GET", "HEAD"]

    /// The token a route requires: the API token for objects, the admin token for admin.
    enum Guard { case none, api, admin }
    var tokenGuard: Guard {
        switch self {
        case .object, .listing: return .api
        case .adminPlugins, .adminServices, .adminReload, .adminEvents: return .admin
        default: return .none
        }
    }

    /// Metrics and the admin routes report on and act on a plugin host; a router over a
    /// bare ``StorageProvider`` has none of them.
    var needsHost: Bool {
        switch self {
        case .metrics, .adminPlugins, .adminServices, .adminReload, .adminEvents: return true
        default: return false
        }
    }

    /// 405 for a method the route does not take, known to HTTP or not: the route exists,
    /// and `Allow` says what it takes (501 is kept for unsupported transfer codings).
    func methodRefusal(_ method: String) -> HTTPError {
        let allow = allowedMethods.joined(separator: ", ")
        return HTTPError(405, PlugboardError(.httpMethodNotAllowed, "method \(method.prefix(40)) is not allowed here",
                                             detail: "This path takes \(allow).", hint: "Use one of: \(allow)."),
                         headers: [("Allow", allow)])
    }
}
