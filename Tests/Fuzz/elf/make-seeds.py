#!/usr/bin/env python3
"""Writes the ELF target's crafted seeds into Tests/Fuzz/elf/corpus/.

A real plugin is megabytes, far beyond what a fuzzer mutates well, so the seeds are
small 64-bit ELF shared objects built field by field: a section name table, a
plugboard_header section (a valid header, and ones with a bad magic, a newer API and a
short size), a .comment naming the toolchain, and a dynamic section with NEEDED names
and its string table. Together they reach every branch of ELFImage and PluginHeader.
Run it again after a change to the header layout (docs/PLUGIN_HEADER.md).
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLCHAIN = b"clang version 21.0.0 (https://github.com/swiftlang/llvm-project.git 0123456789abcdef)"


def elf(header_words=(0x44524250, 1, 1, 1, 1), header_bytes=None, needed=(b"libPlugboardAPI.so", b"libswiftCore.so"),
        machine=62, etype=3):
    names = [b"", b".shstrtab", b"plugboard_header", b".comment", b".dynstr", b".dynamic", b".bss"]
    shstrtab = b"\0".join(names[1:])
    shstrtab = b"\0" + shstrtab + b"\0"
    offsets = {}
    at = 0
    for n in names[1:]:
        offsets[n] = shstrtab.index(n + b"\0", 1)
    header = header_bytes if header_bytes is not None else struct.pack("<5I", *header_words)
    comment = b"\0" + TOOLCHAIN + b"\0GCC: (Debian 12.2.0-14) 12.2.0\0"
    dynstr = b"\0"
    dyn_entries = []
    for lib in needed:
        dyn_entries.append((1, len(dynstr)))
        dynstr += lib + b"\0"
    dyn_entries.append((0, 0))
    dynamic = b"".join(struct.pack("<QQ", t, v) for t, v in dyn_entries)

    contents = [shstrtab, header, comment, dynstr, dynamic]
    body = b""
    placed = []
    base = 64
    for c in contents:
        placed.append((base + len(body), len(c)))
        body += c
        body += b"\0" * ((-len(body)) % 8)
    shoff = base + len(body)
    # (name, type, offset, size, link)
    sections = [(0, 0, 0, 0, 0),
                (offsets[b".shstrtab"], 3) + placed[0] + (0,),
                (offsets[b"plugboard_header"], 1) + placed[1] + (0,),
                (offsets[b".comment"], 1) + placed[2] + (0,),
                (offsets[b".dynstr"], 3) + placed[3] + (0,),
                (offsets[b".dynamic"], 6) + placed[4] + (4,),
                (offsets[b".bss"], 8, 0x10000, 0x1000, 0)]
    table = b""
    for name, stype, off, size, link in sections:
        table += struct.pack("<IIQQQQIIQQ", name, stype, 0, 0, off, size, link, 0, 1, 0)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", etype, machine, 1, 0, 0, shoff, 0, 64, 56, 0, 64, len(sections), 1)
    return ehdr + body + table


def with_section_field(data, index, field, value):
    """`data` with a 64-bit field of section header `index` replaced (issue 10, item 1:
    a plugboard_header size of 2^63 once trapped the reader)."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    out = bytearray(data)
    struct.pack_into("<Q", out, shoff + index * 64 + field, value)
    return bytes(out)


def main():
    folder = os.path.join(HERE, "corpus")
    os.makedirs(folder, exist_ok=True)
    seeds = {
        "plugin.so": elf(),
        "plugin-newer-api.so": elf(header_words=(0x44524250, 1, 1, 1, 99)),
        "plugin-bad-magic.so": elf(header_words=(0x12345678, 1, 1, 1, 1)),
        "plugin-short-header.so": elf(header_bytes=b"PBRD\1\0\0\0"),
        "executable-for-aarch64": elf(machine=183, etype=2),
        "sibling-no-needed.so": elf(needed=()),
        "elf-header-only": elf()[:64],
        "header-size-2pow63.so": with_section_field(elf(), 2, 0x20, 1 << 63),
        "header-offset-near-max.so": with_section_field(elf(), 2, 0x18, (1 << 64) - 8),
    }
    for name, data in seeds.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
