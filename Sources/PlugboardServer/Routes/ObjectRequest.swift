import PlugboardAPI
import PlugboardHTTP
import PlugboardHost

/// One request to `/v1/objects/{key}`, resolved once, as Hummingbird's request context
/// is: the key decoded and held to the key rules, the lease that pins the generation, the
/// storage bound in it, and where its error answers are made. The at-once path and the
/// task path take the same one (``APIRouter/respondWithoutWaiting(to:)`` hands it on to
/// the task when the storage has to wait), and ``finish(_:)`` ends it on either.
struct ObjectRequest: Sendable {
    let key: String
    let request: HTTPRequest
    let storage: any ObjectStorage
    let errors: ErrorResponses
    private let lease: Lease

    var headers: HTTPHeaders { request.head.headers }

    /// A resolved request, or the answer refusing it (stamped, its lease released).
    enum Resolved {
        case ready(ObjectRequest)
        case refused(HTTPResponse)
    }

    /// Takes the lease, then decodes the key and finds the bound storage in it: a refusal
    /// names the generation that refused, as every object answer does.
    static func resolve(encodedKey: Substring, _ request: HTTPRequest, provider: any StorageProvider,
                        errors: ErrorResponses) -> Resolved {
        let lease = provider.container.lease()
        let key: String
        do throws(HTTPError) {
            key = try ObjectRoutes.decodeKey(encodedKey)
        } catch {
            return .refused(finish(errors.response(error), lease))
        }
        switch provider.boundStorage(lease) {
        case .success(let storage):
            return .ready(ObjectRequest(key: key, request: request, storage: storage, errors: errors, lease: lease))
        case .failure(let error):
            return .refused(finish(errors.response(error), lease))
        }
    }

    /// The request's last step, on whichever path answered it: the answer names the
    /// generation whose services made it and carries the route's label for the metrics,
    /// and the lease is released, so that a storage replaced meanwhile may now stop.
    /// Consuming: the answer's headers, appended to here, are then the only reference to
    /// their array, which a copy of the answer would make the append copy whole.
    func finish(_ response: consuming HTTPResponse) -> HTTPResponse {
        Self.finish(response, lease)
    }

    private static func finish(_ response: consuming HTTPResponse, _ lease: Lease) -> HTTPResponse {
        APIRouter.stamp(&response, lease, label: Route.objectLabel)
        lease.release()
        return response
    }
}
