/// A transaction: if every comparison holds, `success` runs, else `failure`; atomically,
/// at one revision (etcd's `Txn`).
///
/// ```swift
/// // Create the key only if it does not exist.
/// let txn = EtcdTxn(compare: [EtcdCompare(key, .createRevision, .equal, 0)],
///                   success: [.put(key, value, lease: nil)], failure: [.get(key)])
/// ```
public struct EtcdTxn: Sendable {
    /// The conditions, all of which must hold.
    public var compare: [EtcdCompare]
    /// What runs when they hold.
    public var success: [EtcdOperation]
    /// What runs when one does not.
    public var failure: [EtcdOperation]

    /// A transaction; an empty `compare` always succeeds.
    public init(compare: [EtcdCompare], success: [EtcdOperation], failure: [EtcdOperation] = []) {
        self.compare = compare
        self.success = success
        self.failure = failure
    }
}

/// One comparison of a transaction: the key's `target` against a value. A key that does
/// not exist has version, createRevision and modRevision 0 (so `.createRevision == 0`
/// means "absent").
public struct EtcdCompare: Sendable {
    /// What of the key is compared.
    public enum Target: Sendable {
        case version, createRevision, modRevision, value, lease
    }

    /// How it is compared.
    public enum Result: Sendable {
        case equal, notEqual, greater, less
    }

    /// The value compared against: a number for every target but `.value`.
    public enum Operand: Sendable {
        case number(Int64)
        case bytes([UInt8])
    }

    /// The key compared.
    public var key: String
    /// What of it is compared.
    public var target: Target
    /// How.
    public var result: Result
    /// With what: `key`'s `target` `result` `operand` (`version greater 3`).
    public var operand: Operand

    /// Compares a number (version, a revision, a lease id).
    public init(_ key: String, _ target: Target, _ result: Result, _ number: Int64) {
        self.key = key
        self.target = target
        self.result = result
        self.operand = .number(number)
    }

    /// Compares the key's value with `bytes`.
    public init(_ key: String, value result: Result, _ bytes: [UInt8]) {
        self.key = key
        self.target = .value
        self.result = result
        self.operand = .bytes(bytes)
    }
}

/// One operation of a transaction's branch.
public enum EtcdOperation: Sendable {
    /// Puts `value` at `key`, attached to `lease` when given.
    case put(String, [UInt8], lease: Int64?)
    /// Deletes `key`, or every key under it as a prefix.
    case delete(String, prefix: Bool)
    /// Reads `key`: its result is one entry of ``EtcdTxnResult/ranges``.
    case get(String)
}

/// What a transaction did.
public struct EtcdTxnResult: Sendable {
    /// Whether the comparisons held (and so `success` ran).
    public var succeeded: Bool
    /// The store's revision after the transaction.
    public var revision: Int64
    /// The keys each `.get` of the branch that ran found, in the order of the operations.
    public var ranges: [[EtcdKeyValue]]

    /// A result as etcd reports one.
    public init(succeeded: Bool, revision: Int64, ranges: [[EtcdKeyValue]]) {
        self.succeeded = succeeded
        self.revision = revision
        self.ranges = ranges
    }
}
