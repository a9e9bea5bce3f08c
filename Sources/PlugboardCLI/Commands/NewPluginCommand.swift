#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes
import PlugboardHost
import PlugboardJSON

/// `plugboard new-plugin NAME --dir PATH [--layer]`: writes a SwiftPM package that builds a
/// plugin, a storage or a layer over another plugin's.
enum NewPluginCommand {
    /// The services a scaffold can start from.
    static let services = ["ObjectStorage"]

    /// Module names the package graph already has (the checkout's targets) or the
    /// toolchain provides; a plugin of that name would clash.
    static let reservedNames: Set<String> = [
        "Plugboard", "PlugboardAPI", "CPlugboardThreadLocal", "PlugboardCrypto", "PlugboardConcurrency",
        "PlugboardTesting", "PlugboardHost", "PlugboardCLI", "MemoryStorage", "FileStorage", "BenchFloor",
        "PlugboardHTTP", "PlugboardServer", "PlugboardS3Server", "PlugboardHTTPClient", "PlugboardHTTPCodec", "InMemoryStorage", "S3Storage", "S3StorageClient",
        "RESTStorage", "RESTStorageClient", "MisbehavingPlugin", "CodedErrorPlugin", "ContentTypePolicyPlugin", "CPlugboardSystem", "CPlugboardNetwork",
        "CPlugboardFileSystem", "PlugboardBytes", "PlugboardTestSupport", "PlugboardSigV4", "PlugboardURLSession",
        "PlugboardEtcd", "PlugboardFleet", "QuotaStorage", "MirrorStorage", "MirrorStorageCore", "PlugboardIPC", "CPlugboardIPC",
        "CPlugboardSandbox", "CSandboxProbe", "PlugboardJSON",
        "Swift", "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Glibc", "XCTest",
        "Testing", "Synchronization", "Observation", "PackageDescription",
    ]

    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let name = ctx.parsed.arguments[0]
        try validate(name: name)
        if let service = ctx.parsed.value("service"), !services.contains(service) {
            throw UsageError.make("unknown service \"\(service)\" for --service",
                                  detail: "A scaffold can start from: \(services.joined(separator: ", ")).",
                                  hint: UsageError.suggestion(for: service, among: services).map { "Did you mean \"\($0)\"?" })
        }
        let (sdk, directory) = try prepare(ctx, name: name, command: "new-plugin")
        var scaffold = PluginScaffold(name: name, sdk: sdk, directory: directory, header: .expected)
        scaffold.layer = ctx.parsed.flag("layer")
        try write(scaffold.files, in: directory, sdk: sdk, ctx,
                  created: "\(scaffold.layer ? "layer plugin" : "plugin") package \(name)", buildIn: directory, entries: "entry")
        return 0
    }

    /// Writes the files and reports them as `new-plugin` and `new-contract` do: with
    /// `--json` the folder, the checkout and the files; else the files and what to run
    /// next, in `buildIn`.
    static func write(_ files: [(path: String, text: String)], in directory: String, sdk: String, _ ctx: CommandContext,
                      created: String, buildIn: String, entries: String) throws(PlugboardError) {
        var written: [String] = []
        for file in files {
            try write(file.text, to: file.path, in: directory)
            written.append(file.path)
        }
        if ctx.json {
            ctx.out(.object([("directory", .string(directory)), ("sdk", .string(sdk)),
                             ("files", .array(written.map { .string($0) }))]))
            return
        }
        var text = "Created \(created) in \(directory):\n"
        for file in written { text += "  \(file)\n" }
        text += "\nNext:\n  cd \(buildIn)\n  swift build -c release\n  swift test\n"
        text += "Then add plugins.snippet.json's \(entries) to plugins.json and run plugboard check.\n"
        ctx.out(text)
    }

    /// The checkout to build against and the new, empty folder for the package: `--dir`
    /// or, without it, a folder named as the package in the working folder (as swift
    /// package init and cargo new do), never inside the checkout.
    static func prepare(_ ctx: CommandContext, name: String, command: String) throws(PlugboardError) -> (sdk: String, directory: String) {
        let dirArgument = ctx.parsed.value("dir") ?? name
        guard !dirArgument.isEmpty else {
            throw UsageError.make("empty --dir", hint: "Give the folder to create: plugboard \(command) \(name) --dir PATH, or leave --dir out for ./\(name).")
        }
        let sdk = try findSDK(given: ctx.parsed.value("sdk"))
        let target = absolute(dirArgument)
        let resolved = realPath(target) ?? target
        if resolved == sdk || resolved.hasPrefix(sdk.hasSuffix("/") ? sdk : sdk + "/") {
            throw UsageError.make("folder \(PlugboardError.quoted(resolved, maxCharacters: 4096)) is inside the Plugboard checkout \(PlugboardError.quoted(sdk, maxCharacters: 4096))",
                                  detail: "A plugin's package lives outside the checkout it builds against.",
                                  hint: "Give --dir a folder outside \(sdk).")
        }
        return (sdk, try prepareDirectory(target, command: command))
    }

    /// A Swift identifier that starts with a capital letter, of ASCII letters and digits.
    static func validate(name: String, kind: String = "plugin") throws(PlugboardError) {
        let bytes = Array(name.utf8)
        let isValid = !bytes.isEmpty && bytes.count <= 64 && (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(bytes[0])
            && bytes.allSatisfy { b in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
            }
        guard isValid else {
            throw UsageError.make("invalid \(kind) name \(PlugboardError.quoted(name))",
                                  detail: "A \(kind) name is also a Swift module and library name: an uppercase letter, then letters and digits (at most 64).",
                                  hint: "Use a name like AcmeStorage.")
        }
        guard !reservedNames.contains(name) else {
            throw UsageError.make("\(kind) name \"\(name)\" is taken",
                                  detail: "\(name) is already a module of Plugboard or of the Swift toolchain.",
                                  hint: "Choose another name, for example Acme\(name).")
        }
    }

    // MARK: - The checkout

    /// `--sdk PATH`, or the first folder above the running executable holding both
    /// `Package.swift` and `Sources/PlugboardAPI/Package.swift`.
    static func findSDK(given: String?) throws(PlugboardError) -> String {
        if let given {
            let path = realPath(absolute(given)) ?? absolute(given)
            guard isCheckout(path) else {
                throw PlugboardError(.sdkNotFound, "no Plugboard checkout at \(PlugboardError.quoted(path, maxCharacters: 4096))",
                                     detail: "--sdk must name a folder with Package.swift and Sources/PlugboardAPI/Package.swift.",
                                     hint: "Pass --sdk PATH with the folder of the Plugboard checkout the host was built from.")
            }
            return path
        }
        let executable = realPath("/proc/self/exe") ?? "/proc/self/exe"
        var folder = parent(executable)
        var looked: [String] = []
        while true {
            looked.append(folder)
            if isCheckout(folder) { return folder }
            if folder == "/" { break }
            folder = parent(folder)
        }
        throw PlugboardError(.sdkNotFound, "could not find the Plugboard checkout this plugboard was built from",
                             detail: "Looked for Package.swift and Sources/PlugboardAPI/Package.swift in every folder above \(executable): \(looked.joined(separator: ", ")).",
                             hint: "Pass --sdk PATH with the folder of the Plugboard checkout.")
    }

    static func isCheckout(_ folder: String) -> Bool {
        let base = folder == "/" ? "" : folder
        return access("\(base)/Package.swift", F_OK) == 0 && access("\(base)/Sources/PlugboardAPI/Package.swift", F_OK) == 0
    }

    // MARK: - Files

    /// Creates the folder (and its parents) or accepts an empty one; returns its real path.
    static func prepareDirectory(_ path: String, command: String) throws(PlugboardError) -> String {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw UsageError.make("\(PlugboardError.quoted(path, maxCharacters: 4096)) exists and is not a folder",
                                      hint: "Give --dir a new or empty folder.")
            }
            guard isEmptyFolder(path) else {
                throw UsageError.make("folder \(PlugboardError.quoted(path, maxCharacters: 4096)) is not empty",
                                      detail: "\(command) never overwrites files.",
                                      hint: "Give --dir a new or empty folder.")
            }
        } else {
            try makeFolders(path)
        }
        return realPath(path) ?? path
    }

    static func isEmptyFolder(_ path: String) -> Bool {
        guard let dir = opendir(path) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { return false }
        }
        return true
    }

    /// `mkdir -p`.
    static func makeFolders(_ path: String) throws(PlugboardError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/\(component)"
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw PlugboardError(.scaffoldWriteFailed, "could not create folder \(PlugboardError.quoted(current, maxCharacters: 4096)): \(String(cString: strerror(errno)))",
                                     hint: "Check the permissions of its parent folder, or choose another --dir.")
            }
        }
    }

    static func write(_ text: String, to relative: String, in directory: String) throws(PlugboardError) {
        let target = "\(directory)/\(relative)"
        try makeFolders(parent(target))
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw PlugboardError(.scaffoldWriteFailed, "could not create \(PlugboardError.quoted(target, maxCharacters: 4096)): \(String(cString: strerror(errno)))",
                                 hint: "Check the folder's permissions, or choose another --dir.")
        }
        defer { close(fd) }
        do {
            try DescriptorIO.writeAll(fd, Array(text.utf8))
        } catch {
            throw PlugboardError(.scaffoldWriteFailed, "could not write \(PlugboardError.quoted(target, maxCharacters: 4096)): \(String(cString: strerror(error.code)))")
        }
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        guard let cwd = getcwd(nil, 0) else { return path }
        defer { free(cwd) }
        let base = String(cString: cwd)
        return path == "." ? base : "\(base == "/" ? "" : base)/\(path)"
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
