/// The one walk over plugins in load order, shared by start, `check`, the preflight child
/// and every preflight's verdicts (a reload's, a checked start's, `check`'s): it visits the
/// items in the order given, which is already load order (each after the plugins it
/// `requires`: ``Manifest/selectedPlugins(for:)``, or a preflight request's list), sorts
/// nothing itself, and does not try one whose requirement is not available. Staging is not
/// part of it: every selected plugin is staged before the walk.
///
/// What "available" means is the caller's: active in this process (start, the child),
/// staged and left for the child to judge (`check`), or passed in this preflight or kept
/// from the running generation (a preflight's verdicts: the requirements outside its
/// candidates are the reload's kept providers).
struct DependencyWalk<Item> {
    let name: (Item) -> String
    let requires: (Item) -> [String]

    /// Visits `items` in order. `visit` tries one and answers whether the plugins that
    /// require it may follow; one that requires a plugin not available (in `available`
    /// from the start, or visited with true) goes to `blocked` with that requirement.
    func run(_ items: [Item], available: Set<String> = [], visit: (Item) async -> Bool,
             blocked: (Item, _ requirement: String) -> Void) async {
        var available = available
        for item in items {
            if let requirement = requires(item).first(where: { !available.contains($0) }) {
                blocked(item, requirement)
                continue
            }
            if await visit(item) { available.insert(name(item)) }
        }
    }
}

extension DependencyWalk where Item == ManifestPlugin {
    init() {
        self.init(name: \.name, requires: \.dependencies)
    }
}
