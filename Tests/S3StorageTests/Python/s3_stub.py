"""A misbehaving S3 for S3Storage's failure tests. The bucket name picks the behaviour:

  flaky-<n>   the first n requests get 503 SlowDown, then GET/HEAD of any key answer "ok"
  down        every request gets 503 ServiceUnavailable
  garbage     every request gets 200 with a body that is not XML
  corrupt     GET answers bytes that do not match the MD5 ETag sent with them
  cut         GET answers 200 announcing 1 MiB (Content-Length, its MD5 as ETag), sends the
              first 300,000 bytes and closes the connection
  moved       301 PermanentRedirect (as S3 answers for a bucket in another region), with a
              Location that leads to the "down" bucket
  broken      every request gets 500 with a body that is not XML
  slow, slow-<name>  every request waits 900 seconds before answering (far beyond any bound a
              test sets, so that a late answer under load is never mistaken for one)
  arrived     GET /arrived/<bucket>?count=N answers once N requests for <bucket> have come
              (at most 240 s), with the number that came: what a test waits on before it
              acts on a request in flight
  echo        403 AccessDenied whose message repeats the session token and the headers
  kms         a working store whose ETags are not MD5s (as with SSE-KMS): PUT (CopyObject too), GET, HEAD;
              GET /kms/<key>?puts answers how many PUTs that key took; GET /kms/foreign is an object
              another client wrote (no MD5 kept in metadata)

Usage: s3_stub.py PORT. Prints "ready" when it listens. Each request is logged to stderr.
"""
import hashlib
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNTS = {}
STORED = {}
ARRIVALS = threading.Condition()


def error(code, message):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code><Message>%s</Message>"
            "<RequestId>STUB</RequestId></Error>" % (code, message)).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body=b"", headers=None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        bucket = self.path.split("/")[1].split("?")[0]
        with ARRIVALS:
            COUNTS[bucket] = COUNTS.get(bucket, 0) + 1
            ARRIVALS.notify_all()
        if bucket == "arrived":
            watched = self.path.split("?")[0].split("/")[2]
            wanted = int(self.path.split("count=")[1].split("&")[0])
            with ARRIVALS:
                ARRIVALS.wait_for(lambda: COUNTS.get(watched, 0) >= wanted, timeout=240)
                came = COUNTS.get(watched, 0)
            return self.answer(200, str(came).encode())
        if bucket.startswith("flaky-"):
            if COUNTS[bucket] <= int(bucket.split("-")[1]):
                return self.answer(503, error("SlowDown", "Please reduce your request rate."))
            body = b"ok"
            return self.answer(200, body, {"ETag": '"%s"' % hashlib.md5(body).hexdigest(),
                                           "Last-Modified": "Sun, 29 Nov 2026 20:00:00 GMT",
                                           "Content-Type": "text/plain", "x-amz-meta-try": str(COUNTS[bucket])})
        if bucket == "kms":
            return self.kms(body)
        if bucket == "down":
            return self.answer(503, error("ServiceUnavailable", "Down for maintenance."))
        if bucket == "moved":
            body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>PermanentRedirect</Code>"
                    "<Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message>"
                    "<Endpoint>moved.s3.eu-central-1.amazonaws.com</Endpoint><Bucket>moved</Bucket>"
                    "<RequestId>STUB</RequestId></Error>").encode()
            return self.answer(301, body, {"Location": "/down/k", "x-amz-bucket-region": "eu-central-1"})
        if bucket == "corrupt":
            return self.answer(200, b"abc", {"ETag": '"%s"' % hashlib.md5(b"abd").hexdigest(),
                                             "Last-Modified": "Sun, 29 Nov 2026 20:00:00 GMT"})
        if bucket == "cut":
            data = bytes(i % 251 for i in range(1 << 20))
            self.send_response(200)
            self.send_header("ETag", '"%s"' % hashlib.md5(data).hexdigest())
            self.send_header("Last-Modified", "Sun, 29 Nov 2026 20:00:00 GMT")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:300000])
            self.wfile.flush()
            self.close_connection = True
            return None
        if bucket == "garbage":
            return self.answer(200, b"<html><body>Welcome to the captive portal</body></html>")
        if bucket == "broken":
            return self.answer(500, b"Internal proxy failure")
        if bucket == "slow" or bucket.startswith("slow-"):
            time.sleep(900)
            return self.answer(200, b"")
        if bucket == "echo":
            seen = "token %s; headers %s" % (self.headers.get("x-amz-security-token"),
                                             "; ".join("%s=%s" % (k, v) for k, v in self.headers.items()))
            return self.answer(403, error("AccessDenied", seen.replace("&", "&amp;").replace("<", "&lt;")))
        return self.answer(404, error("NoSuchBucket", "The specified bucket does not exist"))

    def kms(self, body):
        key = self.path.split("?")[0][len("/kms/"):]
        if self.command == "GET" and "?puts" in self.path:
            return self.answer(200, str(COUNTS.get("kms-puts-" + key, 0)).encode())
        if self.command == "PUT":
            COUNTS["kms-puts-" + key] = COUNTS.get("kms-puts-" + key, 0) + 1
            meta = {k.lower(): v for k, v in self.headers.items() if k.lower().startswith("x-amz-meta-")}
            source = self.headers.get("x-amz-copy-source")
            if source is not None:
                # CopyObject onto itself with the metadata replaced (a streamed put's MD5).
                body = STORED[source[len("/kms/"):]][0]
            etag = hashlib.sha256(body).hexdigest()[:32]
            STORED[key] = (body, self.headers.get("Content-Type"), meta, etag)
            return self.answer(200, b"", {"ETag": '"%s"' % etag, "x-amz-server-side-encryption": "aws:kms"})
        if key == "foreign" and key not in STORED:
            STORED[key] = (b"written elsewhere", "text/plain", {}, "%s-2" % hashlib.md5(b"x").hexdigest())
        if key not in STORED:
            return self.answer(404, error("NoSuchKey", "The specified key does not exist."))
        data, content_type, meta, etag = STORED[key]
        headers = {"ETag": '"%s"' % etag, "Content-Type": content_type,
                   "Last-Modified": "Sun, 29 Nov 2026 20:00:00 GMT"}
        headers.update(meta)
        if self.command == "HEAD":
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return None
        return self.answer(200, data, headers)

    do_GET = do_PUT = do_HEAD = do_DELETE = handle_any

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    server.serve_forever()
