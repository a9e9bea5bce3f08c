/// When a streaming `put` may store its object: HTTP's conditional requests
/// (`If-None-Match: *`, `If-Match`), the compare-and-swap of object stores.
///
/// A condition is checked and the object stored in one atomic step: of two writers
/// racing under ``absent``, exactly one wins, and a ``matches(etag:)`` write never
/// replaces an object that another writer replaced after the ETag was read. That is the
/// whole point (a head followed by a put would let both racers win), so a backend that
/// cannot do it atomically refuses the condition with `storage.unsupported` rather than
/// approximate it. A condition that does not hold fails the put with
/// `storage.precondition_failed` (HTTP 412) and stores nothing.
///
/// Not frozen: later versions may add conditions (`If-Unmodified-Since`). A backend
/// switches with `@unknown default` and refuses a condition it does not know with
/// `storage.unsupported`, which is what a plugin built against this version then does.
public enum WriteCondition: Sendable, Hashable {
    /// Store unconditionally, replacing any object under the key.
    case none
    /// Store only when no object is under the key (`If-None-Match: *`): a create that
    /// never overwrites, such as taking a lock or claiming a name.
    case absent
    /// Store only when an object is under the key and its ETag is `etag` (`If-Match`):
    /// replace exactly the version that was read. `etag` is the 32-character lowercase hex
    /// MD5 as ``ObjectInfo/etag`` gives it, without the quotes HTTP puts around it; a
    /// missing object does not match.
    case matches(etag: String)
}
