/// The `requires` relation among a list of plugins (with `wraps`, which implies one):
/// load order and cycles.
///
/// Iterative throughout, so a long chain of requirements cannot exhaust the stack.
struct RequirementGraph {
    /// `requirements[i]`: the positions of the plugins that plugin `i` requires, in the
    /// order written, then the one it wraps; names not in the list are left out.
    let requirements: [[Int]]

    init(plugins: [ManifestPlugin]) {
        var position: [String: Int] = [:]
        for (i, p) in plugins.enumerated() where position[p.name] == nil { position[p.name] = i }
        requirements = plugins.map { p in p.dependencies.compactMap { position[$0] } }
    }

    /// Every position once, each after those it requires; among the positions that are
    /// ready at the same time, the smallest first (Kahn's algorithm with a min-heap).
    /// Positions on a cycle (which a validated manifest has none of) come last, in order.
    func topologicalOrder() -> [Int] {
        let n = requirements.count
        var dependents = [[Int]](repeating: [], count: n)
        var waiting = [Int](repeating: 0, count: n)
        for (i, required) in requirements.enumerated() {
            for r in Set(required) where r != i {
                dependents[r].append(i)
                waiting[i] += 1
            }
            if required.contains(i) { waiting[i] += 1 }
        }
        var ready = MinHeap()
        for i in 0..<n where waiting[i] == 0 { ready.push(i) }
        var order: [Int] = []
        order.reserveCapacity(n)
        while let i = ready.pop() {
            order.append(i)
            for d in dependents[i] {
                waiting[d] -= 1
                if waiting[d] == 0 { ready.push(d) }
            }
        }
        if order.count < n {
            let placed = Set(order)
            order += (0..<n).filter { !placed.contains($0) }
        }
        return order
    }

    /// The first cycle found by a depth-first search that starts from each position in
    /// order and follows requirements in the order written, as the positions along it
    /// (`[a, b]` for `a -> b -> a`), or nil.
    func firstCycle() -> [Int]? {
        enum Mark { case unvisited, onPath, done }
        var mark = [Mark](repeating: .unvisited, count: requirements.count)
        for start in requirements.indices where mark[start] == .unvisited {
            // The path from `start`, each with the index of its next requirement to follow.
            var path: [(node: Int, next: Int)] = [(start, 0)]
            mark[start] = .onPath
            while let top = path.last {
                let edges = requirements[top.node]
                guard top.next < edges.count else {
                    mark[top.node] = .done
                    path.removeLast()
                    continue
                }
                path[path.count - 1].next += 1
                let target = edges[top.next]
                switch mark[target] {
                case .unvisited:
                    mark[target] = .onPath
                    path.append((target, 0))
                case .onPath:
                    guard let from = path.firstIndex(where: { $0.node == target }) else { continue }
                    return path[from...].map(\.node)
                case .done:
                    continue
                }
            }
        }
        return nil
    }
}

extension RequirementGraph {
    /// A binary min-heap of positions.
    private struct MinHeap {
        private var items: [Int] = []

        mutating func push(_ value: Int) {
            items.append(value)
            var child = items.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard items[child] < items[parent] else { break }
                items.swapAt(child, parent)
                child = parent
            }
        }

        mutating func pop() -> Int? {
            guard let first = items.first else { return nil }
            let last = items.removeLast()
            guard !items.isEmpty else { return first }
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < items.count, items[left] < items[smallest] { smallest = left }
                if right < items.count, items[right] < items[smallest] { smallest = right }
                guard smallest != parent else { return first }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
