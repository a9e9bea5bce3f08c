// libFuzzer target: the loader's ELF reader and the plugin header, everything the host
// reads from a plugin file before dlopen (docs/SECURITY.md). Built by Tests/Fuzz/build.sh
// together with Sources/PlugboardHost/Loader/ELFImage.swift and Toolchain.swift; the
// header comes from PlugboardAPI.
import PlugboardAPI

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzELF(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    // What PluginInspection does with a file's bytes, in its order, without the file.
    guard let image = try? ELFImage(bytes: bytes) else { return 0 }
    _ = (image.className, image.machineName, image.typeName)
    if let section = image.section(named: PluginHeader.sectionName),
       let header = try? PluginHeader(bytes: section, plugin: "Fuzz") {
        _ = try? header.checkCompatible(plugin: "Fuzz")
    }
    _ = Toolchain.identify(image.comments)
    _ = image.neededLibraries
    return 0
}
