import PlugboardAPI
import PlugboardHTTPClient
import RESTStorageClient
import Testing

/// The server's answers become the `ObjectStorage` contract's codes.
@Suite struct ErrorMappingTests {
    @Test(arguments: ["storage.invalid_key", "storage.invalid_metadata", "storage.invalid_argument",
                      "storage.access_denied", "storage.failed"])
    func storageCodesFromTheServerPassThroughWithItsTexts(code: String) async {
        let status = code == "storage.access_denied" ? 403 : code == "storage.failed" ? 502 : 400
        let remote = ScriptedStorage([Responses.error(status, code, "remote words")], maxRetries: 0)
        let error = await thrownError { _ = try await remote.storage.head("k") }
        #expect(error?.code.rawValue == code)
        #expect(error?.message == "remote words")
        #expect(error?.detail == "server detail")
        #expect((error?.underlying as? RemoteError)?.status == status)
    }

    @Test func notFoundSaysTheSameWordsAsEveryBackend() async {
        let remote = ScriptedStorage([Responses.error(404, "storage.not_found")])
        let error = await thrownError { _ = try await remote.storage.get("missing") }
        let expected = PlugboardError.objectNotFound(key: "missing")
        #expect(error?.code == .storageNotFound)
        #expect(error?.message == expected.message && error?.detail == expected.detail)
        #expect(await remote.requests.count == 1)
    }

    /// The contract's HEAD errors have no body: X-Plugboard-Error-Code tells a missing object
    /// from an unknown route (a wrong base path), which a bare 404 cannot.
    @Test func aHeadErrorIsReadFromItsErrorCodeHeader() async {
        func head(_ status: Int, _ code: String?) async -> PlugboardError? {
            let headers = ["Content-Type": "application/json"].merging(code.map { ["X-Plugboard-Error-Code": $0] } ?? [:]) { $1 }
            let remote = ScriptedStorage([.success(HTTPResponse(status: status, headers: headers))], maxRetries: 0)
            return await thrownError { _ = try await remote.storage.head("gone") }
        }
        let missing = await head(404, "storage.not_found")
        #expect(missing?.code == .storageNotFound)
        #expect(missing?.message == PlugboardError.objectNotFound(key: "gone").message)

        let wrongRoute = await head(404, "http.not_found")
        #expect(wrongRoute?.code == .storageFailed)
        #expect(wrongRoute?.message.contains("no Plugboard object API") == true, "\(String(describing: wrongRoute))")
        let notPlugboard = await head(404, nil)
        #expect(notPlugboard?.code == .storageFailed)

        let invalid = await head(400, "storage.invalid_metadata")
        #expect(invalid?.code == .storageInvalidMetadata)
        #expect(invalid?.detail?.contains("HTTP 400 with error code storage.invalid_metadata") == true)
        #expect((invalid?.underlying as? RemoteError)?.code == "storage.invalid_metadata")
    }

    /// GET and HEAD answers name the object answered; another key means something between
    /// client and server rewrote the path.
    @Test func anAnswerForAnotherKeyIsAFailure() async {
        for outcome in [Responses.object(extra: ["X-Plugboard-Key": "b"]), Responses.object(extra: ["X-Plugboard-Key": ""])] {
            let remote = ScriptedStorage([outcome])
            let error = await thrownError { _ = try await remote.storage.get("k") }
            #expect(error?.code == .storageFailed)
            #expect(error?.detail?.contains("X-Plugboard-Key k (the key asked for") == true, "\(String(describing: error?.detail))")
        }
        var headers = ["ETag": "\"\(Responses.helloETag)\"", "Content-Type": "text/plain", "Content-Length": "5",
                       "X-Plugboard-Last-Modified": "2026-11-29T20:42:08.123Z"]
        let unnamed = ScriptedStorage([.success(HTTPResponse(status: 200, headers: headers))])
        let error = await thrownError { _ = try await unnamed.storage.head("k") }
        #expect(error?.detail?.contains("found none") == true)
        headers["X-Plugboard-Key"] = "%2E%2E"
        let dots = ScriptedStorage([.success(HTTPResponse(status: 200, headers: headers))])
        #expect(await thrownError { _ = try await dots.storage.head("..") } == nil)
    }

    @Test func unauthorizedAndForbiddenAreAccessDeniedWithAHintAboutTheToken() async {
        let missing = ScriptedStorage([Responses.error(401, "http.unauthorized", "bearer token required",
                                                       headers: ["WWW-Authenticate": "Bearer"])])
        let noToken = await thrownError { _ = try await missing.storage.get("k") }
        #expect(noToken?.code == .storageAccessDenied)
        #expect(noToken?.hint?.contains("set \"token\"") == true)
        #expect(noToken?.detail?.contains("HTTP 401 with error http.unauthorized") == true)

        let wrong = ScriptedStorage([.success(HTTPResponse(status: 403, body: Array("forbidden".utf8)))], token: "wrong-T0K3N")
        let refused = await thrownError { try await wrong.storage.delete("k") }
        #expect(refused?.code == .storageAccessDenied)
        #expect(refused?.hint?.contains("configured token was refused") == true)
        #expect(refused.map { "\($0)" }?.contains("wrong-T0K3N") == false)
        #expect(await wrong.requests.count == 1)
    }

    @Test func unavailableAnswersAndDeadConnectionsAreUnavailable() async {
        for outcome in [Responses.error(503, "container.not_registered"), Responses.error(503, "http.unavailable"),
                        .success(HTTPResponse(status: 504)), .success(HTTPResponse(status: 502, body: Array("<html>".utf8))),
                        Responses.refused, .failure(TransportFailure(.timedOut, "The request timed out."))] {
            let remote = ScriptedStorage([outcome], maxRetries: 1)
            let error = await thrownError { _ = try await remote.storage.list(prefix: "", limit: 1, continuationToken: nil) }
            #expect(error?.code == .storageUnavailable, "\(outcome)")
            #expect(error?.detail?.contains("2 attempts") == true, "\(String(describing: error))")
        }
    }

    @Test func everythingElseIsFailedNamingWhatWasExpectedAndFound() async {
        let cases: [(Result<HTTPResponse, TransportFailure>, PlugboardError.Code, String)] = [
            (Responses.error(404, "http.not_found", "no route"), .storageFailed, "no Plugboard object API"),
            (.success(HTTPResponse(status: 404, body: Array("Not Found".utf8))), .storageFailed, "the body \"Not Found\""),
            (Responses.error(500, "http.internal"), .storageFailed, "HTTP 500 with error http.internal"),
            (.success(HTTPResponse(status: 301, headers: ["Location": "http://elsewhere/"])), .storageFailed, "\"http://elsewhere/\""),
            (Responses.error(413, "http.payload_too_large"), .storageInvalidArgument, "HTTP 413"),
            (.success(HTTPResponse(status: 418, body: [0xFF, 0xFE])), .storageFailed, "2 bytes that are not UTF-8"),
            (.failure(TransportFailure(.other, "SSL connect error")), .storageFailed, "SSL connect error"),
        ]
        for (outcome, code, text) in cases {
            let remote = ScriptedStorage([outcome])
            let error = await thrownError { _ = try await remote.storage.head("k") }
            #expect(error?.code == code, "\(outcome)")
            #expect(error.map { "\($0)" }?.contains(text) == true, "\(String(describing: error))")
            #expect(await remote.requests.count == 1, "not retried: \(outcome)")
        }
    }
}
