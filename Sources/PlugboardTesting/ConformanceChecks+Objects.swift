import PlugboardAPI

extension ConformanceChecks {
    static let objectRules: [Definition] = [
        Definition("put_get_roundtrip",
                   "get returns exactly the bytes put stored (every byte value 0 to 255), and get's info equals head's.",
                   putGetRoundtrip),
        Definition("put_returns_info",
                   "put returns the key, size, ETag, content type and metadata that head then reports, and a lastModified near the local clock.",
                   putReturnsInfo),
        Definition("put_overwrites",
                   "A second put of a key replaces data, size, ETag, content type and metadata; nothing of the first object remains.",
                   putOverwrites),
        Definition("empty_object_ok",
                   "A zero-byte object is stored, has size 0, and get returns no bytes.",
                   emptyObject),
        Definition("get_missing_is_not_found",
                   "get of a key that was never written fails with storage.not_found.",
                   getMissing),
        Definition("head_missing_is_not_found",
                   "head of a key that was never written fails with storage.not_found.",
                   headMissing),
        Definition("delete_removes",
                   "After delete, get and head fail with storage.not_found and list no longer shows the key.",
                   deleteRemoves),
        Definition("delete_is_idempotent",
                   "delete of a key that was never written succeeds, and deleting a key twice succeeds.",
                   deleteIsIdempotent),
        Definition("etag_is_md5_hex",
                   "The ETag from put, head, get and list is the lowercase hex MD5 of the data: 32 characters, no quotes (d41d8cd98f00b204e9800998ecf8427e for no data).",
                   etagIsMD5Hex),
        Definition("content_type_roundtrip_and_default",
                   "A given content type comes back unchanged from put, head and get; none given stores application/octet-stream.",
                   contentTypeRoundtrip),
        Definition("content_type_invalid_refused",
                   "An empty content type, one with control or non-ASCII characters, or one starting with a space is refused with storage.invalid_argument and nothing is stored.",
                   contentTypeInvalid),
        Definition("put_checks_key_then_content_type_then_metadata",
                   "When several arguments of put are invalid, the error is for the key first, then the content type, then the metadata.",
                   refusalOrder),
    ]

    private static func putGetRoundtrip(_ c: ConformanceContext) async throws {
        let key = c.key("object")
        let data = (0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) }
        try await c.put(key, data)
        try await c.expectStored(key, data)
        let object = try await c.get(key)
        let head = try await c.head(key)
        try c.expectEqual(object.info, head, "info of key \(c.show(key)) from get compared with head")
    }

    private static func putReturnsInfo(_ c: ConformanceContext) async throws {
        let key = c.key("object")
        let data = c.bytes(1000, seed: 1)
        let metadata = ["owner": "conformance", "purpose": "put returns info"]
        let before = Timestamp.now()
        let put = try await c.put(key, data, contentType: "text/plain; charset=utf-8", metadata: metadata)
        let after = Timestamp.now()
        let head = try await c.head(key)
        try c.expect(ObjectKey.isSame(put.key, as: key), "put of key \(c.show(key)): expected the returned key to be the same bytes, found \(c.show(put.key))")
        try c.expectEqual(put.size, data.count, "put of key \(c.show(key)): returned size")
        try c.expectEqual(c.normalizedETag(put.etag), try c.md5Hex(data), "put of key \(c.show(key)): returned etag (quotes and case aside)")
        try c.expectEqual(put.contentType, "text/plain; charset=utf-8", "put of key \(c.show(key)): returned content type")
        try c.expectEqual(put.metadata, metadata, "put of key \(c.show(key)): returned metadata")
        try c.expectEqual(head.size, put.size, "head after put of key \(c.show(key)): size")
        try c.expectEqual(head.etag, put.etag, "head after put of key \(c.show(key)): etag")
        try c.expectEqual(head.contentType, put.contentType, "head after put of key \(c.show(key)): content type")
        try c.expectEqual(head.metadata, put.metadata, "head after put of key \(c.show(key)): metadata")
        let tolerance = Double(c.options.clockSkewTolerance.components.seconds)
            + Double(c.options.clockSkewTolerance.components.attoseconds) / 1e18
        for (name, date) in [("put", put.lastModified), ("head", head.lastModified)] {
            let early = c.seconds(from: before, to: date), late = c.seconds(from: after, to: date)
            try c.expect(early >= -tolerance && late <= tolerance,
                         "lastModified from \(name) of key \(c.show(key)): expected the local clock (\(before) to \(after) while put ran) ± \(c.options.clockSkewTolerance) (Options.clockSkewTolerance), found \(date)")
        }
    }

    private static func putOverwrites(_ c: ConformanceContext) async throws {
        let key = c.key("object")
        let first = c.bytes(5000, seed: 1)
        let second = c.bytes(300, seed: 2)
        try await c.put(key, first, contentType: "text/plain", metadata: ["first": "1", "shared": "one"])
        try await c.put(key, second, contentType: nil, metadata: ["shared": "two"])
        try await c.expectStored(key, second)
        let head = try await c.head(key)
        try c.expectEqual(head.contentType, ObjectContentType.defaultValue,
                          "head of key \(c.show(key)) after overwriting without a content type: content type")
        try c.expectEqual(head.metadata, ["shared": "two"],
                          "head of key \(c.show(key)) after overwriting: metadata (the second put's only, nothing merged)")
        let listed = try await c.listAll(prefix: c.key(""))
        try c.expectEqual(listed.count, 1, "list of prefix \(c.show(c.key(""))) after overwriting one key twice: number of objects")
    }

    private static func emptyObject(_ c: ConformanceContext) async throws {
        let key = c.key("empty")
        let put = try await c.put(key, [])
        try c.expectEqual(put.size, 0, "put of empty object \(c.show(key)): size")
        try await c.expectStored(key, [])
    }

    private static func getMissing(_ c: ConformanceContext) async throws {
        let key = c.key("never-written")
        try await c.expectError(.storageNotFound, "get of missing key \(c.show(key))") {
            _ = try await c.storage.get(key)
        }
    }

    private static func headMissing(_ c: ConformanceContext) async throws {
        let key = c.key("never-written")
        try await c.expectError(.storageNotFound, "head of missing key \(c.show(key))") {
            _ = try await c.storage.head(key)
        }
    }

    private static func deleteRemoves(_ c: ConformanceContext) async throws {
        let key = c.key("object")
        let other = c.key("other")
        try await c.put(key, c.bytes(10, seed: 1))
        try await c.put(other, c.bytes(10, seed: 2))
        try await c.delete(key)
        try await c.expectError(.storageNotFound, "get of key \(c.show(key)) after delete") {
            _ = try await c.storage.get(key)
        }
        try await c.expectAbsent(key, "after delete")
        let listed = try await c.listAll(prefix: c.key("")).map(\.key)
        try c.expect(listed.count == 1 && listed.first.map { ObjectKey.isSame($0, as: other) } == true,
                     "list of prefix \(c.show(c.key(""))) after deleting \(c.show(key)): expected only \(c.show(other)), found \(listed.map(c.show))")
        try await c.expectStored(other, c.bytes(10, seed: 2))
    }

    private static func deleteIsIdempotent(_ c: ConformanceContext) async throws {
        let missing = c.key("never-written")
        do {
            try await c.storage.delete(missing)
        } catch {
            throw ConformanceCheckFailure("delete of missing key \(c.show(missing)): expected success, found \(ConformanceText.describe(error))")
        }
        let key = c.key("object")
        try await c.put(key, c.bytes(10, seed: 1))
        try await c.delete(key)
        do {
            try await c.storage.delete(key)
        } catch {
            throw ConformanceCheckFailure("second delete of key \(c.show(key)): expected success, found \(ConformanceText.describe(error))")
        }
        try await c.expectAbsent(key, "after deleting it twice")
    }

    private static func etagIsMD5Hex(_ c: ConformanceContext) async throws {
        let contents: [(String, [UInt8])] = [
            ("empty", []),
            ("abc", Array("abc".utf8)),
            ("one-byte", [0]),
            ("block", c.bytes(64, seed: 3)),
            ("odd", c.bytes(100_003, seed: 4)),
        ]
        for (suffix, data) in contents {
            let key = c.key(suffix)
            let expected = try c.md5Hex(data)
            let put = try await c.put(key, data)
            try c.expectEqual(put.etag, expected, "etag from put of key \(c.show(key)) (\(data.count) bytes)")
            try c.expectEqual(try await c.head(key).etag, expected, "etag from head of key \(c.show(key))")
            try c.expectEqual(try await c.get(key).info.etag, expected, "etag from get of key \(c.show(key))")
        }
        try c.expectEqual(try c.md5Hex(Array("abc".utf8)), "900150983cd24fb0d6963f7d28e17f72",
                          "the suite's own MD5 of \"abc\"")
        let listed = try await c.listAll(prefix: c.key(""))
        for object in listed {
            guard let data = contents.first(where: { ObjectKey.isSame(c.key($0.0), as: object.key) })?.1 else {
                throw ConformanceCheckFailure("list of prefix \(c.show(c.key(""))): expected only the keys written, found \(c.show(object.key))")
            }
            try c.expectEqual(object.etag, try c.md5Hex(data), "etag from list of key \(c.show(object.key))")
        }
        try c.expectEqual(listed.count, contents.count, "list of prefix \(c.show(c.key(""))): number of objects")
    }

    private static func contentTypeRoundtrip(_ c: ConformanceContext) async throws {
        let types = ["text/plain", "application/json; charset=utf-8",
                     "multipart/form-data; boundary=\"x y\"", "image/svg+xml", "x-custom/Mixed.Case-1"]
        for (index, type) in types.enumerated() {
            let key = c.key("typed-\(index)")
            let put = try await c.put(key, Array("x".utf8), contentType: type)
            try c.expectEqual(put.contentType, type, "content type from put of key \(c.show(key))")
            try c.expectEqual(try await c.head(key).contentType, type, "content type from head of key \(c.show(key))")
            try c.expectEqual(try await c.get(key).info.contentType, type, "content type from get of key \(c.show(key))")
        }
        let key = c.key("untyped")
        let put = try await c.put(key, Array("x".utf8))
        try c.expectEqual(put.contentType, "application/octet-stream", "content type from put of key \(c.show(key)) given none")
        try c.expectEqual(try await c.head(key).contentType, "application/octet-stream", "content type from head of key \(c.show(key)) given none")
    }

    private static func contentTypeInvalid(_ c: ConformanceContext) async throws {
        let bad = ["", "text/plain\r\nx-injected: 1", "text/plain\n", "caf\u{E9}/x", "text/plain\u{0}", " text/plain"]
        for (index, type) in bad.enumerated() {
            let key = c.key("bad-type-\(index)")
            c.track(key)
            try await c.expectError(.storageInvalidArgument, "put of key \(c.show(key)) with content type \(c.show(type))") {
                _ = try await c.storage.put(key, data: Array("x".utf8), contentType: type, metadata: [:])
            }
            try await c.expectAbsent(key, "after a put with content type \(c.show(type)) was refused")
        }
    }

    private static func refusalOrder(_ c: ConformanceContext) async throws {
        let badMetadata = ["Bad Key": "x"]
        try await c.expectError(.storageInvalidKey, "put of an empty key with an invalid content type and invalid metadata") {
            _ = try await c.storage.put("", data: [], contentType: "", metadata: badMetadata)
        }
        let key = c.key("object")
        c.track(key)
        try await c.expectError(.storageInvalidArgument, "put of key \(c.show(key)) with an invalid content type and invalid metadata") {
            _ = try await c.storage.put(key, data: [], contentType: "", metadata: badMetadata)
        }
        try await c.expectAbsent(key, "after refused puts")
    }
}
