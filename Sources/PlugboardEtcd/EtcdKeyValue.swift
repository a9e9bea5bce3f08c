/// One key as etcd stores it, with the revisions that say when it was made and last changed.
public struct EtcdKeyValue: Sendable, Equatable {
    /// The key, UTF-8 (etcd's keys are bytes; the fleet's are text).
    public var key: String
    /// The value's bytes, as put.
    public var value: [UInt8]
    /// The revision of the put that created the key (since it last did not exist).
    public var createRevision: Int64
    /// The revision of the key's last change.
    public var modRevision: Int64
    /// How many times the key was put since it was created (1 after the first put).
    public var version: Int64
    /// The lease the key is attached to; 0 for none.
    public var lease: Int64

    /// A key-value as etcd reports one.
    public init(key: String, value: [UInt8], createRevision: Int64, modRevision: Int64, version: Int64, lease: Int64) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.version = version
        self.lease = lease
    }
}
