import PlugboardAPI
import PlugboardConcurrency
import PlugboardHost
import PlugboardJSON

/// `plugboard publish FILE s3://bucket/prefix/`: checks a built plugin as the loader
/// would, puts it in the store content-addressed (`prefix/<name>/<sha256>.so`) unless it is
/// there already, and prints the manifest entry that loads it. Exit 0 published (or
/// already there), 1 refused by the loader's checks or the store, 2 usage.
enum PublishCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let file = ctx.parsed.arguments[0]
        let destination = ctx.parsed.arguments[1]
        let (bucket, prefix) = try parse(destination)
        let name = ctx.parsed.value("name") ?? PluginNames.fromFile(file)
        guard !name.isEmpty, !name.contains("/"), !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw UsageError.make("invalid plugin name \"\(name.prefix(100))\"",
                                  detail: "Expected the plugin's name as the manifest will list it, without \"/\" or control characters.",
                                  hint: "Pass --name NAME, such as --name FileStorage.")
        }
        let store = PluginStore(environment: ctx.processEnvironment)
        // Reading, hashing and the store's requests block: off the cooperative pool.
        let published = try await BlockingWork.run { () throws(PlugboardError) -> PluginStore.Published in
            try store.publish(file: file, bucket: bucket, prefix: prefix, name: name)
        }
        let entry: JSONOutput = .object([("name", .string(published.name)), ("source", .string(published.source)),
                                         ("sha256", .string(published.sha256))])
        if ctx.json {
            ctx.out(.object([("entry", entry), ("uploaded", .bool(published.uploaded)), ("size", .int(Int64(published.size)))]))
        } else {
            ctx.out("\(published.uploaded ? "uploaded" : "already in the store:") \(published.source) (\(published.size) bytes)\n")
            ctx.out(entry.render(pretty: false) + "\n")
        }
        return 0
    }

    /// `s3://bucket/prefix/` as its bucket and its prefix (empty, or ending in `/`).
    private static func parse(_ text: String) throws(PlugboardError) -> (bucket: String, prefix: String) {
        guard text.hasPrefix("s3://") else {
            throw UsageError.make("invalid destination \"\(text.prefix(200))\"",
                                  detail: "Expected s3://bucket/prefix/, where the plugin goes as prefix/<name>/<sha256>.so.",
                                  hint: "Write, for example, s3://plugins/builds/.")
        }
        let rest = text.dropFirst("s3://".count)
        let bucket = String(rest.prefix { $0 != "/" })
        var prefix = String(rest.dropFirst(bucket.count + 1))
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        guard !bucket.isEmpty else {
            throw UsageError.make("invalid destination \"\(text.prefix(200))\": no bucket",
                                  detail: "Expected s3://bucket/prefix/.", hint: "Write, for example, s3://plugins/builds/.")
        }
        return (bucket, prefix)
    }
}
