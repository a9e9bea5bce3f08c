// Plugin authors import one module for their tests: the in-memory storage comes with it.
@_exported import InMemoryStorage
