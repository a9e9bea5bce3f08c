import PlugboardAPI
import PlugboardHost
import Testing

/// The manifests that docs/plugins.schema.json accepts and refuses (checked with a
/// JSON Schema 2020-12 validator) are the ones the host accepts and refuses.
@Suite struct ManifestSchemaAgreementTests {
    static let accepted = [
        #"{"schemaVersion": 1, "plugins": []}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "path": "x/libA.so", "sha256": "aBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaBaB", "enabled": false, "required": true, "environments": ["staging"], "rank": -3, "requires": ["b"], "config": {"k": {"secret": "s"}, "n": [1, {"x": null}], "o": {"secret": "a", "b": 1}}},{"name": "b", "product": "B"}]}"#,
        #"{"$schema": "x", "schemaVersion": 1, "environment": "production", "plugins": [], "hotSwap": {"enabled": true, "allowInProduction": false, "debounceMilliseconds": 0, "preflightTimeoutSeconds": 0.5, "drainTimeoutSeconds": 0, "maxRetainedImages": 0}}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "rank": 1.0}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "s3://plugins/builds/a/abababababababababababababababababababababababababababababababab.so", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "http://127.0.0.1:9000/a.so?v=2", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1.0, "plugins": []}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"credentials": [{"accessKeyId": "${S3_KEY_ID}", "secretAccessKey": {"secret": "${S3_SECRET}"}}, {"accessKeyId": "admin", "secretAccessKey": "plain-secret"}]}}"#,        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "signature": "ed25519:21fe31dfa154a261:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="}], "trust": {"requireSignatures": true, "keys": [{"name": "release-2026", "ed25519": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="}, {"name": "release-2027", "ed25519": "PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw="}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"signatureV2": true}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"signatureV2": false, "credentials": [{"accessKeyId": "admin", "secretAccessKey": "plain-secret"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process"}, {"name": "b", "product": "B", "isolation": "in-process"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "worker": {"spare": false, "maxCrashes": 1, "crashWindowSeconds": 0.5, "callTimeoutSeconds": 2, "startTimeoutSeconds": 86400, "transport": "socket"}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "sandbox": {"memoryMB": 64, "openFiles": 16, "readWrite": ["data"], "readOnly": ["/etc/a"]}}]}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"requireSignatures": false, "keys": []}}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process"}, {"name": "l", "product": "L", "wraps": "a", "isolation": "process"}]}"#,
    ]

    static let refused = [
        #"[]"#,
        #"{"plugins": []}"#,
        #"{"schemaVersion": 2, "plugins": []}"#,
        #"{"schemaVersion": "1", "plugins": []}"#,
        #"{"schemaVersion": 1}"#,
        #"{"schemaVersion": 1, "plugin": []}"#,
        #"{"$schema": 1, "schemaVersion": 1, "plugins": []}"#,
        #"{"schemaVersion": 1, "plugins": {}}"#,
        #"{"schemaVersion": 1, "environment": "prod", "plugins": []}"#,
        #"{"schemaVersion": 1, "plugins": ["a"]}"#,
        #"{"schemaVersion": 1, "plugins": [{"product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "", "product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "  ", "product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": 7, "product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a\u0001", "product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "path": "x.so", "product": "A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "enviroments": ["testing"]}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "rank": "high"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "rank": 1.5}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "enabled": "yes"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "environments": ["testing", "prod"]}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "environments": []}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "environments": "testing"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "environments": ["testing", "testing"]}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "sha256": "abc"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "sha256": "gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "lib/A"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "s3://plugins/a.so"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "s3://plugins/a.so", "path": "a.so", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "ftp://host/a.so", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "s3://plugins/", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "s3://plugins/a/../b.so", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "http://user:pw@host/a.so", "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": 7, "sha256": "abababababababababababababababababababababababababababababababab"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "libA.so"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "path": ""}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "requires": [1]}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "sandbox"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": true}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "worker": {"spare": true}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "worker": {"spares": 2}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "worker": {"maxCrashes": 0}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "worker": {"callTimeoutSeconds": 0}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "sandbox": {"memoryMB": 512}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "worker": {"transport": "pipe"}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "sandbox": {"memoryMB": 63}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "sandbox": {"readWrite": [""]}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "isolation": "process", "sandbox": {"network": false}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "requires": ["b", "b"]}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "requires": [""]}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "config": []}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "config": {"key": {"secret": 42}}}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "config": {"key": [{"secret": null}]}}]}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": true}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"drainTimeoutSeconds": -1}}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"debounceMilliseconds": 2.5}}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"enable": true}}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"preflightTimeoutSeconds": 0}}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"enabled": "true"}}"#,
        #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"maxRetainedImages": 5000}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"signatureV2": "yes"}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"signatureV2": true, "credentials": []}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"credentials": []}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"credentials": [{"accessKeyId": "admin"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"credentials": [{"accessKeyId": "admin", "secretAccessKey": 12345678}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"credentials": [{"accessKeyId": "admin", "secretAccessKey": "plain-secret", "region": "x"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"credentials": [{"accessKeyId": "admin", "secretAccessKey": {"secret": 1}}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "s3": {"users": []}}"#,        #"{"schemaVersion": 1, "plugins": [], "trust": []}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"requireSignatures": true}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"requireSignatures": true, "keys": []}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"requireSignatures": "yes", "keys": [{"name": "k", "ed25519": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"keys": [{"name": "k"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"keys": [{"ed25519": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"keys": [{"name": "", "ed25519": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"keys": [{"name": "k", "ed25519": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcH"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"keys": [{"name": "k", "ed25519": "not base64!"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"keys": [{"name": "k", "ed25519": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=", "rsa": "x"}]}}"#,
        #"{"schemaVersion": 1, "plugins": [], "trust": {"require": true}}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "signature": "rsa:21fe31dfa154a261:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "signature": "ed25519:21FE31DFA154A261:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "signature": "ed25519:21fe31dfa154a261:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "signature": "ed25519:21fe31dfa154a261"}]}"#,
        #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "signature": 7}]}"#,
    ]

    @Test(arguments: accepted)
    func manifestTheSchemaAccepts_isAccepted(_ text: String) {
        #expect(ManifestTestSupport.manifestError(text) == nil, "\(ManifestTestSupport.manifestError(text)?.description ?? "")")
    }

    @Test(arguments: refused)
    func manifestTheSchemaRefuses_isRefused(_ text: String) {
        let error = ManifestTestSupport.manifestError(text)
        #expect(error?.code.area == "manifest")
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") != nil, "\(error?.message ?? "no error")")
    }
}
