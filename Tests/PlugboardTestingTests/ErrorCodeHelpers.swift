import PlugboardAPI

/// The code of the ``PlugboardError`` that `body` throws; `nil` when it succeeds, and a
/// code naming the type when it throws something else.
func errorCode(_ body: () throws -> Void) -> PlugboardError.Code? {
    do {
        try body()
        return nil
    } catch let error as PlugboardError {
        return error.code
    } catch {
        return PlugboardError.Code("not a PlugboardError: \(type(of: error))")
    }
}

/// ``errorCode(_:)`` for async work.
func asyncErrorCode(_ body: () async throws -> Void) async -> PlugboardError.Code? {
    do {
        try await body()
        return nil
    } catch let error as PlugboardError {
        return error.code
    } catch {
        return PlugboardError.Code("not a PlugboardError: \(type(of: error))")
    }
}

/// The ``PlugboardError`` that `body` throws, or `nil`.
func plugboardError(_ body: () throws -> Void) -> PlugboardError? {
    do {
        try body()
        return nil
    } catch {
        return error as? PlugboardError
    }
}
