import PlugboardHost
import PlugboardJSON
import Testing

/// `plugboard storage ...` through the ObjectStorage the manifest binds. Objects must
/// outlive one run for a round trip, so most tests bind the FolderStorage fixture; the
/// in-tree MemoryStorage (which forgets everything when the process exits) covers the
/// rest.
@Suite struct StorageTests {
    /// A sandbox whose plugins.json binds FolderStorage over `objects/`, with MemoryStorage
    /// at a lower rank: the highest-ranked provider must win.
    func folderSandbox() async throws -> Sandbox {
        let library = try await FolderStorageFixture.path()
        let sandbox = try Sandbox()
        try sandbox.makeFolder("objects")
        try sandbox.write("plugins.json", ManifestText.make([
            #"{"name": "Mem", "product": "MemoryStorage", "rank": 1}"#,
            #"{"name": "Folder", "path": "\#(library)", "rank": 10, "config": {"root": "\#(sandbox.path("objects"))"}}"#,
        ]))
        return sandbox
    }

    @Test func putFromStdin_thenGetHeadListDelete() async throws {
        let sandbox = try await folderSandbox()
        defer { sandbox.remove() }
        let content = Array("hello, plugboard\n".utf8)
        expectRun(await sandbox.run(["storage", "put", "docs/hello.txt", "--content-type", "text/plain",
                               "--meta", "author=ada", "--meta", "reviewed-by=grace"], stdin: content),
                  status: 0, stdout: .empty, stderr: .exactly("stored \"docs/hello.txt\": 17 bytes, ETag etag-17\n"))

        let get = await sandbox.run(["storage", "get", "docs/hello.txt"])
        expectRun(get, status: 0, stderr: .empty)
        #expect(get.stdoutBytes == content)

        expectRun(await sandbox.run(["storage", "head", "docs/hello.txt"]), status: 0, stdout: .exactly("""
            size: 17
            etag: etag-17
            content-type: text/plain
            last-modified: Tue, 14 Nov 2023 22:13:20 GMT
            meta-author: ada
            meta-reviewed-by: grace

            """), stderr: .empty)

        expectRun(await sandbox.run(["storage", "list"]), status: 0, stdout: .exactly("docs/hello.txt\n"), stderr: .empty)
        expectRun(await sandbox.run(["storage", "delete", "docs/hello.txt"]), status: 0, stdout: .empty,
                  stderr: .exactly("deleted \"docs/hello.txt\"\n"))
        expectRun(await sandbox.run(["storage", "get", "docs/hello.txt"]), status: 1, stdout: .empty,
                  stderr: .contains("no object under key \"docs/hello.txt\""))
        expectRun(await sandbox.run(["storage", "list"]), status: 0, stdout: .empty)
    }

    @Test func putFromAFile_andFromDash_andGetToAFile() async throws {
        let sandbox = try await folderSandbox()
        defer { sandbox.remove() }
        // Every byte value, and more than one pipe buffer.
        let binary = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        try sandbox.write("in.bin", binary)
        expectRun(await sandbox.run(["storage", "put", "blob", "in.bin"]), status: 0, stdout: .empty)
        expectRun(await sandbox.run(["storage", "put", "dash", "-"], stdin: Array("from stdin".utf8)), status: 0)

        expectRun(await sandbox.run(["storage", "get", "blob", "-o", "out.bin"]), status: 0, stdout: .empty,
                  stderr: .exactly("wrote 200000 bytes to \"out.bin\"\n"))
        #expect(try sandbox.read("out.bin") == binary)
        expectRun(await sandbox.run(["storage", "get", "blob", "--output", sandbox.path("abs.bin")]), status: 0)
        #expect(try sandbox.read("abs.bin") == binary)

        let dashO = await sandbox.run(["storage", "get", "blob", "-o", "-"])
        expectRun(dashO, status: 0, stderr: .empty)
        #expect(dashO.stdoutBytes == binary)
        let dash = await sandbox.run(["storage", "get", "dash"])
        #expect(dash.stdout == "from stdin")

        // An empty object.
        expectRun(await sandbox.run(["storage", "put", "empty"]), status: 0)
        let empty = await sandbox.run(["storage", "get", "empty"])
        expectRun(empty, status: 0, stdout: .empty, stderr: .empty)
        expectRun(await sandbox.run(["storage", "head", "empty"]), status: 0,
                  stdout: .contains("size: 0\n", "content-type: application/octet-stream\n"))
    }

    @Test func list_withPrefix_onePerLine_inKeyOrder() async throws {
        let sandbox = try await folderSandbox()
        defer { sandbox.remove() }
        for key in ["b/2", "a/1", "b/1", "c"] {
            expectRun(await sandbox.run(["storage", "put", key], stdin: Array(key.utf8)), status: 0)
        }
        expectRun(await sandbox.run(["storage", "list"]), status: 0, stdout: .exactly("a/1\nb/1\nb/2\nc\n"))
        expectRun(await sandbox.run(["storage", "list", "b/"]), status: 0, stdout: .exactly("b/1\nb/2\n"))
        expectRun(await sandbox.run(["storage", "list", "zzz"]), status: 0, stdout: .empty)
        let json = await sandbox.run(["storage", "list", "b/", "--json"])
        expectRun(json, status: 0, stderr: .empty)
        let list = try #require(try json.json().elements)
        #expect(list.map { $0["key"]?.string } == ["b/1", "b/2"])
        for info in list {
            #expect(info.keys == ["key", "size", "etag", "contentType", "lastModified", "metadata"])
        }
    }

    @Test func json_objectsForEveryCommand() async throws {
        let sandbox = try await folderSandbox()
        defer { sandbox.remove() }
        let put = await sandbox.run(["storage", "put", "k", "--json", "--content-type", "text/plain", "--meta", "a=1"],
                              stdin: Array("abc".utf8))
        expectRun(put, status: 0, stdout: .exactly("""
            {
              "key": "k",
              "size": 3,
              "etag": "etag-3",
              "contentType": "text/plain",
              "lastModified": "2023-11-14T22:13:20.000Z",
              "metadata": {
                "a": "1"
              }
            }

            """), stderr: .empty)
        let head = await sandbox.run(["storage", "head", "k", "--json"])
        expectRun(head, status: 0, stdout: .exactly(put.stdout), stderr: .empty)

        // get --json: the content in base64 as "data".
        let get = try await sandbox.run(["storage", "get", "k", "--json"]).json()
        #expect(get.keys == ["key", "size", "etag", "contentType", "lastModified", "metadata", "data"])
        #expect(get["data"]?.string == "YWJj")
        for (content, base64) in [("a", "YQ=="), ("ab", "YWI="), ("", ""), ("\u{FF}\n", "w78K")] {
            expectRun(await sandbox.run(["storage", "put", "b64"], stdin: Array(content.utf8)), status: 0)
            #expect(try await sandbox.run(["storage", "get", "b64", "--json"]).json()["data"]?.string == base64)
        }
        expectRun(await sandbox.run(["storage", "delete", "b64"]), status: 0)
        // ... or the file it was written to as "output".
        let getFile = await sandbox.run(["storage", "get", "k", "--json", "-o", "k.txt"])
        expectRun(getFile, status: 0, stderr: .empty)
        #expect(try getFile.json()["output"]?.string == "k.txt")
        #expect(try sandbox.read("k.txt") == Array("abc".utf8))

        expectRun(await sandbox.run(["storage", "delete", "k", "--json"]), status: 0,
                  stdout: .exactly("{\n  \"deleted\": \"k\",\n  \"existed\": true\n}\n"), stderr: .empty)
        expectRun(await sandbox.run(["storage", "list", "--json"]), status: 0, stdout: .exactly("[]\n"))
    }

    /// The highest-ranked provider is the one used; with FolderStorage gone, MemoryStorage
    /// answers (and has nothing).
    @Test func highestRankedStorageIsUsed() async throws {
        let sandbox = try await folderSandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["storage", "put", "k"], stdin: Array("v".utf8)), status: 0)
        expectRun(await sandbox.run(["storage", "list"]), status: 0, stdout: .exactly("k\n"))
        let library = try await FolderStorageFixture.path()
        try sandbox.write("memory-only.json", ManifestText.make([
            #"{"name": "Mem", "product": "MemoryStorage", "rank": 1}"#,
            #"{"name": "Folder", "path": "\#(library)", "rank": 10, "config": {"root": "\#(sandbox.path("objects"))"}, "enabled": false}"#,
        ]))
        expectRun(await sandbox.run(["storage", "list", "--manifest", "memory-only.json"]), status: 0, stdout: .empty)
    }

    /// MemoryStorage, the in-tree plugin: each run starts empty.
    @Test func memoryStorage_putThenList() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory]))
        let put = await sandbox.run(["storage", "put", "k", "--json"], stdin: Array("hello".utf8))
        expectRun(put, status: 0, stderr: .empty)
        let info = try put.json()
        #expect(info["size"]?.integer == 5)
        // MemoryStorage computes S3's ETag: the MD5 of the content.
        #expect(info["etag"]?.string == "5d41402abc4b2a76b9719d911017c592")
        #expect(info["contentType"]?.string == "application/octet-stream")
        expectRun(await sandbox.run(["storage", "list"]), status: 0, stdout: .empty)
    }
}
