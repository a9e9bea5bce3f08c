/// One message on a worker's wire: what it is (``Kind``), which call it belongs to
/// (``stream``), its bytes, and at most one descriptor handed over with it.
///
/// Frames are what both transports carry (``FrameTransport``); what a call's frames mean is
/// the worker protocol's business, one layer up.
public struct Frame: Sendable {
    /// What a frame is. A struct around a byte, not an enum, so that a kind this side does
    /// not know arrives as a value the protocol can refuse by name.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// A call: its operation and arguments. Opens the stream.
        public static let call = Kind(rawValue: 1)
        /// A call's answer (the operation's result, or the head of a streamed one).
        public static let answer = Kind(rawValue: 2)
        /// A call's failure: an encoded error. Ends the stream.
        public static let failure = Kind(rawValue: 3)
        /// A piece of a streamed body, in either direction.
        public static let chunk = Kind(rawValue: 4)
        /// A streamed body ended whole. Ends the stream for the side that sent it.
        public static let end = Kind(rawValue: 5)
        /// The receiver of a body may take this many more bytes (backpressure).
        public static let credit = Kind(rawValue: 6)
        /// The caller gave up (its client went away): stop the work, answer nothing more.
        public static let cancel = Kind(rawValue: 7)
        /// Are you there? Answered by ``pong`` with the same payload.
        public static let ping = Kind(rawValue: 8)
        public static let pong = Kind(rawValue: 9)
        /// The worker's first frame: what it loaded and registered, or why it could not.
        public static let ready = Kind(rawValue: 10)
        /// The host asks the worker to stop its plugin's services and end.
        public static let stop = Kind(rawValue: 11)
        /// The host's first frame: what the worker is to load.
        public static let load = Kind(rawValue: 12)

        public var description: String {
            switch self {
            case .call: "call"
            case .answer: "answer"
            case .failure: "failure"
            case .chunk: "chunk"
            case .end: "end"
            case .credit: "credit"
            case .cancel: "cancel"
            case .ping: "ping"
            case .pong: "pong"
            case .ready: "ready"
            case .stop: "stop"
            case .load: "load"
            default: "kind \(rawValue)"
            }
        }
    }

    public var kind: Kind
    /// The call this frame belongs to; 0 for frames of the connection itself (ping, ready, stop).
    public var stream: UInt32
    public var payload: [UInt8]
    /// A descriptor handed over with the frame (`SCM_RIGHTS`), or -1. The receiver owns it.
    public var descriptor: Int32

    public init(_ kind: Kind, stream: UInt32 = 0, payload: [UInt8] = [], descriptor: Int32 = -1) {
        self.kind = kind
        self.stream = stream
        self.payload = payload
        self.descriptor = descriptor
    }

    /// The most payload one frame carries; longer bodies go in several chunks. Below the
    /// default socket buffer (`net.core.wmem_default`), so one frame is one `sendmsg`
    /// without raising limits that need privileges.
    public static let maxPayload = 128 * 1024
    /// Kind and stream, before the payload.
    static let headerBytes = 5
}
