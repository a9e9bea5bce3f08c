/// The manifest's `hotSwap` object: whether and how the host replaces plugins while it
/// runs. Read and validated with the manifest; the hot-swap component acts on it.
///
/// Every field has a default, so an absent `hotSwap` (or `{}`) means hot swap is off.
public struct HotSwapSettings: Sendable, Hashable {
    /// Watch the manifest and the plugin files, and swap changed plugins. Default false.
    public var enabled: Bool
    /// Allow hot swap when the environment is `production`. Default false.
    public var allowInProduction: Bool
    /// How long changes must settle before a swap starts, in milliseconds; an integer
    /// from 0 to 3,600,000. Default 500.
    public var debounceMilliseconds: Int
    /// How long the preflight probe of a new plugin may take, in seconds; more than 0,
    /// at most 86,400. Default 10.
    public var preflightTimeoutSeconds: Double
    /// How long an old generation may take to drain before it is stopped, in seconds;
    /// from 0 (stop at once) to 86,400. Default 30.
    public var drainTimeoutSeconds: Double
    /// How many retired plugin images (copies in the content-addressed cache) to keep;
    /// an integer from 0 to 1024. Default 8.
    public var maxRetainedImages: Int

    /// Creates settings; the defaults are those of an absent `hotSwap`.
    public init(enabled: Bool = false, allowInProduction: Bool = false, debounceMilliseconds: Int = 500,
                preflightTimeoutSeconds: Double = 10, drainTimeoutSeconds: Double = 30,
                maxRetainedImages: Int = 8) {
        self.enabled = enabled
        self.allowInProduction = allowInProduction
        self.debounceMilliseconds = debounceMilliseconds
        self.preflightTimeoutSeconds = preflightTimeoutSeconds
        self.drainTimeoutSeconds = drainTimeoutSeconds
        self.maxRetainedImages = maxRetainedImages
    }

    /// The keys of the `hotSwap` object.
    static let keys = ["enabled", "allowInProduction", "debounceMilliseconds", "preflightTimeoutSeconds",
                       "drainTimeoutSeconds", "maxRetainedImages"]
}
