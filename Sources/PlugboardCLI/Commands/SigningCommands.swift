#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
import PlugboardHost
import PlugboardJSON

/// `plugboard keygen` and `plugboard sign`: an Ed25519 key pair in OpenSSL's PEM files,
/// and a plugin file's signature for its manifest entry (docs/SECURITY.md, "Plugin
/// signatures").
enum SigningCommands {
    /// `plugboard keygen --out PATH [--name NAME]`: PATH (the private key, 0600) and
    /// PATH.pub; never overwrites either.
    static func keygen(_ ctx: CommandContext) throws(PlugboardError) -> Int32 {
        guard let out = ctx.parsed.value("out"), !out.isEmpty else {
            throw UsageError.make("missing --out PATH", detail: "keygen writes the private key to PATH and the public key to PATH.pub.",
                                  hint: "Run plugboard keygen --out release-2026.key.")
        }
        let fileName = out.split(separator: "/").last.map(String.init) ?? out
        let name = ctx.parsed.value("name") ?? fileName.split(separator: ".").first.map(String.init) ?? fileName
        try checkKeyName(name)
        let key: Ed25519PrivateKey
        do {
            key = try Ed25519PrivateKey.generate()
        } catch {
            throw PlugboardError(.keyInvalid, "could not generate a key: \(error.message)", detail: error.detail, hint: error.hint)
        }
        let publicPath = out + ".pub"
        // Both names are claimed before either is written, so a refusal leaves nothing half done.
        for path in [out, publicPath] where access(path, F_OK) == 0 {
            throw PlugboardError(.keyExists, "key file \"\(path)\" already exists",
                detail: "keygen never overwrites a key: a plugin signed with the old one would no longer verify.",
                hint: "Choose another --out, or remove the old files if no manifest trusts that key any more.")
        }
        try KeyFile.create(out, Array(key.pemRepresentation.utf8), mode: 0o600)
        do {
            try KeyFile.create(publicPath, Array(key.publicKey.pemRepresentation.utf8), mode: 0o644)
        } catch {
            unlink(out)
            throw error
        }
        let raw = Base64.encode(key.publicKey.rawRepresentation)
        let entry: JSONOutput = .object([("name", .string(name)), ("ed25519", .string(raw))])
        if ctx.json {
            ctx.out(.object([("keyId", .string(key.publicKey.keyID)), ("privateKey", .string(out)), ("publicKey", .string(publicPath)),
                             ("trustKey", entry)]))
        } else {
            ctx.out("""
                key id:      \(key.publicKey.keyID)
                private key: \(out) (mode 0600: keep it secret)
                public key:  \(publicPath)
                Add to the manifest's "trust" "keys":
                  {"name": "\(name)", "ed25519": "\(raw)"}

                """)
        }
        return 0
    }

    /// `plugboard sign FILE --key KEY [--name NAME]`: the signature of FILE as plugin NAME.
    static func sign(_ ctx: CommandContext) throws(PlugboardError) -> Int32 {
        let file = ctx.parsed.arguments[0]
        guard let keyPath = ctx.parsed.value("key"), !keyPath.isEmpty else {
            throw UsageError.make("missing --key KEY", detail: "sign needs the private key file plugboard keygen wrote.",
                                  hint: "Run plugboard sign \(file) --key release-2026.key.")
        }
        // The name the manifest gives the plugin is what is signed; without --name, the
        // name its file stands for (libX.so is X), as inspect shows it, without running it.
        let name = ctx.parsed.value("name") ?? PluginNames.fromFile(file)
        try checkPluginName(name)
        let key = try KeyFile.readPrivateKey(keyPath)
        let inspection: PluginInspection
        do {
            inspection = try PluginInspection.plugin(at: file, name: name, pin: nil)
        } catch where error.code == .pluginFileNotFound {
            throw PlugboardError(.pluginFileNotFound, "no file \"\(file)\" to sign",
                detail: "The file does not exist (relative paths are relative to the working folder).",
                hint: "Give the path of a plugin's .so file, for example .build/release/libFileStorage.so after swift build -c release.")
        }
        let signature: PluginSignature
        do {
            signature = try PluginSignature.sign(name: name, sha256: inspection.sha256, with: key)
        } catch {
            throw PlugboardError(.keyInvalid, "could not sign with key \(key.publicKey.keyID): \(error.message)",
                                 detail: error.detail, hint: error.hint)
        }
        if ctx.json {
            ctx.out(.object([("name", .string(name)), ("sha256", .string(inspection.sha256)), ("signature", .string(signature.description)),
                             ("keyId", .string(key.publicKey.keyID))]))
        } else {
            ctx.out("""
                plugin:    \(name)
                file:      \(inspection.path)
                sha256:    \(inspection.sha256)
                key id:    \(key.publicKey.keyID)
                signature: \(signature)
                Add to the plugin's entry "\(name)" in the manifest:
                  "sha256": "\(inspection.sha256)",
                  "signature": "\(signature)"

                """)
        }
        return 0
    }

    private static func checkKeyName(_ name: String) throws(PlugboardError) {
        guard !name.isEmpty, !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\"" || $0 == "\\" }) else {
            throw UsageError.make("invalid key name \"\(name)\"", detail: "A key's name is shown in the manifest, records and errors.",
                                  hint: "Give --name a name of letters, digits and dashes, such as release-2026.")
        }
    }

    private static func checkPluginName(_ name: String) throws(PlugboardError) {
        guard !name.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }),
              !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw UsageError.make("invalid plugin name \"\(name)\"",
                detail: "The name signed is the plugin's name in the manifest, which is not empty and has no control character.",
                hint: "Give --name the plugin's name as its manifest entry writes it.")
        }
    }
}

/// The key files: written once, with their mode set whatever the umask; a private key
/// read only when nobody else may read it, as ssh does.
enum KeyFile {
    static func create(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(PlugboardError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw PlugboardError(.keyExists, "key file \"\(path)\" already exists",
                    detail: "keygen never overwrites a key.", hint: "Choose another --out.")
            }
            throw failure("could not create key file \"\(path)\"")
        }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else { throw failure("could not set the mode of key file \"\(path)\"") }
        do {
            try DescriptorIO.writeAll(fd, bytes)
        } catch {
            errno = error.code
            throw failure("could not write key file \"\(path)\"")
        }
    }

    static func readPrivateKey(_ path: String) throws(PlugboardError) -> Ed25519PrivateKey {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("could not open key file \"\(path)\"") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("could not read key file \"\(path)\"") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw PlugboardError(.keyInvalid, "key file \"\(path)\" is not a regular file", hint: "Give the private key file plugboard keygen wrote.")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw PlugboardError(.keyInsecure, "key file \"\(path)\" can be read by others",
                detail: "Its mode is 0\(String(mode, radix: 8)); a private key must be readable by its owner only (0600 or 0400), so it was not used.",
                hint: "Run chmod 600 \(path); if others could read it, make a new key and stop trusting this one.")
        }
        let bytes: [UInt8]
        do {
            bytes = try DescriptorIO.readToEnd(fd)
        } catch {
            errno = error.code
            throw failure("could not read key file \"\(path)\"")
        }
        do {
            return try Ed25519PrivateKey(pemRepresentation: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw PlugboardError(.keyInvalid, "key file \"\(path)\": \(error.message)", detail: error.detail,
                                 hint: error.hint ?? "Give the private key file plugboard keygen (or openssl genpkey -algorithm ed25519) wrote.")
        }
    }

    private static func failure(_ message: String) -> PlugboardError {
        PlugboardError(.localFile, "\(message): \(String(cString: strerror(errno)))", hint: "Check the path and its permissions.")
    }
}
