import PlugboardAPI
@testable import PlugboardEtcd
import PlugboardHost
import PlugboardJSON
import Testing

/// What etcd's JSON gateway writes and reads, without etcd: the answers below are copied
/// from etcd 3.4.23's gateway.
struct EtcdGatewayTests {
    static func json(_ text: String) throws -> JSONValue {
        try JSONParser.parse(Array(text.utf8), source: "test")
    }

    @Test func readsARange_int64sAsStrings_bytesAsBase64() throws {
        let root = try Self.json("""
            {"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"2","raft_term":"2"},
             "kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"7","version":"3","value":"MQ==","lease":"4111120422696525321"}],"count":"1"}
            """)
        #expect(try EtcdGateway.revision(root) == 2)
        #expect(try EtcdGateway.keyValues(root) == [EtcdKeyValue(key: "a", value: Array("1".utf8), createRevision: 2, modRevision: 7,
                                                                 version: 3, lease: 4111120422696525321)])
    }

    @Test func missingFieldsAreTheirDefaults_asProtobufJSONLeavesThemOut() throws {
        // No kvs (no key), no value (empty), no lease (0): protobuf drops default values.
        let empty = try Self.json(#"{"header":{"revision":"5"}}"#)
        #expect(try EtcdGateway.keyValues(empty).isEmpty)
        let kv = try EtcdGateway.keyValue(try Self.json(#"{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1"}"#))
        #expect(kv.value.isEmpty && kv.lease == 0)
        #expect(try EtcdGateway.revision(try Self.json(#"{"header":{}}"#)) == 0)
        // A txn whose comparisons failed has no "succeeded".
        let txn = try EtcdGateway.txnResult(try Self.json(#"{"header":{"revision":"9"},"responses":[{"response_range":{"header":{"revision":"9"}}}]}"#))
        #expect(!txn.succeeded && txn.revision == 9 && txn.ranges.count == 1 && txn.ranges[0].isEmpty)
    }

    @Test func readsWatchMessages_createdEventsCompactedProgress() throws {
        let created = try EtcdGateway.watchMessage(try Self.json(#"{"result":{"header":{"revision":"3"},"created":true}}"#))
        #expect(created.created && !created.canceled && created.revision == 3 && created.changes.isEmpty)

        let events = try EtcdGateway.watchMessage(try Self.json("""
            {"result":{"header":{"revision":"5"},"events":[{"kv":{"key":"YQ==","create_revision":"4","mod_revision":"4","version":"1","value":"eA=="}},
             {"type":"DELETE","kv":{"key":"YQ==","mod_revision":"5"}}]}}
            """))
        #expect(events.changes == [.put(EtcdKeyValue(key: "a", value: [0x78], createRevision: 4, modRevision: 4, version: 1, lease: 0)),
                                   .delete(key: "a", modRevision: 5)])

        let compacted = try EtcdGateway.watchMessage(try Self.json(#"{"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"2"}}"#))
        #expect(compacted.canceled && compacted.compactRevision == 2)
    }

    @Test func readsBothErrorShapes_andTellsTransientFromFinal() throws {
        let unary = EtcdGateway.error(try Self.json(#"{"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14}"#), status: 503)
        #expect(unary == GatewayError(status: 503, code: 14, message: "etcdserver: no leader"))
        #expect(unary?.isTransient == true && unary?.certainlyNotApplied == true)

        let streamed = EtcdGateway.error(try Self.json(#"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: leader changed","http_status":"Service Unavailable"}}"#), status: 0)
        #expect(streamed?.message == "etcdserver: leader changed" && streamed?.isTransient == true && streamed?.certainlyNotApplied == false)

        let compacted = EtcdGateway.error(try Self.json(#"{"error":"etcdserver: mvcc: required revision has been compacted","message":"etcdserver: mvcc: required revision has been compacted","code":11}"#), status: 400)
        #expect(compacted?.isCompacted == true && compacted?.isTransient == false)
        #expect(EtcdClient.refused("/v3/kv/range", EtcdEndpoint(host: "127.0.0.1", port: 1), compacted!).code == .etcdCompacted)

        let lease = EtcdGateway.error(try Self.json(#"{"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5}"#), status: 404)
        #expect(EtcdClient.refused("/v3/kv/put", EtcdEndpoint(host: "127.0.0.1", port: 1), lease!).code == .etcdLeaseExpired)

        let bad = EtcdGateway.error(try Self.json(#"{"error":"illegal base64 data at input byte 0","message":"illegal base64 data at input byte 0","code":3}"#), status: 400)!
        let error = EtcdClient.refused("/v3/kv/put", EtcdEndpoint(host: "127.0.0.1", port: 1), bad)
        #expect(error.code == .etcdRequestFailed && error.message.contains("illegal base64") && error.detail?.contains("INVALID_ARGUMENT") == true)
    }

    @Test func refusesMalformedFields_namingExpectedAndFound() throws {
        #expect(throws: EtcdGateway.Malformed.self) { try EtcdGateway.revision(try Self.json(#"{"header":{"revision":"x1"}}"#)) }
        #expect(throws: EtcdGateway.Malformed.self) { try EtcdGateway.keyValues(try Self.json(#"{"kvs":{"key":"YQ=="}}"#)) }
        #expect(throws: EtcdGateway.Malformed.self) { try EtcdGateway.keyValue(try Self.json(#"{"key":"!!!!"}"#)) }
        #expect(throws: EtcdGateway.Malformed.self) { try EtcdGateway.watchMessage(try Self.json(#"{"result":{"events":[{"type":"MOVE","kv":{"key":"YQ=="}}]}}"#)) }
        do {
            _ = try EtcdGateway.parse(Array("<html>".utf8))
            Issue.record("HTML parsed as JSON")
        } catch {
            #expect(error.expected == "a JSON object" && error.found.contains("6 bytes"))
        }
        // A JSON number where a string is usual is taken (a later gateway may write one).
        #expect(try EtcdGateway.int64(try Self.json("12"), "n") == 12)
    }

    @Test func writesRequests_base64KeysStringInt64sAndPrefixEnds() throws {
        #expect(EtcdGateway.prefixEnd(Array("/fleet/".utf8)) == Array("/fleet0".utf8))
        #expect(EtcdGateway.prefixEnd([0x61, 0xff]) == [0x62])
        #expect(EtcdGateway.prefixEnd([0xff, 0xff]) == [0])
        #expect(EtcdGateway.prefixEnd([]) == [0])
        #expect(JSONOutput.object(EtcdGateway.range("a", prefix: true)).render(pretty: false) == #"{"key":"YQ==","range_end":"Yg=="}"#)
        #expect(EtcdGateway.put("a", [1], lease: 7).render(pretty: false) == #"{"key":"YQ==","value":"AQ==","lease":"7"}"#)
        #expect(EtcdGateway.put("a", [], lease: nil).render(pretty: false) == #"{"key":"YQ==","value":""}"#)
        let txn = EtcdTxn(compare: [EtcdCompare("a", .createRevision, .equal, 0)], success: [.put("a", [1], lease: nil)],
                          failure: [.get("a")])
        #expect(EtcdGateway.txn(txn).render(pretty: false) == """
            {"compare":[{"key":"YQ==","target":"CREATE","result":"EQUAL","create_revision":"0"}],\
            "success":[{"request_put":{"key":"YQ==","value":"AQ=="}}],"failure":[{"request_range":{"key":"YQ=="}}]}
            """)
        #expect(EtcdGateway.watch("a", prefix: false, fromRevision: 4).render(pretty: false)
                == #"{"create_request":{"key":"YQ==","start_revision":"4","progress_notify":true}}"#)
    }
}
