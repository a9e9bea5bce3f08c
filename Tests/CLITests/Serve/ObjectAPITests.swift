import PlugboardHost
import PlugboardJSON
import Testing

/// The object endpoints against a real `plugboard serve` with MemoryStorage (and one
/// round trip with FileStorage), over raw sockets.
@Suite struct ObjectAPITests {
    @Test(arguments: ["a/b/c.txt", "..", ".", "/leading", "a//b", "a%2Fb literal", "caf\u{E9}/\u{1F600}", "plus+sign", "sp ace?#&="])
    func putGetHeadDelete_roundTripsAnyKey(key: String) throws {
        let server = try ServerProcess()
        let c = try server.client()
        let path = "/v1/objects/\(encodeKey(key))"
        let put = try c.request("PUT", path, headers: [("Content-Type", "text/plain"), ("X-Plugboard-Meta-Author", " ada "),
                                                       ("x-plugboard-meta-Reviewed-By", "grace")], body: Array("hello".utf8))
        #expect(put.status == 200, "\(put.text)")
        #expect(put.header("etag") == "\"5d41402abc4b2a76b9719d911017c592\"")
        #expect(put.header("content-type") == "application/json")
        #expect(put.header("last-modified")?.hasSuffix(" GMT") == true)
        let info = try JSONValue.parse(put.text)
        #expect(info.keys == ["key", "size", "etag", "contentType", "lastModified", "metadata"])
        #expect(info["key"]?.string.map { Array($0.utf8) } == Array(key.utf8))
        #expect(info["size"]?.integer == 5)
        #expect(info["etag"]?.string == "5d41402abc4b2a76b9719d911017c592")
        #expect(info["contentType"]?.string == "text/plain")
        #expect(info["lastModified"]?.string == put.header("x-plugboard-last-modified"))
        #expect(info["metadata"]?["author"]?.string == "ada")
        #expect(info["metadata"]?["reviewed-by"]?.string == "grace")

        let get = try c.request("GET", path)
        #expect(get.status == 200)
        #expect(get.text == "hello")
        #expect(get.header("content-type") == "text/plain")
        #expect(get.header("content-length") == "5")
        #expect(get.header("etag") == put.header("etag"))
        #expect(get.header("x-plugboard-last-modified") == put.header("x-plugboard-last-modified"))
        #expect(get.header("x-plugboard-meta-author") == "ada")
        #expect(get.header("x-plugboard-meta-reviewed-by") == "grace")
        // The object answered, named in the client's encoding (every byte but A-Z a-z 0-9 - _ ~).
        #expect(get.header("x-plugboard-key") == key.utf8.map { b in
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F || b == 0x7E
                ? String(UnicodeScalar(b)) : "%" + (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true)
        }.joined())

        let head = try c.request("HEAD", path)
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("content-length") == "5")
        #expect(head.headers.map(\.0) == get.headers.map(\.0))

        #expect(try c.request("DELETE", path).status == 204)
        #expect(try c.request("DELETE", path).status == 204)
        let gone = try c.request("GET", path)
        #expect(gone.status == 404)
        #expect(gone.errorCode == "storage.not_found")
        #expect(gone.header("x-plugboard-error-code") == "storage.not_found")
        let goneHead = try c.request("HEAD", path)
        #expect(goneHead.status == 404)
        #expect(goneHead.body.isEmpty)
        // A HEAD answer has no body: the header is where its code is.
        #expect(goneHead.header("x-plugboard-error-code") == "storage.not_found")
    }

    @Test func rawSlashAndEncodedSlash_nameTheSameKey() throws {
        let server = try ServerProcess()
        let c = try server.client()
        #expect(try c.request("PUT", "/v1/objects/dir/file", body: [1, 2, 3]).status == 200)
        let get = try c.request("GET", "/v1/objects/dir%2ffile")
        #expect(get.body == [1, 2, 3])
        #expect(get.header("content-type") == "application/octet-stream")
    }

    @Test func badKeys_areRefusedByCode() throws {
        let server = try ServerProcess()
        for (target, status, code) in [("/v1/objects/a%00b", 400, "storage.invalid_key"),
                                       ("/v1/objects/%FF", 400, "storage.invalid_key"),
                                       ("/v1/objects/", 400, "storage.invalid_key"),
                                       ("/v1/objects/\(String(repeating: "k", count: 1025))", 400, "storage.invalid_key"),
                                       ("/v1/objects/a%2", 400, "http.bad_request"),
                                       ("/v1/objects/%zz", 400, "http.bad_request"),
                                       ("/nothing/here", 404, "http.not_found")] {
            let r = try server.client().request("GET", target)
            #expect(r.status == status, "\(target)")
            #expect(r.errorCode == code, "\(target)")
            #expect(r.header("x-plugboard-error-code") == code, "\(target)")
            #expect(r.header("content-type") == "application/json")
            #expect(r.text.hasPrefix("{\"error\":{\"code\":\"\(code)\",\"message\":\""), "\(r.text)")
            #expect(r.text.contains("\"detail\":") && r.text.contains("\"hint\":"))
        }
        let bad = try server.client().request("PUT", "/v1/objects/k", headers: [("X-Plugboard-Meta-Bad_Name", "v")], body: [])
        #expect(bad.status == 400)
        #expect(bad.errorCode == "storage.invalid_metadata")
        let method = try server.client().request("POST", "/v1/objects/k", body: [])
        #expect(method.status == 405)
        #expect(method.header("allow") == "GET, HEAD, PUT, DELETE")
        #expect(method.errorCode == "http.method_not_allowed")
        let unknown = try server.client().request("BREW", "/v1/objects/k")
        #expect(unknown.status == 405)
        #expect(unknown.header("allow") == "GET, HEAD, PUT, DELETE")
    }

    @Test func listing_pagesWithCursors_andRefusesBadArguments() throws {
        let server = try ServerProcess()
        let c = try server.client()
        for key in ["p/1", "p/2", "p/3", "q/1"] { #expect(try c.request("PUT", "/v1/objects/\(key)", body: []).status == 200) }
        var keys: [String] = []
        var cursor: String? = nil
        var pages = 0
        repeat {
            let query = "prefix=p%2F&limit=2" + (cursor.map { "&cursor=\(encodeKey($0))" } ?? "")
            let page = try c.request("GET", "/v1/objects?\(query)")
            #expect(page.status == 200, "\(page.text)")
            let json = try JSONValue.parse(page.text)
            #expect(json.keys == ["objects", "nextCursor"])
            keys += json["objects"]?.elements?.compactMap { $0["key"]?.string } ?? []
            cursor = json["nextCursor"]?.string
            pages += 1
        } while cursor != nil && pages < 10
        #expect(keys == ["p/1", "p/2", "p/3"])
        #expect(pages == 2)
        let all = try c.request("GET", "/v1/objects")
        #expect(all.text.hasPrefix("{\"objects\":[{\"key\":\"p/1\""))
        #expect(all.text.contains("\"key\":\"q/1\""))
        for query in ["limit=abc", "limit=0", "limit=1001", "cursor=", "cursor=bogus", "limit=1.5"] {
            let r = try server.client().request("GET", "/v1/objects?\(query)")
            #expect(r.status == 400, "\(query)")
            #expect(r.errorCode == "storage.invalid_argument", "\(query)")
        }
    }

    @Test func fileStorage_roundTrip_survivesARestart() throws {
        let data = try Sandbox()
        defer { data.remove() }
        let plugin = #"{"name": "Files", "product": "FileStorage", "config": {"root": "\#(data.path("objects"))"}}"#
        let body = (0..<100_000).map { UInt8($0 % 251) }
        do {
            let server = try ServerProcess(plugins: [plugin])
            let put = try server.client().request("PUT", "/v1/objects/\(encodeKey("docs/../big.bin"))", body: body)
            #expect(put.status == 200, "\(put.text)")
            #expect(server.stop() == 0)
        }
        let server = try ServerProcess(plugins: [plugin])
        let get = try server.client().request("GET", "/v1/objects/docs%2F%2E%2E%2Fbig%2Ebin")
        #expect(get.status == 200)
        #expect(get.body == body)
    }

    @Test func unavailableStorage_is503WithRetryAfter() throws {
        let plugin = #"{"name": "Mem", "product": "MemoryStorage", "config": {"failOperations": ["get", "head"]}}"#
        let server = try ServerProcess(plugins: [plugin])
        let r = try server.client().request("GET", "/v1/objects/k")
        #expect(r.status == 503)
        #expect(r.errorCode == "storage.unavailable")
        #expect(r.header("retry-after") == "1")
        let head = try server.client().request("HEAD", "/v1/objects/k")
        #expect(head.status == 503)
        #expect(head.body.isEmpty)
        #expect(head.header("retry-after") == "1")
    }

    @Test func noStorageBound_is503HostNoStorage_andNotReady() throws {
        let server = try ServerProcess(plugins: [])
        let r = try server.client().request("GET", "/v1/objects/k")
        #expect(r.status == 503)
        #expect(r.errorCode == "host.no_storage")
        #expect(try server.client().request("GET", "/healthz").text == "{\"status\":\"ok\"}\n")
        let ready = try server.client().request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.text.contains("no ObjectStorage is bound"))
    }
}
