import PlugboardAPI

// The codes of hot swap: a reload's refusals and the preflight child's verdicts. Each is
// listed, with what to do, in docs/ERRORS.md.
extension PlugboardError.Code {
    /// The preflight child died of a signal while running a plugin's code.
    public static let preflightCrashed: Self = "reload.preflight_crashed"
    /// The preflight child did not finish within `hotSwap.preflightTimeoutSeconds`.
    public static let preflightTimeout: Self = "reload.preflight_timeout"
    /// The preflight child exited before it reported on every plugin (a plugin called `exit`).
    public static let preflightExited: Self = "reload.preflight_exited"
    /// The preflight child could not be started, or its report could not be read.
    public static let preflightFailed: Self = "reload.preflight_failed"
    /// A reload would leave a `required` plugin not active.
    public static let requiredNotActive: Self = "reload.required_not_active"
    /// A reload was asked for while hot swap is off.
    public static let hotSwapOff: Self = "reload.hot_swap_off"
    /// `serve --watch` in production without `hotSwap.allowInProduction` (exit status 2).
    public static let watchRefused: Self = "reload.watch_refused"
    /// A plugin that passed its preflight failed to map or register in the host (its file
    /// changed between the two, say). A failed commit keeps its own `container.*` code.
    public static let loadFailed: Self = "reload.load_failed"
    /// The file watcher could not start.
    public static let watchFailed: Self = "reload.watch_failed"
}
