#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport
import Testing

/// `plugboard serve --s3-listen` over FileStorage killed with SIGKILL during
/// CompleteMultipartUploads (issue 32: 2 of 18 kills left an object whose ETag said `-2`
/// while `partNumber` reads answered 416 and GetObjectAttributes showed no parts). Each
/// round a boto3 client completes an upload of two parts and kills the server: on even
/// rounds the moment the object's file appears in the storage's folder (the window between
/// the object and its part manifest), on odd ones a growing delay after the Complete was
/// sent. Then a server on the same folder must answer every object completed from parts
/// with its parts, or hold no object for that upload (whose upload then stays open).
@Suite(.serialized, .pythonTools) struct S3CompleteKillTests {
    static let secret = "kill-Secret-Key-0123456789"
    static let rounds = 16

    static func manifest(root: String) -> String {
        #"""
        {"schemaVersion": 1, "plugins": [{"name": "Files", "product": "FileStorage", "config": {"root": "\#(root)"}}],
         "s3": {"credentials": [{"accessKeyId": "plugboard-kill", "secretAccessKey": {"secret": "${TEST_S3_SECRET}"}}]}}
        """#
    }

    static let prelude = #"""
        import os, signal, sys, threading, time, boto3
        from botocore.config import Config

        s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                          aws_access_key_id="plugboard-kill", aws_secret_access_key=sys.argv[2],
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                        retries={"max_attempts": 1}, read_timeout=60))
        root = sys.argv[3]
        def stored(key):
            return os.path.exists(os.path.join(root, "objects", "_" + key.encode().hex()))

        """#

    /// One round: an upload of two parts, its Complete in a thread, and the kill.
    static let killScript = prelude + #"""
        pid, round = int(sys.argv[4]), int(sys.argv[5])
        try:
            s3.create_bucket(Bucket="kills")
        except s3.exceptions.ClientError:
            pass
        key = "obj-%d" % round
        upload = s3.create_multipart_upload(Bucket="kills", Key=key)["UploadId"]
        parts = []
        for number, body in ((1, os.urandom(5 * 1024 * 1024)), (2, os.urandom(1000 + round))):
            etag = s3.upload_part(Bucket="kills", Key=key, UploadId=upload, PartNumber=number, Body=body)["ETag"]
            parts.append({"PartNumber": number, "ETag": etag})
        def complete():
            try:
                s3.complete_multipart_upload(Bucket="kills", Key=key, UploadId=upload, MultipartUpload={"Parts": parts})
            except Exception:
                pass
        threading.Thread(target=complete, daemon=True).start()
        if round % 2 == 0:
            deadline = time.monotonic() + 60
            while not stored("kills/" + key) and time.monotonic() < deadline:
                pass
        else:
            time.sleep(0.002 * round)
        os.kill(pid, signal.SIGKILL)
        # Whether this kill came between the object and its part manifest.
        window = stored("kills/" + key) and not stored("_plugboard-s3/parts/kills/" + key)
        print("window" if window else "outside")
        """#

    /// After the kills: every object completed from parts answers its parts.
    static let checkScript = prelude + #"""
        objects = s3.list_objects_v2(Bucket="kills").get("Contents", [])
        wrong = []
        for entry in objects:
            etag = entry["ETag"].strip('"')
            if "-" not in etag:
                wrong.append((entry["Key"], "stored whole"))
                continue
            count = int(etag.split("-")[1])
            head = s3.head_object(Bucket="kills", Key=entry["Key"], PartNumber=count)
            attributes = s3.get_object_attributes(Bucket="kills", Key=entry["Key"], ObjectAttributes=["ObjectParts"])
            parts = attributes.get("ObjectParts", {})
            if head.get("PartsCount") != count or parts.get("TotalPartsCount") != count or len(parts.get("Parts", [])) != count:
                wrong.append((entry["Key"], head.get("PartsCount"), parts))
        uploads = s3.list_multipart_uploads(Bucket="kills").get("Uploads", [])
        print("objects:", len(objects))
        print("wrong:", wrong)
        print("uploads left:", len(uploads))
        """#

    static func start(root: String) throws -> (ServerProcess, String) {
        let server = try ServerProcess(manifest: manifest(root: root), arguments: ["--s3-listen", "127.0.0.1:0"],
                                       environment: ["PLUGBOARD_S3_ACCESS_KEY_ID": "", "PLUGBOARD_S3_SECRET_ACCESS_KEY": "",
                                                     "TEST_S3_SECRET": secret], laterLines: 1)
        let line = try #require(server.laterLines.first)
        let prefix = "plugboard serve: S3 API listening on "
        #expect(line.hasPrefix(prefix), "\(line)")
        return (server, String(line.dropFirst(prefix.count)))
    }

    @Test func killedDuringCompletes_everyObjectKeepsItsPartLayout() async throws {
        let data = try Sandbox("s3-kill-data")
        defer { data.remove() }
        let root = data.path("files")
        let scripts = try Sandbox("s3-kill-scripts")
        defer { scripts.remove() }
        let kill = try scripts.write("kill.py", Self.killScript)
        let check = try scripts.write("check.py", Self.checkScript)
        var windows = 0
        for round in 0..<Self.rounds {
            let (server, endpoint) = try Self.start(root: root)
            let run = await CommandRunner.spawn(PythonTools.venv.python, [kill, endpoint, Self.secret, root, String(server.pid), String(round)],
                                                in: scripts.root, environment: [:])
            guard run.status == 0 else {
                Issue.record("round \(round): \(run.stdout)\n\(run.stderr)")
                return
            }
            #expect(server.waitForExit(timeoutMilliseconds: 30_000) == 128 + SIGKILL, "round \(round)")
            if run.stdout.contains("window") { windows += 1 }
        }
        let (server, endpoint) = try Self.start(root: root)
        let run = await CommandRunner.spawn(PythonTools.venv.python, [check, endpoint, Self.secret, root], in: scripts.root, environment: [:])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("wrong: []\n"), "\(run.stdout)\n\(server.stderr)")
        // The kills on the object's landing are the point: most must fall in the window.
        #expect(windows >= 2, "kills between an object and its manifest: \(windows) of \(Self.rounds)")
        print("S3CompleteKillTests: \(windows) of \(Self.rounds) kills between an object and its manifest; \(run.stdout)")
        #expect(server.stop() == 0)
    }
}
