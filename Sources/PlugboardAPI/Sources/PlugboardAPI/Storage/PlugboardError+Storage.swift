extension PlugboardError {
    /// The `storage.not_found` error every backend raises for `get` or `head` of a key
    /// that holds no object, so that all of them say the same words.
    ///
    /// - Parameter key: The key that was asked for.
    public static func objectNotFound(key: String) -> PlugboardError {
        PlugboardError(
            .storageNotFound, "no object under key \(StorageText.quote(key))",
            detail: "The key has \(key.utf8.count) bytes; no object is stored under exactly these bytes.",
            hint: "Check the key, or list its prefix to see which keys exist.")
    }
}
