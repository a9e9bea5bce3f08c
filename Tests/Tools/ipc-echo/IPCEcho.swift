// ipc-echo <socket|ring> [--answer-bytes N] [--spin-ns N]
//
// The far end of a worker's wire, without a plugin: attaches to the descriptors it was
// given at 3 (socket) or 3 and 4 (ring) and answers until the host ends the connection.
// A `call` is answered by an `answer` on its stream (N bytes when --answer-bytes is given,
// else the call's payload); `stop` ends it; any other frame comes back as it came, its
// descriptor with it. The ring transports' child-process test and `plugboard-bench ipc`
// run it.
#if canImport(Glibc)
import Glibc
#endif
import PlugboardIPC

@main
enum IPCEcho {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let kindName = arguments.first, let kind = TransportKind(rawValue: kindName) else {
            fail("usage: ipc-echo <socket|ring> [--answer-bytes N] [--spin-ns N]")
        }
        arguments.removeFirst()
        var answerBytes: Int?
        var configuration = RingTransport.Configuration()
        while let option = arguments.first {
            arguments.removeFirst()
            guard let word = arguments.first, let value = Int(word), value >= 0 else { fail("\(option) needs a whole number") }
            arguments.removeFirst()
            switch option {
            case "--answer-bytes": answerBytes = min(value, Frame.maxPayload)
            case "--spin-ns": configuration.spinNanoseconds = value
            default: fail("unknown option \(option)")
            }
        }
        let transport: any FrameTransport
        do {
            transport = kind == .ring ? try RingTransport(attaching: [3, 4], configuration: configuration)
                                      : try Transports.attach(kind, descriptors: [3])
        } catch {
            fail("could not attach: \(error)")
        }
        let answer = answerBytes.map { [UInt8](repeating: 0x61, count: $0) }
        do {
            while let frame = try transport.receive() {
                switch frame.kind {
                case .stop:
                    transport.close()
                    exit(0)
                case .call:
                    try transport.send(Frame(.answer, stream: frame.stream, payload: answer ?? frame.payload))
                default:
                    try transport.send(frame)
                }
                // Sent as a duplicate: this copy is still ours to close.
                if frame.descriptor >= 0 { close(frame.descriptor) }
            }
        } catch {
            fail("\(error)")
        }
        exit(0)
    }

    static func fail(_ message: String) -> Never {
        let line = "ipc-echo: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        exit(1)
    }
}
