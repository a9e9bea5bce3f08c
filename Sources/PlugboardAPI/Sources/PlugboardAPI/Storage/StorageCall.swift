/// What a call to an ``ObjectStorage`` is for, as the front end that makes it says: a
/// user's object, or the front end's own bookkeeping (PlugboardAPI 1.8).
///
/// The S3 front end keeps its buckets, its multipart uploads in progress and a few
/// records of its own in the storage it serves, under ``frontEndPrefix``
/// (docs/S3_API.md), so that they live in the backend and swap with it. Those calls go
/// through every layer, as the user's do, so that a layer that moves, copies, encrypts
/// or mirrors objects does the same to them; each is marked, so that a layer that judges
/// or counts the user's objects (a content-type policy, a quota) can tell them apart and
/// pass them through untouched. A layer reads ``current`` when a call begins:
///
/// ```swift
/// func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
///          condition: WriteCondition) async throws -> ObjectInfo {
///     let call = StorageCall.current
///     if call.purpose == .object || call.purpose == .upload {
///         try policy.check(contentType)  // .upload: the type the completed object will have
///     }
///     return try await inner.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
/// }
/// ```
///
/// It is a task-local value: the front end binds it around the call, with
/// ``with(_:_:)``, and it is ``object`` everywhere else (the native API, the CLI, an
/// application's own calls). A plugin built against an earlier API never reads it and
/// sees every call as before. A layer passes it on as it is: the storage below sees the
/// same value, whatever the layers between.
public struct StorageCall: Sendable, Hashable, CustomStringConvertible {
    /// Why the front end makes the call.
    ///
    /// Not an enum, so that later versions may add purposes: a layer that does not know
    /// one treats it as a front end's record (``StorageCall/isFrontEnds``).
    public struct Purpose: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A user's object: what a client puts, reads, lists or deletes, the object a
        /// CompleteMultipartUpload stores included. Every call nobody marked.
        public static let object = Purpose("object")
        /// The front end's own record: a bucket's marker, a deletion's claim or fence, a
        /// completion's claim, a multipart object's manifest, a checksum record. Small,
        /// under ``StorageCall/frontEndPrefix``, written as `application/octet-stream` or
        /// `text/plain`. Pass it through untouched: neither judge nor count it.
        public static let record = Purpose("record")
        /// The record of a multipart upload, written by CreateMultipartUpload before any
        /// part is sent, with the content type and user metadata the completed object
        /// will have; ``StorageCall/object`` names that object's key. A layer that judges
        /// objects judges this one as the object it announces, so that a refusal comes at
        /// CreateMultipartUpload, not after the last part. Its bytes are the front end's
        /// (a few hundred): do not count them. Reads and deletes of it are ``record``s.
        public static let upload = Purpose("upload")
        /// A part of a multipart upload: the client's bytes, kept under
        /// ``StorageCall/frontEndPrefix`` until CompleteMultipartUpload copies them into
        /// the object and deletes them, or AbortMultipartUpload deletes them;
        /// ``StorageCall/object`` names the key they are for and ``StorageCall/upload``
        /// the upload. A quota counts them (they take room); a policy on content types has
        /// judged the upload already (they are stored as `application/octet-stream`).
        public static let part = Purpose("part")

        public var description: String { name }
    }

    /// Why the call is made.
    public var purpose: Purpose
    /// The storage key of the user's object the call serves: the object an ``Purpose/upload``
    /// announces or a ``Purpose/part`` is for; nil otherwise.
    public var object: String?
    /// The multipart upload the call belongs to (its ID): on its ``Purpose/upload``, its
    /// ``Purpose/part``s, and on the ``Purpose/object`` put that completes it, which
    /// stores what the parts hold while they are still there (they are deleted right
    /// after): a quota that counted the parts allows for them. Nil otherwise.
    public var upload: String?

    public init(purpose: Purpose, object: String? = nil, upload: String? = nil) {
        self.purpose = purpose
        self.object = object
        self.upload = upload
    }

    /// A user's object: what every call nobody marked is.
    public static let object = StorageCall(purpose: .object)
    /// The front end's own record.
    public static let record = StorageCall(purpose: .record)

    /// The call being made on this task: ``object`` unless a front end said otherwise.
    @TaskLocal public static var current: StorageCall = .object

    /// Runs `operation` with ``current`` set to `call`: the front end's side.
    public static func with<T>(_ call: StorageCall, isolation: isolated (any Actor)? = #isolation,
                               _ operation: () async throws -> T) async rethrows -> T {
        try await $current.withValue(call, operation: operation)
    }

    /// Runs `operation`, which does not wait (``ObjectStorage/getWithoutWaiting(_:range:)``),
    /// with ``current`` set to `call`.
    public static func withoutWaiting<T>(_ call: StorageCall, _ operation: () throws -> T) rethrows -> T {
        try $current.withValue(call, operation: operation)
    }

    /// Whether the call is the front end's and not a user's object: anything but
    /// ``Purpose/object``, purposes added later included.
    public var isFrontEnds: Bool { purpose != .object }

    /// Where the S3 front end keeps what is its own in the storage it serves. A layer that
    /// reads the storage without a call to tell it (QuotaStorage counting what is there
    /// at start) finds the records and the parts of uploads in progress under it.
    public static let frontEndPrefix = "_plugboard-s3/"

    public var description: String {
        var out = purpose.description
        if let object { out += " for \(PlugboardError.quoted(object))" }
        if let upload { out += " of upload \(upload)" }
        return out
    }
}
