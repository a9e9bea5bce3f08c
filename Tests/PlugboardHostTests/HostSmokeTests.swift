import PlugboardHost
import Testing

@Test func hostModuleLinks() { _ = PlugboardHost.self }
