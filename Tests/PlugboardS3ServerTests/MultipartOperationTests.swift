import InMemoryStorage
import PlugboardAPI
import PlugboardCrypto
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import PlugboardTesting
import Synchronization
import Testing

/// The multipart operations over InMemoryObjectStorage, with requests built directly (no
/// router, no signatures): what each answers, and what it leaves in the storage.
@Suite struct MultipartOperationTests {
    // MARK: A whole upload

    @Test func threePartsOutOfOrder_completeIntoTheConcatenation_withS3sMultipartETag() async throws {
        let s = try await MultipartHarness()
        let p1 = MultipartHarness.bytes(10, seed: 1), p2 = MultipartHarness.bytes(12, seed: 2), p3 = MultipartHarness.bytes(5, seed: 3)
        try await MultipartOperations.$minimumPartSize.withValue(8) {
            let id = try await s.create("k/photo.bin", headers: [("content-type", "image/x-test"), ("x-amz-meta-color", "blue"),
                                                                 ("cache-control", "no-cache")])
            let e3 = try await s.part(id, 3, p3)
            let e1 = try await s.part(id, 1, MultipartHarness.bytes(10, seed: 9)) // replaced below
            _ = e1
            let e2 = try await s.part(id, 2, p2)
            let e1b = try await s.part(id, 1, p1)
            #expect(e1b == "\"" + Hex.encode(try MD5Hasher.hash(p1)) + "\"")
            #expect(e3 == "\"" + Hex.encode(try MD5Hasher.hash(p3)) + "\"")

            let response = try await s.complete(id, [(1, e1b), (2, e2), (3, e3)])
            #expect(response.status == 200)
            #expect(response.headers.contains { $0.0 == "Content-Type" && $0.1 == "application/xml" })
            let result = try S3XMLReader.parse(response.body)
            #expect(result.name == "CompleteMultipartUploadResult")
            #expect(result.text("Bucket") == "b")
            #expect(result.text("Key") == "k/photo.bin")

            // S3's multipart ETag, computed here independently of the server's code.
            let concatenatedMD5s = try MD5Hasher.hash(p1) + MD5Hasher.hash(p2) + MD5Hasher.hash(p3)
            let expectedETag = Hex.encode(try MD5Hasher.hash(concatenatedMD5s)) + "-3"
            #expect(result.text("ETag") == "\"" + expectedETag + "\"")

            let stored = try await s.storage.get("b/k/photo.bin")
            #expect(stored.data == p1 + p2 + p3)
            #expect(stored.info.contentType == "image/x-test")
            #expect(stored.info.metadata["color"] == "blue")
            #expect(stored.info.metadata["plugboard-s3-cache-control"] == "no-cache")
            #expect(S3Objects.etag(stored.info) == "\"" + expectedETag + "\"")

            // The parts and the record are gone; the manifest is there.
            #expect(try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b")).isEmpty)
            #expect(try await s.storage.exists(MultipartLayout.manifestKey(bucket: "b", key: "k/photo.bin")))

            // Each part by number: 206, its range, the parts count.
            var offset = 0
            for (number, bytes) in [(1, p1), (2, p2), (3, p3)] {
                let answer = try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k/photo.bin", query: [("partNumber", "\(number)")]))
                #expect(answer.status == 206)
                #expect(answer.body == bytes)
                #expect(MultipartHarness.header(answer, "Content-Range") == "bytes \(offset)-\(offset + bytes.count - 1)/27")
                #expect(MultipartHarness.header(answer, "x-amz-mp-parts-count") == "3")
                #expect(MultipartHarness.header(answer, "ETag") == "\"" + expectedETag + "\"")
                let head = try await MultipartOperations.headObjectPart(s.context, s.request("HEAD", key: "k/photo.bin", query: [("partNumber", "\(number)")]))
                #expect(head.status == 206)
                #expect(head.body.isEmpty)
                #expect(head.headLength == bytes.count)
                #expect(MultipartHarness.header(head, "Content-Range") == MultipartHarness.header(answer, "Content-Range"))
                offset += bytes.count
            }
            let beyond = try #require(await MultipartHarness.s3Error {
                try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k/photo.bin", query: [("partNumber", "4")]))
            })
            #expect(beyond.code == "InvalidPartNumber")
            #expect(beyond.status == 416)
            #expect(beyond.message.contains("expected 1 to 3"), "\(beyond.message)")

            // After completion the upload takes no more parts; the same Complete again is
            // answered as the first was (a client that lost the answer retries it).
            let again = try await s.complete(id, [(1, e1b), (2, e2), (3, e3)])
            #expect(try S3XMLReader.parse(again.body).text("ETag") == "\"" + expectedETag + "\"")
            let late = try #require(await MultipartHarness.s3Error { try await s.part(id, 4, [1, 2, 3]) })
            #expect(late.code == "NoSuchUpload")
        }
    }

    @Test func anObjectOverwrittenByAPlainPut_isOnePartAgain_andItsStaleManifestIsRemoved() async throws {
        let s = try await MultipartHarness()
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1, 2, 3])
            let e2 = try await s.part(id, 2, [4, 5])
            _ = try await s.complete(id, [(1, e1), (2, e2)])
        }
        let manifestKey = MultipartLayout.manifestKey(bucket: "b", key: "k")
        #expect(try await s.storage.exists(manifestKey))
        // A plain PutObject stores no multipart ETag.
        try await s.storage.put("b/k", data: [7, 7, 7, 7])
        let answer = try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k", query: [("partNumber", "1")]))
        #expect(answer.status == 206)
        #expect(answer.body == [7, 7, 7, 7])
        #expect(MultipartHarness.header(answer, "Content-Range") == "bytes 0-3/4")
        #expect(MultipartHarness.header(answer, "x-amz-mp-parts-count") == nil)
        #expect(try await !s.storage.exists(manifestKey), "a stale manifest is removed when seen")
        let second = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k", query: [("partNumber", "2")]))
        })
        #expect(second.code == "InvalidPartNumber")

        // A multipart ETag whose manifest does not describe the object (written by some
        // other path): the object is answered as one part, and the manifest dropped.
        try await s.storage.put(manifestKey, data: MultipartManifest(key: "k", etag: "other", multipartETag: "0123-2", sizes: [1, 0]).encoded())
        try await s.storage.put("b/k", data: [9], metadata: [S3Namespace.multipartETagKey: "0123-2"])
        let whole = try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k", query: [("partNumber", "1")]))
        #expect(whole.body == [9])
        #expect(MultipartHarness.header(whole, "x-amz-mp-parts-count") == nil)
        #expect(try await !s.storage.exists(manifestKey))
    }

    @Test func completion_streamsThePartsOneAfterAnother_intoOnePut() async throws {
        let memory = InMemoryObjectStorage()
        let storage = RecordingStorage(memory)
        try await memory.put(S3Namespace.markerKey(bucket: "b"), data: [])
        var s = try await MultipartHarness()
        s.storage = memory
        s.bound = storage
        let p1 = MultipartHarness.bytes(10, seed: 1), p2 = MultipartHarness.bytes(12, seed: 2), p3 = MultipartHarness.bytes(5, seed: 3)
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let etags = [try await s.part(id, 1, p1), try await s.part(id, 2, p2), try await s.part(id, 3, p3)]
            storage.log.withLock { $0 = [] }
            _ = try await s.complete(id, [(1, etags[0]), (2, etags[1]), (3, etags[2])])
            let log = storage.log.withLock { $0 }
            // Each part is opened only once the previous one has been read to its end, and
            // the put sees the parts' chunks as they come, never the object whole (the
            // completion claim before it is not the object's).
            let reads = log.drop(while: { !$0.hasPrefix("put b/k") }).filter { $0.contains("/part-") || $0.hasPrefix("chunk ") || $0.hasSuffix("b/k") || $0.hasPrefix("put b/k") }
            #expect(reads == ["put b/k length 27", "get \(id)/part-00001", "chunk 10", "get \(id)/part-00002", "chunk 12",
                              "get \(id)/part-00003", "chunk 5", "stored b/k"], "\(log)")
        }
        #expect(try await memory.get("b/k").data == p1 + p2 + p3)
    }

    @Test func aLargePart_isAnsweredAsAStream() async throws {
        let s = try await MultipartHarness()
        let big = MultipartHarness.bytes(1_500_000, seed: 4)
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [0])
            let e2 = try await s.part(id, 2, big)
            _ = try await s.complete(id, [(1, e1), (2, e2)])
        }
        let answer = try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k", query: [("partNumber", "2")]))
        #expect(answer.status == 206)
        #expect(MultipartHarness.header(answer, "Content-Range") == "bytes 1-1500000/1500001")
        let stream = try #require(answer.stream)
        #expect(stream.length == big.count)
        var received: [UInt8] = []
        while let chunk = try await stream.next() { received += chunk }
        #expect(received == big)
    }

    @Test func theHelpersForTheOtherOperations_seeUploadsAndForgetManifests() async throws {
        let s = try await MultipartHarness()
        let uploads = MultipartLayout.uploadsPrefix(bucket: "b")
        #expect(try await s.storage.list(prefix: uploads).isEmpty)
        let id = try await s.create("k")
        #expect(try await !s.storage.list(prefix: uploads).isEmpty)
        let e1 = try await s.part(id, 1, [1])
        _ = try await s.complete(id, [(1, e1)])
        #expect(try await s.storage.list(prefix: uploads).isEmpty)
        #expect(try await s.storage.exists(MultipartLayout.manifestKey(bucket: "b", key: "k")))
        try await MultipartOperations.forgetParts(s.context, bucket: "b", key: "k")
        #expect(try await !s.storage.exists(MultipartLayout.manifestKey(bucket: "b", key: "k")))
    }

    @Test func aPartRead_honoursConditions_andRefusesARangeBesideIt() async throws {
        let s = try await MultipartHarness()
        try await s.storage.put("b/k", data: [1, 2, 3])
        let etag = "\"" + Hex.encode(try MD5Hasher.hash([1, 2, 3] as [UInt8])) + "\""
        func get(_ headers: [(String, String)]) async throws -> HTTPResponse {
            try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: "k", query: [("partNumber", "1")], headers: headers))
        }
        #expect(try await get([("if-match", etag)]).status == 206)
        #expect(try await get([("if-none-match", etag)]).status == 304)
        #expect(try await get([("if-none-match", "\"other\"")]).status == 206)
        #expect(try await get([("if-modified-since", "Sun, 01 Jan 2090 00:00:00 GMT")]).status == 304)
        let failed = try #require(await MultipartHarness.s3Error { try await get([("if-match", "\"other\"")]) })
        #expect(failed.code == "PreconditionFailed")
        let unmodified = try #require(await MultipartHarness.s3Error { try await get([("if-unmodified-since", "Mon, 01 Jan 2001 00:00:00 GMT")]) })
        #expect(unmodified.code == "PreconditionFailed")
        let both = try #require(await MultipartHarness.s3Error { try await get([("range", "bytes=0-1")]) })
        #expect(both.code == "InvalidRequest")
        let missing = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.headObjectPart(s.context, s.request("HEAD", key: "none", query: [("partNumber", "1")]))
        })
        #expect(missing.code == "NoSuchKey")
    }

    // MARK: Completion's refusals

    @Test func partsOutOfOrder_areInvalidPartOrder() async throws {
        let s = try await MultipartHarness()
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1])
            let e2 = try await s.part(id, 2, [2])
            let error = try #require(await MultipartHarness.s3Error { try await s.complete(id, [(2, e2), (1, e1)]) })
            #expect(error.code == "InvalidPartOrder")
            #expect(error.message.contains("expected a part number above 2, found 1"), "\(error.message)")
            let repeated = try #require(await MultipartHarness.s3Error { try await s.complete(id, [(1, e1), (1, e1)]) })
            #expect(repeated.code == "InvalidPartOrder")
            // Nothing was stored, and the upload is still there.
            #expect(try await !s.storage.exists("b/k"))
            _ = try await s.complete(id, [(1, e1), (2, e2)])
            #expect(try await s.storage.get("b/k").data == [1, 2])
        }
    }

    @Test func aWrongOrMissingPart_isInvalidPart_namingThePart() async throws {
        let s = try await MultipartHarness()
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1, 1])
            _ = try await s.part(id, 2, [2, 2])
            let wrong = try #require(await MultipartHarness.s3Error {
                try await s.complete(id, [(1, e1), (2, "\"0123456789abcdef0123456789abcdef\"")])
            })
            #expect(wrong.code == "InvalidPart")
            #expect(wrong.message.contains("part 2"), "\(wrong.message)")
            #expect(wrong.message.contains("0123456789abcdef0123456789abcdef"), "\(wrong.message)")
            let missing = try #require(await MultipartHarness.s3Error { try await s.complete(id, [(1, e1), (3, e1)]) })
            #expect(missing.code == "InvalidPart")
            #expect(missing.message.contains("part 3"), "\(missing.message)")
            #expect(try await !s.storage.exists("b/k"))
            // ETags without their quotes are taken too.
            _ = try await s.complete(id, [(1, String(e1.dropFirst().dropLast()))])
            #expect(try await s.storage.get("b/k").data == [1, 1])
        }
    }

    @Test func aSmallPartButTheLast_isEntityTooSmall_atS3sRealMinimum() async throws {
        #expect(MultipartOperations.minimumPartSize == 5 * 1024 * 1024)
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        let e1 = try await s.part(id, 1, MultipartHarness.bytes(10, seed: 1))
        let e2 = try await s.part(id, 2, MultipartHarness.bytes(3, seed: 2))
        let error = try #require(await MultipartHarness.s3Error { try await s.complete(id, [(1, e1), (2, e2)]) })
        #expect(error.code == "EntityTooSmall")
        #expect(error.status == 400)
        #expect(error.message.contains("part 1"), "\(error.message)")
        #expect(error.message.contains("at least 5242880 bytes, found 10"), "\(error.message)")
        #expect(try await !s.storage.exists("b/k"))
        // The last part alone may be small.
        _ = try await s.complete(id, [(2, e2)])
        #expect(try await s.storage.get("b/k").data == MultipartHarness.bytes(3, seed: 2))
    }

    @Test func aMalformedCompletionDocument_isMalformedXML() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        for body in ["<CompleteMultipartUpload></CompleteMultipartUpload>", "<Other/>", "<CompleteMultipartUpload><Part>"] {
            let error = try #require(await MultipartHarness.s3Error {
                try await MultipartOperations.completeMultipartUpload(s.context, s.request("POST", key: "k", query: [("uploadId", id)], body: Array(body.utf8)))
            })
            #expect(error.code == "MalformedXML", "\(body)")
        }
    }

    // MARK: Completion's conditions, and a Complete repeated

    @Test func complete_withIfNoneMatchOnAnExistingKey_isRefused_andLeavesTheObjectAndTheUpload() async throws {
        let s = try await MultipartHarness()
        let old = try await s.storage.put("b/k", data: Array("old".utf8))
        let id = try await s.create("k")
        let e1 = try await s.part(id, 1, [1, 2, 3])

        let refused = await MultipartHarness.s3Error { try await s.complete(id, [(1, e1)], headers: [("if-none-match", "*")]) }
        #expect(refused?.code == "PreconditionFailed")
        #expect(refused?.status == 412)
        #expect(refused?.message.contains("If-None-Match") == true)
        #expect(try await s.storage.get("b/k").data == Array("old".utf8))
        // The upload is still there: the client may complete it otherwise or abort it.
        #expect(try await s.storage.exists(MultipartLayout.recordKey(bucket: "b", uploadID: id)))

        let wrong = await MultipartHarness.s3Error { try await s.complete(id, [(1, e1)], headers: [("if-match", "\"0123456789abcdef0123456789abcdef\"")]) }
        #expect(wrong?.code == "PreconditionFailed")
        #expect(try await s.storage.get("b/k").data == Array("old".utf8))

        let replaced = try await s.complete(id, [(1, e1)], headers: [("if-match", "\"" + old.etag + "\"")])
        #expect(replaced.status == 200)
        #expect(try await s.storage.get("b/k").data == [1, 2, 3])
    }

    @Test func complete_withIfNoneMatchOnANewKey_storesTheObject() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("new")
        let e1 = try await s.part(id, 1, [7])
        #expect(try await s.complete(id, [(1, e1)], headers: [("if-none-match", "*")]).status == 200)
        #expect(try await s.storage.get("b/new").data == [7])
        // If-Match on a key that holds nothing: NoSuchKey, as PutObject answers.
        let other = try await s.create("absent")
        let e2 = try await s.part(other, 1, [8])
        let missing = await MultipartHarness.s3Error { try await s.complete(other, [(1, e2)], headers: [("if-match", "\"" + String(repeating: "0", count: 32) + "\"")]) }
        #expect(missing?.code == "NoSuchKey")
        #expect(try await !s.storage.exists("b/absent"))
    }

    @Test func complete_repeated_answersTheSameETag_untilTheObjectIsReplaced() async throws {
        let s = try await MultipartHarness()
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1, 1])
            let e2 = try await s.part(id, 2, [2])
            let first = try S3XMLReader.parse(try await s.complete(id, [(1, e1), (2, e2)]).body)
            let stored = try await s.storage.head("b/k")

            // A retry after a lost answer, with If-None-Match too: the same answer, nothing rewritten.
            for headers in [[], [("if-none-match", "*")]] {
                let again = try await s.complete(id, [(1, e1), (2, e2)], headers: headers)
                #expect(again.status == 200)
                let doc = try S3XMLReader.parse(again.body)
                #expect(doc.text("ETag") == first.text("ETag"))
                #expect(doc.text("Key") == "k")
                #expect(try await s.storage.head("b/k").lastModified == stored.lastModified)
            }
            // Another list for the same upload is not the Complete that was answered.
            let otherList = await MultipartHarness.s3Error { try await s.complete(id, [(1, e1)]) }
            #expect(otherList?.code == "InvalidPart")
            #expect(otherList?.message.contains("completed already") == true)

            // Once the object is replaced, the upload is gone as S3 says it.
            _ = try await s.storage.put("b/k", data: [9])
            let gone = await MultipartHarness.s3Error { try await s.complete(id, [(1, e1), (2, e2)]) }
            #expect(gone?.code == "NoSuchUpload")
        }
    }

    /// Issue 32: six Completes of one upload at once, three listing three parts and three
    /// listing two, were all answered 200 while the object matched one list. Exactly one
    /// list wins: its Completes answer its ETag, the others InvalidPart, and the object is
    /// that list's concatenation.
    @Test func racingCompletes_withTwoPartLists_storeAndAnswerExactlyOneList() async throws {
        let s = try await MultipartHarness()
        let p1 = MultipartHarness.bytes(3, seed: 1), p2 = MultipartHarness.bytes(4, seed: 2), p3 = MultipartHarness.bytes(5, seed: 3)
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            for round in 0..<7 {
                let key = "race-\(round)"
                let id = try await s.create(key)
                let e1 = try await s.part(id, 1, p1), e2 = try await s.part(id, 2, p2), e3 = try await s.part(id, 3, p3)
                let lists: [[(Int, String)]] = [[(1, e1), (2, e2), (3, e3)], [(1, e1), (2, e2)]]
                let outcomes = try await withThrowingTaskGroup(of: (list: Int, etag: String?, code: String?).self) { group in
                    for i in 0..<6 {
                        let list = i % 2
                        group.addTask {
                            do {
                                let answer = try await s.complete(id, lists[list])
                                return (list, try S3XMLReader.parse(answer.body).text("ETag"), nil)
                            } catch let error as S3Error {
                                return (list, nil, error.code)
                            }
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let winners = Set(outcomes.filter { $0.etag != nil }.map(\.list))
                #expect(winners.count == 1, "round \(round): lists answered 200: \(winners.sorted())")
                guard let winner = winners.first else { continue }
                for outcome in outcomes where outcome.list != winner {
                    #expect(outcome.code == "InvalidPart", "round \(round): a Complete of the other list answered \(outcome.code ?? "200")")
                }
                let answered = Set(outcomes.compactMap(\.etag))
                #expect(answered.count == 1)
                #expect(outcomes.filter { $0.list == winner }.allSatisfy { $0.etag != nil }, "round \(round): \(outcomes)")
                let stored = try await s.storage.get("b/" + key)
                #expect(stored.data == (winner == 0 ? p1 + p2 + p3 : p1 + p2), "round \(round)")
                #expect(answered.first == S3Objects.etag(stored.info))
                #expect(try await s.storage.list(prefix: MultipartLayout.folder(bucket: "b", uploadID: id)).isEmpty)
            }
        }
    }

    /// The server killed after the object was stored and before the upload's record and
    /// parts were removed: a retried Complete answers as the first would have, and a
    /// listing no longer shows the upload; both finish the clean-up.
    @Test func complete_cutShortBeforeItsCleanUp_isAnsweredOnRetry_andHiddenFromListings() async throws {
        let s = try await MultipartHarness()
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1, 1])
            let e2 = try await s.part(id, 2, [2])
            let leftovers = [MultipartLayout.recordKey(bucket: "b", uploadID: id),
                             MultipartLayout.partKey(bucket: "b", uploadID: id, partNumber: 2)]
            var saved: [(String, [UInt8])] = []
            for key in leftovers { saved.append((key, try await s.storage.get(key).data)) }
            let first = try S3XMLReader.parse(try await s.complete(id, [(1, e1), (2, e2)]).body)
            func restoreWhatTheCrashLeft() async throws {
                for (key, data) in saved { _ = try await s.storage.put(key, data: data) }
            }

            try await restoreWhatTheCrashLeft()
            let retried = try await s.complete(id, [(1, e1), (2, e2)])
            #expect(try S3XMLReader.parse(retried.body).text("ETag") == first.text("ETag"))
            #expect(try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b")).isEmpty)

            try await restoreWhatTheCrashLeft()
            let listing = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest([("uploads", "")])).body)
            #expect(listing.children("Upload").isEmpty)
            #expect(try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b")).isEmpty)
            #expect(try await s.storage.get("b/k").data == [1, 1, 2])
        }
    }

    /// The server stopped after the Complete stored its object and before the object's
    /// manifest was written (issue 32: `partNumber` reads answered 416 and
    /// GetObjectAttributes no parts while the ETag said `-2`): the Complete is held at the
    /// manifest's put, and another host over the same storage reads the object meanwhile.
    /// The completion claim holds the layout, so every read answers the parts, and the
    /// listing that finishes the clean-up writes the manifest before removing the claim.
    @Test func killedBetweenTheObjectAndItsManifest_theClaimKeepsThePartLayout() async throws {
        var s = try await MultipartHarness()
        let other = s
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1, 1, 1])
            let e2 = try await s.part(id, 2, [2, 2])
            let manifestKey = MultipartLayout.manifestKey(bucket: "b", key: "k")
            let held = HeldStorage(s.storage, holding: .put(manifestKey))
            s.bound = held
            let completing = s
            let complete = Task { try await completing.complete(id, [(1, e1), (2, e2)]) }
            await held.reached()
            #expect(try await s.storage.head("b/k").metadata[S3Namespace.multipartETagKey]?.hasSuffix("-2") == true)
            #expect(try await s.storage.exists(manifestKey) == false)

            let second = try await MultipartOperations.headObjectPart(other.context, other.request("HEAD", key: "k", query: [("partNumber", "2")]))
            #expect(second.status == 206)
            #expect(MultipartHarness.header(second, "x-amz-mp-parts-count") == "2")
            #expect(MultipartHarness.header(second, "Content-Range") == "bytes 3-4/5")
            let attributes = try S3XMLReader.parse(try await GetObjectAttributesOperation.getObjectAttributes(
                other.context, other.request("GET", key: "k", query: [("attributes", "")], headers: [("x-amz-object-attributes", "ObjectParts")])).body)
            #expect(attributes.child("ObjectParts")?.text("PartsCount") == "2")
            #expect(attributes.child("ObjectParts")?.children("Part").compactMap { $0.text("Size") } == ["3", "2"])

            // The listing finishes the clean-up, the claim included, once the manifest is there.
            let listing = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(other.context, other.bucketRequest([("uploads", "")])).body)
            #expect(listing.children("Upload").isEmpty)
            #expect(try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b")).isEmpty)
            let manifest = try #require(MultipartManifest(parsing: try await s.storage.get(manifestKey).data))
            #expect(manifest.sizes == [3, 2])
            #expect(manifest.etag == (try await s.storage.head("b/k")).etag)

            held.release()
            _ = try await complete.value
            let after = try await MultipartOperations.headObjectPart(other.context, other.request("HEAD", key: "k", query: [("partNumber", "1")]))
            #expect(MultipartHarness.header(after, "x-amz-mp-parts-count") == "2")
        }
    }

    /// An abort of an upload whose object stands completed from it, its clean-up cut
    /// short, is NoSuchUpload as after any Complete, and finishes the clean-up keeping the
    /// object's layout.
    @Test func abortAfterACompleteCutShort_isNoSuchUpload_andKeepsTheLayout() async throws {
        var s = try await MultipartHarness()
        let other = s
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create("k")
            let e1 = try await s.part(id, 1, [1, 1])
            let e2 = try await s.part(id, 2, [2])
            let held = HeldStorage(s.storage, holding: .put(MultipartLayout.manifestKey(bucket: "b", key: "k")))
            s.bound = held
            let completing = s
            let complete = Task { try await completing.complete(id, [(1, e1), (2, e2)]) }
            await held.reached()
            let error = try #require(await MultipartHarness.s3Error {
                try await MultipartOperations.abortMultipartUpload(other.context, other.request("DELETE", key: "k", query: [("uploadId", id)]))
            })
            #expect(error.code == "NoSuchUpload")
            #expect(try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b")).isEmpty)
            let part = try await MultipartOperations.headObjectPart(other.context, other.request("HEAD", key: "k", query: [("partNumber", "2")]))
            #expect(MultipartHarness.header(part, "x-amz-mp-parts-count") == "2")
            held.release()
            _ = try await complete.value
        }
    }

    // MARK: Abort, unknown uploads, swaps

    @Test func abort_removesPartsAndRecord_andTheUploadIsThenNoSuchUpload() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        _ = try await s.part(id, 1, [1])
        _ = try await s.part(id, 2, [2])
        let answer = try await MultipartOperations.abortMultipartUpload(s.context, s.request("DELETE", key: "k", query: [("uploadId", id)]))
        #expect(answer.status == 204)
        #expect(try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b")).isEmpty)
        for operation in ["part", "complete", "abort", "list"] {
            let error = try #require(await MultipartHarness.s3Error {
                switch operation {
                case "part": return try await MultipartOperations.uploadPart(s.context, s.request("PUT", key: "k", query: [("partNumber", "1"), ("uploadId", id)], body: [1]))
                case "complete": return try await s.complete(id, [(1, "x")])
                case "abort": return try await MultipartOperations.abortMultipartUpload(s.context, s.request("DELETE", key: "k", query: [("uploadId", id)]))
                default: return try await MultipartOperations.listParts(s.context, s.request("GET", key: "k", query: [("uploadId", id)]))
                }
            })
            #expect(error.code == "NoSuchUpload", "\(operation)")
            #expect(error.status == 404)
        }
    }

    /// An UploadPart that found the record while AbortMultipartUpload was removing the
    /// upload (the abort through one host, the part through another over the same backend,
    /// or both through one): its part, stored after the abort had listed the upload, is
    /// answered 200, and the abort's second look once the record is gone removes it, so
    /// nothing of the upload is left (docs/S3_API.md, "Several gateways behind a load
    /// balancer").
    @Test func aPartStoredWhileAnAbortRemovesTheUpload_isRemovedWithIt() async throws {
        var s = try await MultipartHarness()
        let id = try await s.create("k")
        _ = try await s.part(id, 1, [1])
        let held = HeldStorage(s.storage, holding: .delete(MultipartLayout.recordKey(bucket: "b", uploadID: id)))
        s.bound = held
        let context = s.context
        let abort = s.request("DELETE", key: "k", query: [("uploadId", id)])
        async let aborted = MultipartOperations.abortMultipartUpload(context, abort)
        // Released however the test ends, before the held request is awaited.
        defer { held.release() }
        await held.reached()
        _ = try await s.part(id, 2, [2])
        held.release()
        #expect(try await aborted.status == 204)
        let left = try await s.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "b"))
        #expect(left.isEmpty, "\(left.map(\.key))")
    }

    @Test func anUploadOfAnotherKey_aMadeUpID_orAnotherStorage_isNoSuchUpload() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        let otherKey = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.uploadPart(s.context, s.request("PUT", key: "other", query: [("partNumber", "1"), ("uploadId", id)], body: [1]))
        })
        #expect(otherKey.code == "NoSuchUpload")
        let madeUp = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.uploadPart(s.context, s.request("PUT", key: "k", query: [("partNumber", "1"), ("uploadId", "../../buckets/b")], body: [1]))
        })
        #expect(madeUp.code == "NoSuchUpload")
        // The storage swapped for another that has the bucket but not the upload.
        let swapped = InMemoryObjectStorage()
        try await swapped.put(S3Namespace.markerKey(bucket: "b"), data: [])
        let context = S3Context(storage: swapped, logger: .disabled, region: "us-east-1", buckets: S3BucketGate())
        let afterSwap = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.uploadPart(context, s.request("PUT", key: "k", query: [("partNumber", "1"), ("uploadId", id)], body: [1]))
        })
        #expect(afterSwap.code == "NoSuchUpload")
        #expect(try await swapped.list(prefix: "").count == 1)
    }

    @Test func partNumbersOutside1To10000_areInvalidArgument() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        for bad in ["0", "10001", "-1", "abc", ""] {
            let error = try #require(await MultipartHarness.s3Error {
                try await MultipartOperations.uploadPart(s.context, s.request("PUT", key: "k", query: [("partNumber", bad), ("uploadId", id)], body: [1]))
            })
            #expect(error.code == "InvalidArgument", "\(bad)")
            #expect(error.message.contains("between 1 and 10000"), "\(error.message)")
        }
        _ = try await s.part(id, 10000, [1])
        #expect(try await s.storage.exists(MultipartLayout.partKey(bucket: "b", uploadID: id, partNumber: 10000)))
    }

    @Test func aPartBodyThatThrowsMidway_storesNoPart() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        struct Broken: Error {}
        let chunks = MultipartTestChunks([[1, 2, 3, 4]])
        let body = ObjectBody(length: 10) {
            if let chunk = chunks.next() { return chunk }
            throw Broken()
        }
        await #expect(throws: Broken.self) {
            _ = try await MultipartOperations.uploadPart(s.context, s.request("PUT", key: "k", query: [("partNumber", "1"), ("uploadId", id)], body: body))
        }
        #expect(try await !s.storage.exists(MultipartLayout.partKey(bucket: "b", uploadID: id, partNumber: 1)))
        let listed = try S3XMLReader.parse(try await MultipartOperations.listParts(s.context, s.request("GET", key: "k", query: [("uploadId", id)])).body)
        #expect(listed.children("Part").isEmpty)
        #expect(listed.text("IsTruncated") == "false")
    }

    // MARK: Listings

    @Test func listParts_pagesWithMaxParts1() async throws {
        let s = try await MultipartHarness()
        let id = try await s.create("k")
        let sizes = [3: 30, 1: 10, 2: 20]
        for (number, size) in sizes { _ = try await s.part(id, number, MultipartHarness.bytes(size, seed: UInt8(number))) }
        var marker = 0
        var seen: [Int] = []
        for page in 1...3 {
            let answer = try await MultipartOperations.listParts(s.context, s.request("GET", key: "k", query: [("uploadId", id), ("max-parts", "1"), ("part-number-marker", "\(marker)")]))
            let doc = try S3XMLReader.parse(answer.body)
            #expect(doc.name == "ListPartsResult")
            #expect(doc.text("UploadId") == id)
            #expect(doc.text("MaxParts") == "1")
            #expect(doc.text("PartNumberMarker") == "\(marker)")
            let parts = doc.children("Part")
            try #require(parts.count == 1)
            let number = try #require(parts[0].text("PartNumber").flatMap { Int($0) })
            #expect(parts[0].text("Size") == "\(sizes[number]!)")
            #expect(parts[0].text("ETag") == "\"" + Hex.encode(try MD5Hasher.hash(MultipartHarness.bytes(sizes[number]!, seed: UInt8(number)))) + "\"")
            #expect(parts[0].text("LastModified")?.hasSuffix("Z") == true)
            #expect(doc.text("IsTruncated") == (page < 3 ? "true" : "false"))
            #expect(doc.text("NextPartNumberMarker") == "\(number)")
            seen.append(number)
            marker = number
        }
        #expect(seen == [1, 2, 3])
        let all = try S3XMLReader.parse(try await MultipartOperations.listParts(s.context, s.request("GET", key: "k", query: [("uploadId", id)])).body)
        #expect(all.children("Part").compactMap { $0.text("PartNumber") } == ["1", "2", "3"])
        #expect(all.text("IsTruncated") == "false")
    }

    @Test func listMultipartUploads_listsTwoUploads_inKeyOrder_andPages() async throws {
        let s = try await MultipartHarness()
        let second = try await s.create("z/second")
        let first = try await s.create("a/first")
        let doc = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest([("uploads", "")])).body)
        #expect(doc.name == "ListMultipartUploadsResult")
        #expect(doc.text("Bucket") == "b")
        #expect(doc.text("IsTruncated") == "false")
        let uploads = doc.children("Upload")
        #expect(uploads.compactMap { $0.text("Key") } == ["a/first", "z/second"])
        #expect(uploads.compactMap { $0.text("UploadId") } == [first, second])
        #expect(uploads.allSatisfy { $0.text("StorageClass") == "STANDARD" && $0.text("Initiated")?.hasSuffix("Z") == true })

        let page1 = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest([("uploads", ""), ("max-uploads", "1")])).body)
        #expect(page1.children("Upload").compactMap { $0.text("Key") } == ["a/first"])
        #expect(page1.text("IsTruncated") == "true")
        #expect(page1.text("NextKeyMarker") == "a/first")
        #expect(page1.text("NextUploadIdMarker") == first)
        let page2 = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest(
            [("uploads", ""), ("max-uploads", "1"), ("key-marker", "a/first"), ("upload-id-marker", first)])).body)
        #expect(page2.children("Upload").compactMap { $0.text("Key") } == ["z/second"])
        #expect(page2.text("IsTruncated") == "false")

        let prefixed = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest([("uploads", ""), ("prefix", "z/")])).body)
        #expect(prefixed.children("Upload").compactMap { $0.text("Key") } == ["z/second"])
        let grouped = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest([("uploads", ""), ("delimiter", "/")])).body)
        #expect(grouped.children("Upload").isEmpty)
        #expect(grouped.children("CommonPrefixes").compactMap { $0.text("Prefix") } == ["a/", "z/"])
        // Another bucket's uploads are not listed.
        try await s.storage.put(S3Namespace.markerKey(bucket: "other"), data: [])
        let other = try S3XMLReader.parse(try await MultipartOperations.listMultipartUploads(s.context, s.bucketRequest([("uploads", "")], bucket: "other")).body)
        #expect(other.children("Upload").isEmpty)
    }

    // MARK: UploadPartCopy

    @Test func uploadPartCopy_copiesARangeOfAnExistingObject() async throws {
        let s = try await MultipartHarness()
        let source = MultipartHarness.bytes(100, seed: 7)
        try await s.storage.put("b/src/object", data: source)
        let id = try await s.create("k")
        let copy = try await MultipartOperations.uploadPartCopy(s.context, s.request("PUT", key: "k", query: [("partNumber", "1"), ("uploadId", id)],
                                                                                  headers: [("x-amz-copy-source", "/b/src%2Fobject"), ("x-amz-copy-source-range", "bytes=10-29")]))
        #expect(copy.status == 200)
        let result = try S3XMLReader.parse(copy.body)
        #expect(result.name == "CopyPartResult")
        let slice = Array(source[10...29])
        #expect(result.text("ETag") == "\"" + Hex.encode(try MD5Hasher.hash(slice)) + "\"")
        let etag = try #require(result.text("ETag"))
        _ = try await s.complete(id, [(1, etag)])
        #expect(try await s.storage.get("b/k").data == slice)

        let id2 = try await s.create("k2")
        let beyond = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.uploadPartCopy(s.context, s.request("PUT", key: "k2", query: [("partNumber", "1"), ("uploadId", id2)],
                                                                              headers: [("x-amz-copy-source", "b/src/object"), ("x-amz-copy-source-range", "bytes=50-100")]))
        })
        #expect(beyond.code == "InvalidArgument")
        #expect(beyond.message.contains("size: 100"), "\(beyond.message)")
        let missing = try #require(await MultipartHarness.s3Error {
            try await MultipartOperations.uploadPartCopy(s.context, s.request("PUT", key: "k2", query: [("partNumber", "1"), ("uploadId", id2)],
                                                                              headers: [("x-amz-copy-source", "b/none")]))
        })
        #expect(missing.code == "NoSuchKey")
        // The whole object when no range is given.
        _ = try await MultipartOperations.uploadPartCopy(s.context, s.request("PUT", key: "k2", query: [("partNumber", "1"), ("uploadId", id2)],
                                                                              headers: [("x-amz-copy-source", "b/src/object")]))
        #expect(try await s.storage.get(MultipartLayout.partKey(bucket: "b", uploadID: id2, partNumber: 1)).data == source)
    }

    // MARK: The record

    @Test func theRecord_roundTripsAnyKeyAndMetadata_andRefusesDamage() throws {
        let record = MultipartRecord(key: "a b\n%c/\u{E9}\u{1F600} =x", contentType: "text/plain; charset=utf-8",
                                     initiated: Timestamp(secondsSince1970: 1_796_000_000, nanoseconds: 123),
                                     initiator: "AKIA", metadata: ["color": "blue green", "plugboard-s3-expires": "", "x": "%20"])
        #expect(MultipartRecord(parsing: record.encoded()) == record)
        #expect(MultipartRecord(parsing: Array("garbage".utf8)) == nil)
        #expect(MultipartRecord(parsing: Array("plugboard-s3-upload 1\nkey %ZZ\ninitiated 1 0\n".utf8)) == nil)
        #expect(MultipartRecord(parsing: Array("plugboard-s3-upload 1\ninitiated 1 0\n".utf8)) == nil)
        #expect(MultipartRecord(parsing: Array("plugboard-s3-upload 1\nkey k\ninitiated 1 0\nfuture field\n".utf8))?.key == "k")
        let manifest = MultipartManifest(key: "k", etag: "e", multipartETag: "m-2", sizes: [5, 0])
        #expect(MultipartManifest(parsing: manifest.encoded()) == manifest)
        #expect(MultipartManifest(parsing: Array("plugboard-s3-parts 1\nkey k\netag e\nmultipart-etag m\npart -1\n".utf8)) == nil)
        #expect(MultipartLayout.partKey(bucket: "b", uploadID: "i", partNumber: 42) == "_plugboard-s3/uploads/b/i/part-00042")
        let long = String(repeating: "k", count: 1010)
        #expect(MultipartLayout.manifestKey(bucket: "b", key: long).hasPrefix("_plugboard-s3/parts-hashed/b/"))
        #expect(MultipartLayout.manifestKey(bucket: "b", key: "short") == "_plugboard-s3/parts/b/short")
    }

    @Test func aKeyTooLongForTheManifestsPrefix_stillAnswersItsParts() async throws {
        let s = try await MultipartHarness()
        let long = String(repeating: "k", count: 1010)
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let id = try await s.create(long)
            let e1 = try await s.part(id, 1, [1, 2])
            let e2 = try await s.part(id, 2, [3])
            _ = try await s.complete(id, [(1, e1), (2, e2)])
        }
        let second = try await MultipartOperations.getObjectPart(s.context, s.request("GET", key: long, query: [("partNumber", "2")]))
        #expect(second.status == 206)
        #expect(second.body == [3])
        #expect(MultipartHarness.header(second, "Content-Range") == "bytes 2-2/3")
        #expect(MultipartHarness.header(second, "x-amz-mp-parts-count") == "2")
    }
}

/// A bucket "b" in a fresh InMemoryObjectStorage, and requests to it.
fileprivate struct MultipartHarness {
    var storage = InMemoryObjectStorage()
    /// What the operations see; `storage` unless a test puts a wrapper in front of it.
    var bound: (any ObjectStorage)?
    let buckets = S3BucketGate()
    var context: S3Context { S3Context(storage: bound ?? storage, logger: .disabled, region: "us-east-1", buckets: buckets) }

    init() async throws {
        try await storage.put(S3Namespace.markerKey(bucket: "b"), data: [])
    }

    func request(_ method: String, key: String?, query: [(name: String, value: String)], headers: [(String, String)] = [],
                 body: [UInt8] = [], bucket: String = "b") -> S3Request {
        request(method, key: key, query: query, headers: headers, body: ObjectBody(body), bucket: bucket)
    }

    func request(_ method: String, key: String?, query: [(name: String, value: String)], headers: [(String, String)] = [],
                 body: ObjectBody, bucket: String = "b") -> S3Request {
        let head = RequestHead(method: method, target: "/", version: .http11, headers: HTTPHeaders([(name: "host", value: "test")] + headers.map { (name: $0.0, value: $0.1) }),
                               framing: body.length.map { .length($0) } ?? .chunked, keepAlive: true, expectsContinue: false)
        return S3Request(head: head, bucket: bucket, key: key, query: query, body: body, requestID: "test", accessKeyID: "AKIATEST")
    }

    func bucketRequest(_ query: [(name: String, value: String)], bucket: String = "b") -> S3Request {
        request("GET", key: nil, query: query, bucket: bucket)
    }

    func create(_ key: String, headers: [(String, String)] = []) async throws -> String {
        let answer = try await MultipartOperations.createMultipartUpload(context, request("POST", key: key, query: [("uploads", "")], headers: headers))
        let doc = try S3XMLReader.parse(answer.body)
        #expect(doc.name == "InitiateMultipartUploadResult")
        #expect(doc.text("Key") == key)
        let id = try #require(doc.text("UploadId"))
        #expect(id.utf8.count == 32)
        keys.value[id] = key
        return id
    }

    /// UploadPart; the answer's ETag header.
    func part(_ id: String, _ number: Int, _ bytes: [UInt8]) async throws -> String {
        let answer = try await MultipartOperations.uploadPart(context, request("PUT", key: keys.value[id] ?? "k", query: [("partNumber", "\(number)"), ("uploadId", id)], body: bytes))
        #expect(answer.status == 200)
        return try #require(Self.header(answer, "ETag"))
    }

    func complete(_ id: String, _ parts: [(Int, String)], headers: [(String, String)] = []) async throws -> HTTPResponse {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (number, etag) in parts {
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(etag.replacingQuotes())</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        return try await MultipartOperations.completeMultipartUpload(context, request("POST", key: keys.value[id] ?? "k", query: [("uploadId", id)],
                                                                                      headers: headers, body: Array(xml.utf8)))
    }

    let keys = MultipartKeyBook()

    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7) }
    }

    static func s3Error<T>(_ operation: () async throws -> T) async -> S3Error? {
        do {
            _ = try await operation()
            return nil
        } catch let error as S3Error {
            return error
        } catch {
            Issue.record("expected an S3Error, found \(error)")
            return nil
        }
    }
}

/// Which key each upload in a test was created for.
fileprivate final class MultipartKeyBook: @unchecked Sendable {
    // @unchecked: tests touch it from their one task.
    var value: [String: String] = [:]
}

/// Chunks handed out one at a time.
fileprivate final class MultipartTestChunks: @unchecked Sendable {
    // @unchecked: one ObjectBody reader at a time.
    private var remaining: [[UInt8]]
    init(_ chunks: [[UInt8]]) { remaining = chunks }
    func next() -> [UInt8]? { remaining.isEmpty ? nil : remaining.removeFirst() }
}

extension String {
    /// `"` as `&quot;`, as SDKs write ETags in the completion document.
    fileprivate func replacingQuotes() -> String {
        var out = ""
        for c in self { out += c == "\"" ? "&quot;" : String(c) }
        return out
    }
}

/// InMemoryObjectStorage behind a log of the streamed gets and puts, read chunk by chunk.
fileprivate final class RecordingStorage: ForwardingStorage {
    let base: InMemoryObjectStorage
    let log = Mutex<[String]>([])

    init(_ base: InMemoryObjectStorage) { self.base = base }

    func record(_ line: String) { log.withLock { $0.append(line) } }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        let short = key.hasPrefix(S3Namespace.uploadsPrefix) ? String(key.split(separator: "/").suffix(2).joined(separator: "/")) : key
        record("put \(short) length \(body.length.map(String.init) ?? "nil")")
        var bytes: [UInt8] = []
        for try await chunk in body {
            record("chunk \(chunk.count)")
            bytes += chunk
        }
        let info = try await base.put(key, body: ObjectBody(bytes), contentType: contentType, metadata: metadata, condition: condition)
        record("stored \(short)")
        return info
    }
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        let short = key.hasPrefix(S3Namespace.uploadsPrefix) ? String(key.split(separator: "/").suffix(2).joined(separator: "/")) : key
        record("get \(short)")
        return try await base.get(key, range: range)
    }
}
