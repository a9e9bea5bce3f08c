#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes

/// Where the copier stands, kept in a small file so that a restart or a reload resumes
/// the copy instead of beginning again.
///
/// A file beside the manifest rather than an object under a reserved key of the new
/// backend: the new backend then holds exactly the migrated objects (no key hidden from
/// listings, none left behind once the old backend is dropped), and a checkpoint lost or
/// deleted costs only time, since the copier skips what the new backend already has.
/// The file names both backends' plugins: a checkpoint of another migration is ignored.
struct MirrorCheckpoint: Sendable, Equatable {
    var from: String
    var to: String
    /// The old backend's continuation token for the next page, when its listing is
    /// resumed; nil to list from the start (skipping keys up to ``after``).
    var token: String?
    /// Every key up to and including this one (in `ObjectKey` order) has been handled.
    var after: String?
    var examined = 0
    var finished = false

    private static let magic = "plugboard-mirror-checkpoint 1"

    func encoded() -> [UInt8] {
        func field(_ value: String?) -> String { value.map { "=" + Base64.encodeURL(Array($0.utf8)) } ?? "-" }
        let lines = [Self.magic, "from " + field(from), "to " + field(to), "token " + field(token),
                     "after " + field(after), "examined \(examined)", "finished \(finished ? 1 : 0)"]
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// The checkpoint in `bytes`, or nil when they are not one (the file is then replaced).
    static func decode(_ bytes: [UInt8]) -> MirrorCheckpoint? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        guard lines.first == magic else { return nil }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let space = line.firstIndex(of: " ") else { return nil }
            fields[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        func text(_ name: String) -> String?? {
            guard let raw = fields[name] else { return .none }
            if raw == "-" { return .some(nil) }
            guard raw.hasPrefix("="), let bytes = Base64.decodeURL(raw.dropFirst()) else { return .none }
            return .some(String(decoding: bytes, as: UTF8.self))
        }
        guard case .some(.some(let from)) = text("from"), case .some(.some(let to)) = text("to"),
              case .some(let token) = text("token"), case .some(let after) = text("after"),
              let examined = fields["examined"].flatMap({ Int($0) }), let finished = fields["finished"] else { return nil }
        return MirrorCheckpoint(from: from, to: to, token: token, after: after, examined: examined, finished: finished == "1")
    }
}

/// Reads and writes the checkpoint file; a write replaces it whole (written beside it,
/// synced, renamed), so a crash leaves the old checkpoint or the new one.
struct CheckpointFile: Sendable {
    let path: String
    let plugin: String

    func load() throws(PlugboardError) -> MirrorCheckpoint? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw failure("could not read", code)
        }
        defer { close(fd) }
        do {
            return MirrorCheckpoint.decode(try DescriptorIO.readToEnd(fd, limit: 1 << 16))
        } catch {
            throw failure("could not read", error.code)
        }
    }

    func save(_ checkpoint: MirrorCheckpoint) throws(PlugboardError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("could not write", errno) }
        do {
            try DescriptorIO.writeAll(fd, checkpoint.encoded())
        } catch {
            close(fd)
            throw failure("could not write", error.code)
        }
        let synced = fsync(fd) == 0 ? 0 : errno
        close(fd)
        if synced != 0 { throw failure("could not write", synced) }
        guard rename(temporary, path) == 0 else { throw failure("could not write", errno) }
    }

    private func failure(_ what: String, _ code: Int32) -> PlugboardError {
        PlugboardError(.storageFailed, "plugin \"\(plugin)\" \(what) its checkpoint \"\(path)\"",
            detail: "Expected a readable and writable file, found errno \(code) (\(String(cString: strerror(code)))).",
            hint: "Make the checkpoint's folder writable by the host, or point \"checkpoint\" in the plugin's config elsewhere; the copy goes on without it, from the start after a restart.")
    }
}
