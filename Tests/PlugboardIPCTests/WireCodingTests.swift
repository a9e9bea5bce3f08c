import PlugboardIPC
import Testing

@Suite struct WireCodingTests {
    @Test func whatIsWrittenReadsBackTheSame() throws {
        var writer = WireWriter()
        writer.u8(7)
        writer.bool(true)
        writer.u32(0xFFFF_FFFF)
        writer.i64(-5)
        writer.int(Int.max)
        writer.string("caf\u{E9}/\u{1F600}")
        writer.optionalString(nil)
        writer.optionalString("x")
        writer.strings(["b": "2", "a": "1"])
        writer.data([0, 255])
        var reader = WireReader(writer.bytes)
        #expect(try reader.u8() == 7)
        #expect(try reader.bool())
        #expect(try reader.u32() == 0xFFFF_FFFF)
        #expect(try reader.i64() == -5)
        #expect(try reader.int() == Int.max)
        #expect(try reader.string() == "caf\u{E9}/\u{1F600}")
        #expect(try reader.optionalString() == nil)
        #expect(try reader.optionalString() == "x")
        #expect(try reader.strings() == ["a": "1", "b": "2"])
        #expect(try reader.data() == [0, 255])
        #expect(reader.isAtEnd)
    }

    @Test func shortOrHostileBytesAreErrors_neverTraps() {
        var short = WireReader([1, 0])
        #expect(throws: IPCError.malformed("expected 4 bytes of the length of key at offset 0, found 2")) { try short.string("key") }
        var huge = WireReader([0xFF, 0xFF, 0xFF, 0x7F])
        #expect(throws: IPCError.self) { try huge.strings() }
        var notUTF8 = WireReader([2, 0, 0, 0, 0xC3, 0x28])
        #expect(throws: IPCError.malformed("key is not UTF-8")) { try notUTF8.string("key") }
        var flag = WireReader([2])
        #expect(throws: IPCError.malformed("expected 0 or 1 for a flag, found 2")) { try flag.bool() }
    }
}
