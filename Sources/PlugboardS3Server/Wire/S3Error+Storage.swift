import PlugboardAPI
// The host's side of a plugin's error mappings (the headers each status carries); kept out of
// S3Error.swift so that the fuzzed form reader compiles without the host.
import PlugboardHost

extension S3Error {
    /// A storage error as S3 names it. `key` and `bucket` name the object the operation
    /// was about, for `NoSuchKey`'s `<Key>`; `mapping` is the answer a plugin mapped its
    /// own code to, used for a code S3 has no name for. The storage's texts may name
    /// server paths; the caller logs the original and answers this (see ``S3Router``).
    public init(storage error: PlugboardError, bucket: String?, key: String?, mapping: PlugboardError.Mapping? = nil) {
        switch error.code {
        case .storageNotFound:
            self = key.map { S3Error.noSuchKey($0) } ?? S3Error("NoSuchKey", status: 404, "The specified key does not exist.")
        case .storagePreconditionFailed:
            self = .preconditionFailed("If-Match / If-None-Match")
        case .storageRangeNotSatisfiable:
            self = S3Error("InvalidRange", status: 416, "The requested range is not satisfiable.")
        case .storageInvalidKey:
            self = .keyTooLong("The key is not one the storage takes: \(error.message).")
        case .storageInvalidMetadata, .storageInvalidArgument:
            self = .invalidArgument(error.message + (error.detail.map { " " + $0 } ?? ""))
        case .storageAccessDenied:
            self = .accessDenied("The storage behind this endpoint refused the operation: \(error.message).")
        case .storageUnavailable:
            self = .serviceUnavailable("The storage behind this endpoint is unavailable for now: \(error.message). Retry with backoff.")
        case .storageUnsupported:
            self = S3Error("NotImplemented", status: 501, "The storage plugged in behind this endpoint cannot do this: \(error.message).")
        default:
            if let mapping {
                self = S3Error(mapping.s3Code, status: mapping.status, error.message + (error.detail.map { ". " + $0 } ?? ""),
                               headers: mapping.answerHeaders)
            } else {
                self = .internalError("The storage failed: \(error.message).")
            }
        }
    }
}
