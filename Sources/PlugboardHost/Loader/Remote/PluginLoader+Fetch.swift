import PlugboardAPI
import PlugboardHTTPClient

extension PluginLoader {
    /// Makes sure the cache holds `<sha256>.so` for a remote `source` and returns its path,
    /// which is then staged as any local file is (the preflight child gets that copy). A
    /// cache hit downloads nothing and needs no store; a miss downloads into a temporary
    /// file of the cache, hashed as it streams (over https, once it has come whole) and
    /// renamed into place only when it matches the pin. Blocking: called while staging, off
    /// the cooperative pool.
    public func fetch(_ source: RemoteSource, sha256: String, plugin: String) -> Result<String, PlugboardError> {
        do throws(PlugboardError) {
            if let hit = try cache.verifiedEntry(sha256: sha256) {
                logger.debug("plugin found in the cache", metadata: ["plugin": .string(plugin), "sha256": .string(String(sha256.prefix(12)))])
                return .success(hit)
            }
            logger.info("fetching plugin", metadata: ["plugin": .string(plugin), "source": .string(source.shown),
                                                       "sha256": .string(String(sha256.prefix(12)))])
            return .success(try download(source, sha256: sha256, plugin: plugin))
        } catch {
            return .failure(error)
        }
    }

    private func download(_ source: RemoteSource, sha256: String, plugin: String) throws(PlugboardError) -> String {
        let store = PluginStore(environment: configuration.processEnvironment)
        let purpose = PluginStore.Purpose.plugin(plugin)
        var attempt = 0
        while true {
            let request = try store.request(.get, source, purpose: purpose)
            let (response, opened) = try store.send(request, source: source, streaming: true, purpose: purpose)
            guard (200..<300).contains(response.status) else {
                throw store.refusal(response, request, source: source, purpose: purpose)
            }
            guard let body = opened else {
                // Over https the body came whole with the answer: one piece, then the end.
                var pieces = [response.body]
                return try cache.write(sha256: sha256, source: source.shown, plugin: plugin) { () throws(PlugboardError) -> [UInt8]? in
                    pieces.popLast()
                }
            }
            // A connection that breaks in the middle of the body is worth another attempt,
            // from the start; a digest that does not match is not.
            var broken: String?
            do {
                return try cache.write(sha256: sha256, source: source.shown, plugin: plugin) { () throws(PlugboardError) -> [UInt8]? in
                    do {
                        return try PluginStore.wait { try await body.next() }
                    } catch {
                        broken = (error as? TransportFailure)?.description ?? "\(error)"
                        throw PlugboardError(.sourceUnreachable,
                            "the store's answer for plugin \"\(plugin)\"'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512)) broke off",
                            detail: "After \(body.bytesReceived) bytes of \(body.length.map(String.init) ?? "an unknown length"): \(broken ?? "").",
                            hint: "Check the store and the network between it and this host, then reload.")
                    }
                }
            } catch {
                guard broken != nil, attempt < store.retry.maxRetries else { throw error }
                PluginStore.sleep(store.retry.delay(beforeRetry: attempt))
                attempt += 1
            }
        }
    }
}
