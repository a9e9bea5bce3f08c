// filestorage-crash-writer <root> <cache folder> [<libFileStorage.so>]
//
// The child of PluginTests' crash test: loads libFileStorage.so through the host's
// loader, as `plugboard` does, and then writes, overwrites and deletes objects under
// <root> from several tasks until it is killed (SIGKILL). Every object's data is random,
// so after the kill the test can only check that each object is whole: its data matches
// its size and ETag.
#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost

@main
enum CrashWriter {
    static func main() async {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3 else { fail("usage: filestorage-crash-writer <root> <cache folder> [<libFileStorage.so>]") }
        let root = arguments[1]
        let cache = arguments[2]
        let executable = realpath("/proc/self/exe", nil).map { pointer -> String in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? arguments[0]
        let folder = String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])
        let pluginPath = arguments.count >= 4 ? arguments[3] : "\(folder)/libFileStorage.so"

        let container = Container(environment: .testing)
        let storage: any ObjectStorage
        do {
            let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cache))
            let record = await loader.load(.init(name: "FileStorage", path: pluginPath,
                                                 config: PluginConfig(["root": .string(root)], plugin: "FileStorage")))
            guard record.state == .active else { fail("could not load \(pluginPath): \(record.error.map { "\($0)" } ?? "?")") }
            storage = try container.resolve()
        } catch {
            fail("\(error)")
        }
        say("ready")
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask { await write(writer, to: storage) }
            }
        }
    }

    /// One writer: puts random objects of 0 bytes to 4 MiB under 32 keys (whole or streamed), sometimes deletes.
    static func write(_ writer: Int, to storage: any ObjectStorage) async {
        var generator = SystemRandomNumberGenerator()
        var round = 0
        while true {
            round += 1
            let key = "crash/\(Int.random(in: 0..<32, using: &generator))"
            if round % 13 == 0 {
                try? await storage.delete(key)
                continue
            }
            let size = round % 7 == 0 ? Int.random(in: 1 << 20...4 << 20, using: &generator)
                                      : Int.random(in: 0...64 << 10, using: &generator)
            do {
                let data = randomBytes(size)
                let type = "application/x-crash-\(writer)", metadata = ["writer": "\(writer)", "round": "\(round)"]
                if round % 2 == 0 {
                    // Every other object streamed in 64 KiB chunks, so that a kill can land
                    // between two chunks of a streamed put too.
                    let chunks = stride(from: 0, to: data.count, by: 64 << 10).map { Array(data[$0..<min($0 + (64 << 10), data.count)]) }
                    let stream = AsyncStream<[UInt8]> { continuation in
                        for chunk in chunks { continuation.yield(chunk) }
                        continuation.finish()
                    }
                    _ = try await storage.put(key, body: ObjectBody(length: data.count, stream), contentType: type,
                                              metadata: metadata, condition: .none)
                } else {
                    _ = try await storage.put(key, data: data, contentType: type, metadata: metadata)
                }
            } catch {
                fail("put failed: \(error)")
            }
        }
    }

    /// `count` random bytes from /dev/urandom, fast even in a debug build.
    static func randomBytes(_ count: Int) -> [UInt8] {
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { fail("could not open /dev/urandom") }
        defer { close(fd) }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n = read(fd, buffer.baseAddress! + done, count - done)
                if n <= 0 { fail("could not read /dev/urandom") }
                done += n
            }
            initialized = count
        }
    }

    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
    }

    static func fail(_ message: String) -> Never {
        let bytes = Array("filestorage-crash-writer: \(message)\n".utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        exit(1)
    }
}
