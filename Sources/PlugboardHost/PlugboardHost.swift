/// PlugboardHost: the host's machinery behind the `plugboard` executable: the manifest,
/// the plugin loader, the plugin registry.
public enum PlugboardHost {}
