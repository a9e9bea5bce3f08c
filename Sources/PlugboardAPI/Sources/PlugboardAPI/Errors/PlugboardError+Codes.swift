// The codes raised by PlugboardAPI itself. Each is listed, with its meaning and what to do,
// in docs/ERRORS.md; keep the two in step.

extension PlugboardError.Code {
    // MARK: container
    /// No registration for the requested service (and name).
    public static let notRegistered: Self = "container.not_registered"
    /// The same owner registered the same service and name twice without `replace`.
    public static let duplicateRegistration: Self = "container.duplicate_registration"
    /// Resolving a service needs itself, directly or through others.
    public static let circularDependency: Self = "container.circular_dependency"
    /// A factory threw while building a service.
    public static let factoryFailed: Self = "container.factory_failed"
    /// A value is not of the type it was expected to be.
    public static let typeMismatch: Self = "container.type_mismatch"
    /// A managed service failed to start; its transaction was rolled back.
    public static let startFailed: Self = "container.start_failed"
    /// A new service's ``HealthChecking/healthCheck()`` threw; its change was rolled back.
    public static let healthCheckFailed: Self = "container.health_check_failed"
    /// A transaction conflicted with a change committed while it was starting its services.
    public static let transactionConflict: Self = "container.transaction_conflict"
    /// A registration's arguments are invalid (an empty name, weak scope on a value type).
    public static let invalidRegistration: Self = "container.invalid_registration"
    /// The container has been shut down and takes no more changes.
    public static let shutDown: Self = "container.shut_down"
    /// Resolution went deeper than the container allows.
    public static let resolutionTooDeep: Self = "container.resolution_too_deep"
    /// A layer was registered by an owner whose manifest entry wraps no plugin (1.6).
    public static let layerUndeclared: Self = "container.layer_undeclared"
    /// A layer wraps an owner that has no provider of the layer's service (1.6).
    public static let layerTargetMissing: Self = "container.layer_target_missing"
    /// Two layers wrap the same provider of one service (1.6).
    public static let layerSlotTaken: Self = "container.layer_slot_taken"
    /// A layer wraps a provider that another provider of the same service outranks, so
    /// that no resolve would reach the layer (1.6).
    public static let layerOutranked: Self = "container.layer_outranked"
    /// A factory resolved another plugin's provider by owner, and its plugin's manifest
    /// entry does not require that plugin (1.6).
    public static let ownerNotRequired: Self = "container.owner_not_required"

    // MARK: plugin
    /// The plugin was built against another ABI version.
    public static let abiMismatch: Self = "plugin.abi_mismatch"
    /// The plugin was built against an incompatible PlugboardAPI version.
    public static let apiVersionMismatch: Self = "plugin.api_version_mismatch"
    /// The plugin carries its own copy of PlugboardAPI.
    public static let duplicateAPIModule: Self = "plugin.duplicate_api_module"
    /// The plugin's registration reported a failure.
    public static let registrationFailed: Self = "plugin.registration_failed"
    /// The plugin's configuration is missing a key or has a value of the wrong type.
    public static let configInvalid: Self = "plugin.config_invalid"
    /// The plugin's entry point broke the calling protocol.
    public static let protocolViolation: Self = "plugin.protocol_violation"
    /// A plugin's mapping of its own error code to an answer breaks the rules: a
    /// reserved area, a status a plugin may not claim, a malformed S3 code (PlugboardAPI 1.6).
    public static let errorMappingInvalid: Self = "plugin.error_mapping_invalid"

    // MARK: storage
    /// No object under the key.
    public static let storageNotFound: Self = "storage.not_found"
    /// The backend refused access.
    public static let storageAccessDenied: Self = "storage.access_denied"
    /// The key is empty, too long, contains NUL or is not UTF-8.
    public static let storageInvalidKey: Self = "storage.invalid_key"
    /// A metadata key or value breaks the rules, or the metadata is too large.
    public static let storageInvalidMetadata: Self = "storage.invalid_metadata"
    /// A listing argument (page size, continuation token) is invalid.
    public static let storageInvalidArgument: Self = "storage.invalid_argument"
    /// The backend is unavailable for now; the operation may be retried.
    public static let storageUnavailable: Self = "storage.unavailable"
    /// Any other backend failure.
    public static let storageFailed: Self = "storage.failed"
    /// A conditional `put`'s ``WriteCondition`` did not hold; nothing was stored (HTTP 412).
    public static let storagePreconditionFailed: Self = "storage.precondition_failed"
    /// A ranged `get` asked for bytes the object does not have (HTTP 416).
    public static let storageRangeNotSatisfiable: Self = "storage.range_not_satisfiable"
    /// The backend cannot do what was asked, such as an atomic conditional write (HTTP 501).
    public static let storageUnsupported: Self = "storage.unsupported"
}
