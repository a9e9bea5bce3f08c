import PlugboardAPI
import PlugboardSigV4

/// What `libS3Storage.so`'s entry point registers, kept in the client target so that the
/// plugin target is the entry point alone and tests link the client without a second
/// copy of the entry point.
public enum S3StorageRegistration {
    /// Reads the config (credentials as AWS SDKs find them) and registers the managed
    /// S3Storage singleton: its `start` asks S3 for the bucket, so a missing bucket or
    /// refused keys fail the load before anything is published.
    public static func register(into registrar: PluginRegistrar) throws {
        let configuration = try S3Configuration(registrar.config, environment: AWSEnvironment(registrar.processEnvironment))
        let logger = registrar.logger
        logger.info("S3 storage configured", metadata: [
            "bucket": .string(configuration.bucket), "region": .string(configuration.region),
            "endpoint": .string(configuration.endpoint.description),
            "addressing": .string(configuration.pathStyle ? "path-style" : "virtual-hosted"),
            "credentials": .string(configuration.credentials.source)])
        try registrar.register((any ObjectStorage).self, managed: true, implementation: S3Storage.self) { _ in
            S3Storage(configuration: configuration, logger: logger)
        }
    }
}
