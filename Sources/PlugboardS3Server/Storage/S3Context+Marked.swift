import PlugboardAPI

extension S3Context {
    /// The bound storage for the front end's own records (markers, claims, manifests,
    /// checksum records, an upload's record once written): `StorageCall.record`.
    var records: any ObjectStorage { S3MarkedStorage(base: storage, call: .record) }

    /// The bound storage for what belongs to one multipart upload: its record as
    /// CreateMultipartUpload writes it (`.upload`), its parts (`.part`), and the object
    /// that completes it (`.object`, naming the upload).
    func upload(_ uploadID: String, object: String, as purpose: StorageCall.Purpose) -> any ObjectStorage {
        S3MarkedStorage(base: storage, call: StorageCall(purpose: purpose, object: purpose == .object ? nil : object, upload: uploadID))
    }
}
