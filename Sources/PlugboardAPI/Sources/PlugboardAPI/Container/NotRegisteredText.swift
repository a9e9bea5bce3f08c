import Synchronization

/// The texts of `container.not_registered`, described when first read.
///
/// A miss is cheap to raise and expensive to explain (the closest registered services),
/// and a caller that probes for an optional service never reads it. This one object holds
/// what the description needs, so a miss costs at most one allocation and no string work,
/// where a describing closure would need its context, ``DescribedText`` and its lock.
///
/// A miss on a container's own lookup (no overlay involved) describes the generation it
/// was raised on, which its snapshot fixes: the texts are the same whenever they are
/// read, so this thread's next miss of the same key on that generation shares them
/// (``ThreadState/Slot/lastMiss``). Other misses describe the container's registrations
/// when first read, with its parents'.
///
/// Two threads reading a fresh error at once may both describe it; the first description
/// stored is the one every reader gets, so its texts never change once read.
final class NotRegisteredText: ErrorText {
    /// What the registered services are read from.
    enum Source: Sendable {
        /// One generation of a container that has no parent.
        case snapshot(Snapshot)
        /// A container and its parents, as they are when the texts are first read.
        case container(Container)
    }

    private final class Box: Sendable {
        let rendered: PlugboardError.Rendered
        init(_ rendered: PlugboardError.Rendered) { self.rendered = rendered }
    }

    private let source: Source
    private let requested: ServiceType
    private let name: String?
    private let cache = AtomicLazyReference<Box>()

    init(_ source: Source, requested: ServiceType, name: String?) {
        self.source = source
        self.requested = requested
        self.name = name
    }

    /// Whether these are the texts of a miss of `type` under `name`.
    func describes(_ type: ObjectIdentifier, name: String?) -> Bool {
        ObjectIdentifier(requested.type) == type && self.name == name
    }

    var rendered: PlugboardError.Rendered {
        if let box = cache.load() { return box.rendered }
        let registered = switch source {
        case .snapshot(let snapshot): Container.registeredKeys(of: snapshot)
        case .container(let container): container.registeredKeys()
        }
        let described = Container.describeMiss(requested: requested, name: name, registered: registered)
        return cache.storeIfNil(Box(described)).rendered
    }
}
