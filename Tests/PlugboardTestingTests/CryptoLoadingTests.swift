@testable import PlugboardCrypto
import Testing

@Suite("Loading libcrypto")
struct CryptoLoadingTests {
    @Test func missingLibrary_failsWithMessageNamingItAndInstallHint() {
        let result = LibCrypto.load("libplugboard-no-such-crypto.so.9")
        guard case .failure(let error) = result else {
            Issue.record("loading a library that does not exist succeeded")
            return
        }
        #expect(error.message == "could not load library \"libplugboard-no-such-crypto.so.9\"")
        #expect(error.detail?.contains("libplugboard-no-such-crypto.so.9") == true)
        #expect(error.hint?.contains("apt-get install libssl3") == true)
        #expect(error.description.contains("HINT: "))
    }

    @Test func libraryWithoutTheFunctions_failsNamingTheMissingFunction() {
        // libm is on every glibc system and exports none of the EVP functions.
        let result = LibCrypto.load("libm.so.6")
        guard case .failure(let error) = result else {
            Issue.record("libm.so.6 was accepted as libcrypto")
            return
        }
        #expect(error.message.hasPrefix("could not find function \"EVP_"))
        #expect(error.message.hasSuffix("in library \"libm.so.6\""))
    }

    @Test func realLibrary_loadsOnceAndIsShared() throws {
        let first = try LibCrypto.get()
        let second = try LibCrypto.get()
        #expect(first.sha256 != nil)
        #expect(first.md5 != nil)
        #expect(first.sha256 == second.sha256)
    }
}
