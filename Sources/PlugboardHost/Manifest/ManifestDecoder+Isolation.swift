import PlugboardIPC
import PlugboardAPI
import PlugboardJSON

extension ManifestDecoder {
    /// A plugin entry's `"isolation"`, with its `"worker"` and `"sandbox"` objects, which
    /// only an isolated entry may have.
    func decodeIsolation(_ isolation: JSONValue?, worker: JSONValue?, sandbox: JSONValue?) throws(PlugboardError) -> PluginIsolation {
        var mode = "in-process"
        if let isolation {
            mode = try reader.string(isolation, hint: "Write \"isolation\": \"process\" to run the plugin in a worker process, or \"in-process\".")
            guard mode == "process" || mode == "in-process" else {
                throw reader.invalidValue(isolation, "isolation \(ManifestReader.quoted(mode)) is not a mode",
                    detail: "Expected \"in-process\" (the default: the plugin runs in the host) or \"process\" (a supervised worker child of its own), found \(ManifestReader.quoted(mode)).",
                    hint: "Write \"isolation\": \"process\" or \"in-process\".")
            }
        }
        guard mode == "process" else {
            for (key, value) in [("worker", worker), ("sandbox", sandbox)] {
                guard let value else { continue }
                throw reader.invalidValue(value, "\"\(key)\" is set but the plugin runs in process",
                    detail: "The \"\(key)\" settings apply to an isolated plugin's worker process; this entry has no \"isolation\": \"process\". A plugin in process has the host's own trust: no sandbox can apply to it alone.",
                    hint: "Add \"isolation\": \"process\", or remove \"\(key)\".")
            }
            return .inProcess
        }
        var settings = WorkerSettings()
        if let worker {
            for member in try reader.object(worker, hint: "Write \"worker\" as an object, such as {\"spare\": true, \"maxCrashes\": 5}.") {
                let v = member.value
                switch member.key {
                case "spare": settings.spare = try reader.bool(v)
                case "maxCrashes":
                    settings.maxCrashes = try reader.integer(v)
                    guard settings.maxCrashes >= 1 else {
                        throw reader.invalidValue(v, "maxCrashes is \(settings.maxCrashes)",
                            detail: "Expected 1 or more crashes within crashWindowSeconds before the plugin is marked failed.",
                            hint: "Write a positive count, such as 5.")
                    }
                case "crashWindowSeconds": settings.crashWindowSeconds = try positiveSeconds(v, "crashWindowSeconds")
                case "callTimeoutSeconds": settings.callTimeoutSeconds = try positiveSeconds(v, "callTimeoutSeconds")
                case "startTimeoutSeconds": settings.startTimeoutSeconds = try positiveSeconds(v, "startTimeoutSeconds")
                case "transport":
                    let text = try reader.string(v, hint: "Write \"transport\": \"ring\" (the default) or \"socket\".")
                    guard let kind = TransportKind(rawValue: text) else {
                        throw reader.invalidValue(v, "transport \(ManifestReader.quoted(text)) is not a transport",
                            detail: "Expected \"ring\" (shared memory, the default) or \"socket\" (a Unix socket), found \(ManifestReader.quoted(text)).",
                            hint: "Write \"ring\" or \"socket\".")
                    }
                    settings.transport = kind
                default: try reader.checkKeys([member], known: WorkerSettings.keys, in: worker)
                }
            }
        }
        if let sandbox { settings.sandbox = try decodeSandbox(sandbox) }
        return .process(settings)
    }

    private func positiveSeconds(_ v: JSONValue, _ key: String) throws(PlugboardError) -> Double {
        let seconds = try reader.number(v)
        guard seconds > 0, seconds <= 86_400 else {
            throw reader.invalidValue(v, "\(key) is \(seconds)", detail: "Expected seconds above 0 and at most 86400.",
                                      hint: "Write a number of seconds, such as 30.")
        }
        return seconds
    }
}
