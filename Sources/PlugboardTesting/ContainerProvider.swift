import PlugboardAPI
import PlugboardHost

/// A ``StorageProvider`` as small as the protocol allows, for testing a front end (the
/// native router, the S3 router) without a plugin host: it answers with whatever storage
/// its container binds.
///
/// ```swift
/// let provider = ContainerProvider()
/// try await provider.container.transaction(owner: "test") { tx in
///     try tx.register((any ObjectStorage).self, instance: InMemoryObjectStorage())
/// }
/// ```
public final class ContainerProvider: StorageProvider {
    public let container = Container()
    public let secrets: SecretScrubber
    private let refusal: PlugboardError?

    /// - Parameters:
    ///   - refusal: what object requests are refused with (a `required` plugin that is not
    ///     active), or nil to serve them.
    ///   - secrets: the texts no answer may show.
    public init(refusal: PlugboardError? = nil, secrets: [String] = []) {
        self.refusal = refusal
        self.secrets = SecretScrubber(secrets: secrets)
    }

    public var objectRequestsRefusal: PlugboardError? { refusal }

    public func boundStorage(_ resolver: some ServiceResolver) -> Result<any ObjectStorage, PlugboardError> {
        do throws(PlugboardError) {
            return .success(try resolver.resolve((any ObjectStorage).self, name: nil))
        } catch {
            return .failure(error)
        }
    }
}
