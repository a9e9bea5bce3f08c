#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes
import PlugboardHost
import PlugboardJSON

/// `plugboard storage put|get|head|delete|list`, through the `ObjectStorage` the manifest
/// binds (the highest-ranked provider).
enum StorageCommand {
    static func put(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let key = ctx.parsed.arguments[0]
        let source = ctx.parsed.arguments.count > 1 ? ctx.parsed.arguments[1] : "-"
        var metadata: [String: String] = [:]
        for entry in ctx.parsed.all("meta") {
            guard let eq = entry.firstIndex(of: "=") else {
                throw UsageError.make("invalid --meta \"\(entry)\"", detail: "Expected KEY=VALUE.",
                                      hint: "Write --meta author=ada.")
            }
            metadata[String(entry[..<eq])] = String(entry[entry.index(after: eq)...])
        }
        let data = try LocalFile.read(source)
        let info = try await withStorage(ctx) { storage in
            try await storage.put(key, data: data, contentType: ctx.parsed.value("content-type"), metadata: metadata)
        }
        if ctx.json { ctx.out(json(info)) } else { ctx.err("stored \"\(key)\": \(info.size) bytes, ETag \(info.etag)\n") }
        return 0
    }

    static func get(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let key = ctx.parsed.arguments[0]
        let object = try await withStorage(ctx) { storage in try await storage.get(key) }
        let target = ctx.parsed.value("output") ?? "-"
        if target == "-" {
            // With --json the content travels inside the object, in base64.
            if ctx.json {
                ctx.out(json(object.info, extra: [("data", .string(Base64.encode(object.data)))]))
            } else {
                Output.write(object.data, to: 1)
            }
        } else {
            try LocalFile.write(object.data, to: target)
            if ctx.json {
                ctx.out(json(object.info, extra: [("output", .string(target))]))
            } else {
                ctx.err("wrote \(object.data.count) bytes to \"\(target)\"\n")
            }
        }
        return 0
    }

    static func head(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let key = ctx.parsed.arguments[0]
        let info = try await withStorage(ctx) { storage in try await storage.head(key) }
        if ctx.json {
            ctx.out(json(info))
        } else {
            var lines = "size: \(info.size)\netag: \(info.etag)\ncontent-type: \(info.contentType)\nlast-modified: \(info.lastModified.httpDate)\n"
            for (k, v) in info.metadata.sorted(by: { $0.key < $1.key }) { lines += "meta-\(k): \(v)\n" }
            ctx.out(lines)
        }
        return 0
    }

    static func delete(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let key = ctx.parsed.arguments[0]
        // The API's delete succeeds for a missing key (as S3's does) and says nothing of it;
        // a head first tells the person which happened (another writer may act between).
        let existed = try await withStorage(ctx) { storage -> Bool in
            let existed: Bool
            do {
                _ = try await storage.head(key)
                existed = true
            } catch let error as PlugboardError where error.code == .storageNotFound {
                existed = false
            }
            try await storage.delete(key)
            return existed
        }
        if ctx.json {
            ctx.out(.object([("deleted", .string(key)), ("existed", .bool(existed))]))
        } else {
            ctx.err(existed ? "deleted \"\(key)\"\n" : "nothing stored under \"\(key)\"; nothing deleted\n")
        }
        return 0
    }

    static func list(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let prefix = ctx.parsed.arguments.first ?? ""
        let objects = try await withStorage(ctx) { storage in try await storage.list(prefix: prefix) }
        if ctx.json {
            ctx.out(.array(objects.map { json($0) }))
        } else {
            ctx.out(objects.map { $0.key + "\n" }.joined())
        }
        return 0
    }

    /// An object's information as `--json` prints it, with `extra` members at the end.
    static func json(_ info: ObjectInfo, extra: [(String, JSONOutput)] = []) -> JSONOutput {
        Reports.object(info, extra: extra)
    }

    /// Starts the host, resolves its storage, runs `body`, and shuts the host down.
    static func withStorage<R>(_ ctx: CommandContext,
                               _ body: (any ObjectStorage) async throws -> R) async throws(PlugboardError) -> R {
        let host = try await ctx.startHost()
        let result: Result<R, PlugboardError>
        do throws(PlugboardError) {
            result = .success(try await run(host, body))
        } catch {
            // The plugin's error may quote a secret of the manifest.
            result = .failure(host.secrets.scrub(error))
        }
        await host.shutdown()
        return try result.get()
    }

    private static func run<R>(_ host: PluginHost,
                               _ body: (any ObjectStorage) async throws -> R) async throws(PlugboardError) -> R {
        try PluginsCommand.requireRequiredPlugins(host)
        let storage = try host.boundStorage(host.container).get()
        do {
            return try await body(storage)
        } catch let error as PlugboardError {
            throw error
        } catch {
            throw PlugboardError(.storageFailed, "storage operation failed: \(error)")
        }
    }
}

/// Reading and writing the local files the storage commands name.
enum LocalFile {
    static func read(_ path: String) throws(PlugboardError) -> [UInt8] {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("could not open file \"\(path)\"") }
        defer { if fd != 0 { close(fd) } }
        do {
            return try DescriptorIO.readToEnd(fd)
        } catch {
            errno = error.code
            throw failure("could not read \(path == "-" ? "standard input" : "file \"\(path)\"")")
        }
    }

    static func write(_ bytes: [UInt8], to path: String) throws(PlugboardError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("could not create file \"\(path)\"") }
        defer { close(fd) }
        do {
            try DescriptorIO.writeAll(fd, bytes)
        } catch {
            errno = error.code
            throw failure("could not write file \"\(path)\"")
        }
    }

    private static func failure(_ message: String) -> PlugboardError {
        let reason = String(cString: strerror(errno))
        return PlugboardError(.localFile, "\(message): \(reason)", hint: "Check the path and its permissions.")
    }
}
