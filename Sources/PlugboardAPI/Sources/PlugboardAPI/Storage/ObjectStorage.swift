/// A flat store of objects under string keys, in the shape of S3: the service that
/// applications resolve from the container and storage plugins provide.
///
/// Applications call these methods (and the conveniences in the extension) on whatever
/// backend the container holds. Backend authors implement the requirements and run
/// `ObjectStorageConformance` from the `PlugboardTesting` library, which checks every rule
/// below by name.
///
/// The five whole-object methods are the 1.0 contract. PlugboardAPI 1.2 added the
/// streaming forms, ``put(_:body:contentType:metadata:condition:)`` and
/// ``get(_:range:)``, with default implementations over the whole-object methods
/// (`ObjectStorage+Streaming.swift`), so that a plugin built against 1.1 still loads and
/// works: its objects are simply collected in memory, and it refuses conditional writes
/// with `storage.unsupported`. A backend that can stream or check conditions atomically
/// implements both. PlugboardAPI 1.4 added ``getWithoutWaiting(_:range:)``, a read
/// answered on the caller's thread when nothing has to wait; its default says it never
/// can.
///
/// ```swift
/// let storage: any ObjectStorage = try container.resolve()
/// let info = try await storage.put("reports/2026/q1.csv", data: csv, contentType: "text/csv")
/// let object = try await storage.get("reports/2026/q1.csv")
/// ```
///
/// # Implementation requirements
///
/// Every backend behaves the same way, so that swapping one for another changes nothing
/// an application can observe except speed and durability.
///
/// **Keys.** A key is any valid UTF-8 string of 1 to 1024 bytes without NUL, exactly as
/// S3 allows. Keys are byte strings, not paths:
/// - `a` and `a/b` may both exist; `..`, `.`, a leading `/`, `a//b` and 1024 bytes with no
///   `/` are ordinary keys, and `a/../b` is not `b`.
/// - Two keys are the same only when their UTF-8 bytes are equal: `caf\u{E9}` and
///   `cafe\u{301}` are two objects, although Swift's `String ==` calls them equal; `A`
///   and `a` are two objects. Key dictionaries by `Array(key.utf8)`, not by `String`.
/// - A backend that stores in files encodes keys so that every valid key works and none
///   reaches outside its root.
/// - Every method refuses an empty key, a key over 1024 bytes or one containing NUL with
///   `storage.invalid_key` before doing anything, using ``ObjectKey/validate(_:)``;
///   backends that receive raw bytes use ``ObjectKey/validate(bytes:)``, which also
///   refuses invalid UTF-8.
///
/// **Writing and reading.**
/// - `put` stores the data under the key, replacing any object there, and returns the new
///   object's ``ObjectInfo`` (what `head` then returns, except that `lastModified` may be
///   taken from another clock). Readers see either the old object or the new one whole,
///   never a mix; after `put` returns, every `get`, `head` and `list` sees the new object.
/// - Objects hold any bytes, the empty object included, and at least 64 MiB; a backend
///   may refuse larger objects than its store takes with `storage.invalid_argument`.
/// - `get` and `head` of a key holding no object fail with `storage.not_found`
///   (``PlugboardError/objectNotFound(key:)``).
/// - `delete` removes the object; it is idempotent: deleting a missing key succeeds.
/// - Arguments are checked in this order, most basic first: key
///   (``ObjectKey/validate(_:)``), content type (``ObjectContentType/resolve(_:)``), then
///   metadata (``ObjectMetadata/validate(_:)``). A refused `put` stores nothing.
///
/// **Streaming bodies** (``put(_:body:contentType:metadata:condition:)``).
/// - The streamed put stores exactly what the whole put would for the same bytes: the
///   same ``ObjectInfo`` (size, ETag, content type, metadata), however the bytes were cut
///   into chunks, an empty body included.
/// - Arguments are checked before the body is read, in the order above (key, content
///   type, metadata), then the body's announced length against what the backend takes;
///   a refused put reads nothing.
/// - A put whose body throws, whose task is cancelled, or whose body yields fewer or more
///   bytes than its ``ObjectBody/length`` stores nothing and leaves any previous object
///   under the key exactly as it was: readers never see a partial object. The body's own
///   error is rethrown unchanged; a wrong length is `storage.invalid_argument`
///   (``ObjectBody/forEachChunk(upTo:_:)`` checks it).
/// - The ETag is still the MD5 of the whole data, computed as the chunks pass.
///
/// **Range reads** (``get(_:range:)``).
/// - A range is resolved against the object's size as ``ByteRange/resolve(size:)`` says
///   (RFC 9110: `last` clamped to the end, a suffix longer than the object is the whole
///   object). One that selects nothing fails with `storage.range_not_satisfiable`; a
///   malformed one (``ByteRange/validate()``) with `storage.invalid_argument`.
/// - The returned ``ObjectStream`` carries the whole object's info, the resolved offsets
///   and a body of exactly those bytes; `range: nil` returns the whole object with
///   `stream.range == nil`. The info and the bytes come from one version of the object,
///   even while another `put` replaces it.
///
/// **Reads answered at once** (``getWithoutWaiting(_:range:)``, PlugboardAPI 1.4).
/// - It returns `nil` whenever answering would wait: for the disk, the network, a lock
///   held across I/O, or an object larger than the backend hands out in one piece. The
///   caller then calls ``get(_:range:)``. Returning `nil` is always correct, and is the
///   default.
/// - Otherwise it returns exactly what ``get(_:range:)`` would return now (the whole
///   object's info, the resolved offsets, those bytes) or throws the error it would
///   throw, with the same code, in the same order of checks.
/// - The server asks it for every GET, and for every HEAD with the range `0...0`: the
///   `info` of that read answers the HEAD, so it must be the whole object's, as always.
/// - It runs on the caller's thread, which may be an event loop that serves thousands
///   of connections: it never blocks, sleeps or waits for another thread's work, and
///   costs about a copy of the bytes it returns. No task runs it, so there is no
///   cancellation to check.
/// - A storage that wraps another (fault injection, metrics, caching) either gives it
///   the same behaviour as its `get` or returns `nil`; forwarding to the wrapped storage
///   when its own `get` adds latency or failures would skip them.
///
/// **Conditional writes** (``WriteCondition``).
/// - `.absent` stores only when no object is under the key; `.matches(etag:)` only when
///   the current object's ETag is `etag` (a missing object does not match). Otherwise the
///   put fails with `storage.precondition_failed` and stores nothing.
/// - The check and the store are one atomic step: of concurrent `.absent` puts of one
///   key exactly one succeeds. A backend that cannot guarantee that refuses the condition
///   with `storage.unsupported` before reading the body; it never emulates it with a
///   `head` followed by a `put`.
///
/// **Content type and metadata.**
/// - `contentType` is stored as given; `nil` stores `application/octet-stream`. An empty
///   one, or one with control characters, is refused with `storage.invalid_argument`.
/// - Metadata keys are lowercase ASCII letters, digits and `-`; values are printable
///   ASCII without leading or trailing space; keys and values take at most 2048 bytes in
///   all. Anything else is refused with `storage.invalid_metadata`. `head` and `get`
///   return the metadata exactly as given.
///
/// **ETag.** The lowercase hexadecimal MD5 of the data, 32 characters, without the quotes
/// HTTP puts around it (the empty object's is `d41d8cd98f00b204e9800998ecf8427e`). A
/// backend whose store reports another ETag (S3 multipart uploads, SSE-KMS) computes and
/// keeps the MD5 itself.
///
/// **Listing.**
/// - `list` returns the keys that start with `prefix` (byte for byte, ``ObjectKey/hasPrefix(_:_:)``)
///   in ascending UTF-8 byte order (``ObjectKey/precedes(_:_:)``, not `String <`), at most
///   `limit` per page, each key once across all pages.
/// - `limit` is 1 to 1000; anything else is refused with `storage.invalid_argument`. A
///   prefix over 1024 bytes or containing NUL is refused the same way; an empty prefix
///   lists every key.
/// - `nextContinuationToken` is `nil` exactly when no matching key follows the page. The
///   token is opaque to callers; a backend may use ``ListingRequest``'s scheme (the last
///   key returned, base64url encoded). A token the backend did not issue, the empty
///   string included, is refused with `storage.invalid_argument`.
/// - A listing entry's key, size, ETag and `lastModified` are those `head` returns; see
///   ``ObjectListing/objects`` for content type and metadata.
///
/// **Errors.** Methods throw ``PlugboardError`` with these codes, and no other type except
/// `CancellationError` when the calling task is cancelled:
/// - `storage.invalid_key`, `storage.invalid_metadata`, `storage.invalid_argument`: the
///   caller's mistake; retrying the same call fails the same way.
/// - `storage.not_found`: no object under the key.
/// - `storage.access_denied`: the backend's credentials do not allow the operation;
///   retrying does not help until the configuration changes.
/// - `storage.unavailable`: the backend cannot be reached or is overloaded for now; the
///   only code worth retrying, with backoff.
/// - `storage.failed`: anything else the backend reports; carry its error in `underlying`.
/// - `storage.precondition_failed`: a ``WriteCondition`` did not hold; nothing was stored.
/// - `storage.range_not_satisfiable`: a ranged `get` selects no byte of the object.
/// - `storage.unsupported`: the backend cannot do what was asked (an atomic conditional
///   write); retrying does not help.
///
/// **Concurrency.** Every method may be called from many tasks at once. Concurrent `put`s
/// of one key leave one of the written objects whole. No method may trap or call `exit`
/// on any input: a bad argument is an error value.
public protocol ObjectStorage: Sendable {
    /// Stores `data` under `key`, replacing any object there.
    ///
    /// - Parameters:
    ///   - key: The object's key, 1 to 1024 bytes of UTF-8 without NUL.
    ///   - data: The object's content; any bytes, possibly none. Text is
    ///     `Array(text.utf8)`; a Foundation `Data` is `Array(data)`.
    ///   - contentType: The media type to store, or `nil` for `application/octet-stream`.
    ///   - metadata: User metadata; see ``ObjectMetadata`` for the rules.
    /// - Returns: The stored object's information.
    /// - Throws: `storage.invalid_key`, `storage.invalid_argument` (content type),
    ///   `storage.invalid_metadata`, or a backend failure.
    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo

    /// Returns the object under `key`, information and data.
    ///
    /// - Throws: `storage.not_found` when no object is stored under `key`,
    ///   `storage.invalid_key`, or a backend failure.
    func get(_ key: String) async throws -> StoredObject

    /// Returns the information of the object under `key`, without its data.
    ///
    /// - Throws: `storage.not_found` when no object is stored under `key`,
    ///   `storage.invalid_key`, or a backend failure.
    func head(_ key: String) async throws -> ObjectInfo

    /// Removes the object under `key`; succeeds when there is none.
    ///
    /// - Throws: `storage.invalid_key`, or a backend failure.
    func delete(_ key: String) async throws

    /// Returns one page of the objects whose keys start with `prefix`, in UTF-8 byte order.
    ///
    /// - Parameters:
    ///   - prefix: Only keys starting with these bytes are listed; `""` lists all.
    ///   - limit: The most objects to return, 1 to 1000.
    ///   - continuationToken: `nil` for the first page, then the previous page's
    ///     ``ObjectListing/nextContinuationToken``.
    /// - Throws: `storage.invalid_argument` for a page size out of range, a prefix no key
    ///   can start with or a token this backend did not issue, or a backend failure.
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing

    /// Stores the bytes `body` yields under `key`, when `condition` holds, replacing any
    /// object there; the object is stored only once the body has ended, whole.
    ///
    /// Added in PlugboardAPI 1.2 with a default implementation (collect the body, up to
    /// ``ObjectBody/wholeObjectLimit``, and call the whole-object `put`; any condition but
    /// `.none` refused with `storage.unsupported`). Backends that can stream, or check a
    /// condition atomically, implement it.
    ///
    /// - Parameters:
    ///   - key: The object's key, 1 to 1024 bytes of UTF-8 without NUL.
    ///   - body: The object's content, read once; its ``ObjectBody/length`` must be the
    ///     number of bytes it yields, when given.
    ///   - contentType: The media type to store, or `nil` for `application/octet-stream`.
    ///   - metadata: User metadata; see ``ObjectMetadata`` for the rules.
    ///   - condition: When to store; `.none` always does.
    /// - Returns: The stored object's information.
    /// - Throws: `storage.invalid_key`, `storage.invalid_argument` (content type, a body
    ///   longer or shorter than its length, or larger than the backend takes),
    ///   `storage.invalid_metadata`, `storage.precondition_failed`, `storage.unsupported`,
    ///   what the body throws, or a backend failure.
    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo

    /// Returns the information of the object under `key` and a body of its bytes, all of
    /// them or those `range` selects.
    ///
    /// Added in PlugboardAPI 1.2 with a default implementation (the whole-object `get`,
    /// sliced). Backends that can read a part of an object, or stream it, implement it.
    ///
    /// - Parameters:
    ///   - key: The object's key.
    ///   - range: The bytes to read, or `nil` for the whole object.
    /// - Throws: `storage.not_found`, `storage.invalid_key`, `storage.invalid_argument` (a
    ///   malformed range), `storage.range_not_satisfiable`, or a backend failure.
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream

    /// Returns what ``get(_:range:)`` would, the bytes in hand, when the backend can answer
    /// without waiting; `nil` when it cannot, and the caller then calls ``get(_:range:)``.
    ///
    /// Added in PlugboardAPI 1.4 with a default implementation that returns `nil`, so a
    /// plugin built against an earlier API keeps loading and is read through
    /// ``get(_:range:)`` as before. A backend that holds objects in memory, or can read
    /// from a cache without blocking (FileStorage's cached files), implements it: the
    /// HTTP server then answers such a read on its event loop, without starting a task.
    ///
    /// - Parameters:
    ///   - key: The object's key.
    ///   - range: The bytes to read, or `nil` for the whole object.
    /// - Returns: The object's info and bytes, or `nil` when answering would wait.
    /// - Throws: What ``get(_:range:)`` would throw: `storage.not_found`,
    ///   `storage.invalid_key`, `storage.invalid_argument` (a malformed range),
    ///   `storage.range_not_satisfiable`, or a backend failure.
    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject?
}
