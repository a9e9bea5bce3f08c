/// One change of a container, delivered in order by ``Container/events()``.
public struct ContainerEvent: Sendable, Hashable {
    /// What happened.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let description: String
        /// A registration was published.
        public static let registered = Kind(description: "registered")
        /// A registration was published in place of the same owner's earlier one.
        public static let replaced = Kind(description: "replaced")
        /// A registration is about to go away; sent before the generation without it is
        /// published.
        public static let unregistering = Kind(description: "unregistering")
        /// A managed service was stopped after it drained (or at shutdown).
        public static let stopped = Kind(description: "stopped")
    }

    public let kind: Kind
    public let registration: RegistrationInfo
    /// The generation the change belongs to.
    public let generation: UInt64
}
