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

    /// Compared byte by byte: `Substring ==` and `hasPrefix` compare by Unicode rules,
    /// which showed in the benchmark profile, and paths are ASCII here anyway.
    init(path: Substring) {
        let bytes = path.utf8
        if bytes.starts(with: Self.objectPrefix.utf8) {
            self = .object(path[bytes.index(bytes.startIndex, offsetBy: Self.objectPrefix.utf8.count)...])
            return
        }
        self = Self.fixed.first { bytes.elementsEqual($0.0.utf8) }?.1 ?? .unknown
    }

    private static let fixed: [(String, Route)] = [
        ("/v1/objects", .listing), ("/healthz", .healthz), ("/readyz", .readyz), ("/metrics", .metrics),
        ("/v1/admin/plugins", .adminPlugins), ("/v1/admin/services", .adminServices),
        ("/v1/admin/reload", .adminReload), ("/v1/admin/events", .adminEvents),
    ]

    /// The metrics label: bounded, never the key.
    var label: String {
        switch self {
        case .object: return "object"
        case .listing: return "listing"
        case .healthz: return "healthz"
        case .readyz: return "readyz"
        case .metrics: return "metrics"
        case .adminPlugins: return "admin_plugins"
        case .adminServices: return "admin_services"
        case .adminReload: return "admin_reload"
        case .adminEvents: return "admin_events"
        case .unknown: return "unknown"
        }
    }

    var allowedMethods: [String] {
        switch self {
        case .object: return ["GET", "HEAD", "PUT", "DELETE"]
        case .adminReload: return ["POST"]
        case .unknown: return []
        default: return ["GET", "HEAD"]
        }
    }

    /// The token a route requires: the API token for objects, the admin token for admin.
    enum Guard { case none, api, admin }
    var tokenGuard: Guard {
        switch self {
        case .object, .listing: return .api
        case .adminPlugins, .adminServices, .adminReload, .adminEvents: return .admin
        default: return .none
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
