/// Greets people: the service the GreeterProvider plugin provides and the GreeterConsumer
/// plugin resolves. Both import this module from libGreeterContract.so, so
/// `(any Greeter).self` is one type in the host's container.
public protocol Greeter: Sendable {
    /// The greeting for `name`.
    func greeting(for name: String) -> String
}
