/// What an ``EtcdWatch`` delivers.
public enum EtcdWatchEvent: Sendable {
    /// The changes of one or more revisions, in order; `revision` is the last one's.
    case changes([EtcdChange], revision: Int64)
    /// The revision to resume from was compacted away, so the changes in between are
    /// lost: these are the watched keys as they are now, at `revision`. Replace what was
    /// known with them; the watch goes on from `revision + 1`.
    case resynced([EtcdKeyValue], revision: Int64)
}

/// One change of a watched key.
public enum EtcdChange: Sendable, Equatable {
    /// The key was put: its new value and revisions.
    case put(EtcdKeyValue)
    /// The key was deleted (or its lease expired) at `modRevision`.
    case delete(key: String, modRevision: Int64)

    /// The key that changed.
    public var key: String {
        switch self {
        case .put(let kv): kv.key
        case .delete(let key, _): key
        }
    }

    /// The revision of the change.
    public var modRevision: Int64 {
        switch self {
        case .put(let kv): kv.modRevision
        case .delete(_, let revision): revision
        }
    }
}
