#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardBytes

/// The AWS shared credentials file: an INI file of `[profile]` sections with
/// `name = value` lines; `#` and `;` start comment lines.
public enum SharedCredentialsFile {
    public enum Read: Equatable {
        case missing
        case contents(String)
    }

    /// The file's text, or `missing` when it cannot be read.
    public static func read(_ path: String) -> Read {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .missing }
        defer { close(fd) }
        guard let bytes = try? DescriptorIO.readToEnd(fd, limit: 1 << 20, chunkSize: 1 << 14) else { return .missing }
        return .contents(String(decoding: bytes, as: UTF8.self))
    }

    /// Every profile's entries, names lowercased as AWS SDKs read them.
    public static func parse(_ text: String) -> [String: [String: String]] {
        var profiles: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = ASCIIText.trimmed(rawLine)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard let close = line.firstIndex(of: "]") else {
                    current = nil
                    continue
                }
                var name = ASCIIText.trimmed(line[line.index(after: line.startIndex)..<close])
                // The config file's "[profile name]" spelling, accepted here too.
                if name.hasPrefix("profile ") { name = ASCIIText.trimmed(name.dropFirst("profile ".count)) }
                current = String(name)
                if profiles[String(name)] == nil { profiles[String(name)] = [:] }
                continue
            }
            guard let profile = current, let equals = line.firstIndex(of: "=") else { continue }
            let name = ASCIIText.trimmed(line[..<equals]).lowercased()
            let value = ASCIIText.trimmed(line[line.index(after: equals)...])
            profiles[profile, default: [:]][name] = String(value)
        }
        return profiles
    }
}
