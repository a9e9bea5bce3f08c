import PlugboardTestSupport
import Testing

/// boto3, the reference S3 client, against `plugboard serve --s3-listen` whose storage is
/// a content-type policy layer (ContentTypePolicyPlugin in Tests/Fixtures, which allows
/// only `text/plain`) over MemoryStorage: the front end's own records pass the layer
/// (issue 33: its first build refused boto3's CreateBucket with 415), a refused type gets
/// the plugin's mapped answer, and multipart uploads are judged when they are created.
@Suite(.serialized, .pythonTools) struct S3ThroughLayerServeTests {
    static let secret = "layer-Secret-Key-0123456789"

    static let manifest = #"""
        {"schemaVersion": 1, "plugins": [
          {"name": "Mem", "product": "MemoryStorage"},
          {"name": "Policy", "product": "ContentTypePolicyPlugin", "wraps": "Mem", "config": {"allowed": ["text/plain"]}}],
         "s3": {"credentials": [{"accessKeyId": "plugboard-layer", "secretAccessKey": {"secret": "${TEST_S3_SECRET}"}}]}}
        """#

    static let script = #"""
        import sys, boto3
        from botocore.config import Config
        from botocore.exceptions import ClientError

        s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                          aws_access_key_id="plugboard-layer", aws_secret_access_key=sys.argv[2],
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                        retries={"max_attempts": 1}))

        def refused(call, **kwargs):
            try:
                call(**kwargs)
            except ClientError as error:
                return error.response["ResponseMetadata"]["HTTPStatusCode"], error.response["Error"]["Code"]
            return None

        s3.create_bucket(Bucket="photos")
        s3.put_object(Bucket="photos", Key="a.txt", Body=b"hello", ContentType="text/plain")
        print("refused put:", refused(s3.put_object, Bucket="photos", Key="b.bin", Body=b"\x00\x01", ContentType="application/octet-stream"))

        upload = s3.create_multipart_upload(Bucket="photos", Key="big.txt", ContentType="text/plain")["UploadId"]
        parts = []
        for number, body in ((1, b"x" * (5 * 1024 * 1024)), (2, b"the end")):
            etag = s3.upload_part(Bucket="photos", Key="big.txt", UploadId=upload, PartNumber=number, Body=body)["ETag"]
            parts.append({"PartNumber": number, "ETag": etag})
        s3.complete_multipart_upload(Bucket="photos", Key="big.txt", UploadId=upload, MultipartUpload={"Parts": parts})
        got = s3.get_object(Bucket="photos", Key="big.txt")
        print("multipart:", got["ContentLength"], got["ContentType"])

        print("refused upload:", refused(s3.create_multipart_upload, Bucket="photos", Key="movie.mp4", ContentType="video/mp4"))
        print("uploads left:", len(s3.list_multipart_uploads(Bucket="photos").get("Uploads", [])))
        print("keys:", sorted(o["Key"] for o in s3.list_objects_v2(Bucket="photos").get("Contents", [])))
        for key in ("a.txt", "big.txt"):
            s3.delete_object(Bucket="photos", Key=key)
        s3.delete_bucket(Bucket="photos")
        print("buckets:", [b["Name"] for b in s3.list_buckets()["Buckets"]])
        """#

    @Test func boto3_createsBuckets_putsAllowedTypes_andIsRefusedTheOthers_throughAPolicyLayer() async throws {
        let environment = ["PLUGBOARD_S3_ACCESS_KEY_ID": "", "PLUGBOARD_S3_SECRET_ACCESS_KEY": "", "TEST_S3_SECRET": Self.secret]
        let server = try ServerProcess(manifest: Self.manifest, arguments: ["--s3-listen", "127.0.0.1:0"], environment: environment,
                                       laterLines: 1)
        let line = try #require(server.laterLines.first)
        let prefix = "plugboard serve: S3 API listening on http://127.0.0.1:"
        #expect(line.hasPrefix(prefix), "\(line)")
        let port = try #require(Int(line.dropFirst(prefix.count)))
        let script = try server.sandbox.write("layer.py", Self.script)
        let run = await CommandRunner.spawn(PythonTools.venv.python, [script, "http://127.0.0.1:\(port)", Self.secret],
                                            in: server.sandbox.root, environment: [:])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == """
            refused put: (415, 'UnsupportedMediaType')
            multipart: 5242887 text/plain
            refused upload: (415, 'UnsupportedMediaType')
            uploads left: 0
            keys: ['a.txt', 'big.txt']
            buckets: []

            """, "\(run.stdout)\n\(run.stderr)")
        #expect(server.stop() == 0)
    }
}
