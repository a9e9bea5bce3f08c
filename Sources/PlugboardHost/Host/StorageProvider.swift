import PlugboardAPI

/// What a front end needs of a host to serve objects: the container whose generation
/// answers a request (through a lease), whether object requests may be served now, and
/// the bound `ObjectStorage` or why there is none.
///
/// The HTTP API's router depends on this rather than on ``PluginHost``, so that it runs
/// (and is tested) over any container; `PluginHost` is the provider `serve` uses, and the
/// CLI's storage commands ask it the same question, so both say the same thing when no
/// storage is bound.
public protocol StorageProvider: AnyObject, Sendable {
    /// The container requests lease a generation of.
    var container: Container { get }
    /// Why object requests are refused now (a `required` plugin is not active), or nil.
    var objectRequestsRefusal: PlugboardError? { get }
    /// The secrets no answer may show (a plugin's error may quote one it was given).
    var secrets: SecretScrubber { get }
    /// The bound storage as `resolver` (a request's lease, or the container itself)
    /// resolves it, or the error to answer: `host.no_storage` naming the plugins' states
    /// when nothing binds it, the factory's error when it is bound but could not be built.
    func boundStorage(_ resolver: some ServiceResolver) -> Result<any ObjectStorage, PlugboardError>
    /// Why the provider is not ready to serve objects (empty when it is): each reason a
    /// line for `/readyz`.
    var notReadyReasons: [String] { get }
}

extension StorageProvider {
    public var notReadyReasons: [String] {
        var reasons: [String] = []
        if let refusal = objectRequestsRefusal { reasons.append(refusal.message) }
        // Whether a storage is bound; nothing is used, so no lease is taken.
        if case .failure(let error) = boundStorage(container) { reasons.append(error.message) }
        return reasons
    }
}

extension PluginHost: StorageProvider {
    public var objectRequestsRefusal: PlugboardError? {
        // The flag first: it is one atomic load, and this runs for every object request.
        allRequiredActive ? nil : requiredFailure
    }

    public var notReadyReasons: [String] {
        var reasons = requiredFailures.map { r in
            "required plugin \"\(r.name)\" is \(r.worker?.status == .failed ? "failed in its worker process" : r.state.description)"
        }
        switch boundStorage(container) {
        case .failure(let error): reasons.append(error.message)
        case .success(let storage):
            // The bound storage is isolated and no worker of its plugin is ready: its
            // requests are answered 503 until one is.
            if let isolated = storage as? IsolatedStorage, isolated.plugin.status != .ready {
                reasons.append("the bound storage's plugin \"\(isolated.plugin.name)\" has no worker ready (\(isolated.plugin.status))")
            }
        }
        return reasons
    }

    public func boundStorage(_ resolver: some ServiceResolver) -> Result<any ObjectStorage, PlugboardError> {
        do throws(PlugboardError) {
            return .success(try resolver.resolve((any ObjectStorage).self, name: nil))
        } catch where error.code == .notRegistered {
            let states = records.map { "\($0.name) is \($0.state)" }.joined(separator: ", ")
            return .failure(PlugboardError(.noStorage, "no ObjectStorage is bound in the \(environment) environment",
                detail: states.isEmpty ? "The manifest \"\(manifest.path)\" loads no plugin." : "Plugins: \(states).",
                hint: "Enable a storage plugin (FileStorage, MemoryStorage, S3Storage, RESTStorage) for this environment in \(manifest.path); plugboard check shows why one failed."))
        } catch {
            // Bound, but its factory failed: say why, not that nothing is bound.
            return .failure(error)
        }
    }
}
