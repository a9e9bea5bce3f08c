#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency
import Testing

/// The Python tools the tests run for real (moto_server, boto3; `Tests/requirements.txt`
/// lists them and why), in `.venv` beside Package.swift, made on first use by the first
/// test that needs them: put ``PythonToolsTrait`` (`.pythonTools`) on its suite.
///
/// ```swift
/// @Suite(.serialized, .pythonTools) struct MotoTests {
///     @Test func works() throws { ... PythonTools.venv.bin("moto_server") ... }
/// }
/// ```
public enum PythonTools {
    /// The package's root: three folders up from this file.
    public static let packageRoot: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path
    }()

    /// The package's `.venv`, made with the first `python3` on the PATH.
    public static let venv = PythonVenv(root: packageRoot, requirements: "\(packageRoot)/Tests/requirements.txt",
                                        python3: onPath("python3"), environment: ChildProcess.environment)

    /// ``PythonVenv/prepare()`` of ``venv``, once per process: every later caller gets the
    /// first outcome.
    private static let outcome = venv.prepare()

    /// Makes `.venv` if it is not complete, on a thread of ``BlockingWork`` (an install
    /// takes minutes, which a pool thread must not spend waiting).
    public static func prepare() async -> PythonVenv.Outcome {
        await BlockingWork.run { outcome }
    }

    /// The first executable `name` in the PATH's folders.
    public static func onPath(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }
}

/// Makes the package's `.venv` before the suite or test it is on runs (``PythonTools``);
/// skips it, with the reason, where the machine cannot have it (no venv module, PyPI
/// unreachable), and fails it where making it failed otherwise.
public struct PythonToolsTrait: SuiteTrait, TestTrait {
    public func prepare(for test: Test) async throws {
        switch await PythonTools.prepare() {
        case .ready: return
        case .skipped(let reason): try Test.cancel(Comment(rawValue: reason))
        case .failed(let failure): throw PythonToolsFailure(description: failure)
        }
    }
}

extension Trait where Self == PythonToolsTrait {
    /// The package's `.venv`, made on first use (``PythonToolsTrait``).
    public static var pythonTools: Self { PythonToolsTrait() }
}

/// Why the package's `.venv` could not be made, where the machine could have had it.
public struct PythonToolsFailure: Error, CustomStringConvertible {
    public let description: String
}
