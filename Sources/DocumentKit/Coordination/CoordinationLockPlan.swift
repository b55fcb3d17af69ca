/// How a lock is held: readers share, writers exclude.
enum CoordinationLockMode: Int, Comparable, Sendable {
    case shared, exclusive
    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The locks one coordination takes, in the one order every coordinator takes locks in.
///
/// Access to a path takes shared locks on every ancestor directory and a shared (read) or exclusive (write) lock on
/// the path itself. Locks wanted by several items are merged (the strongest mode wins) and sorted by key, so two
/// coordinations never wait on each other in opposite orders.
struct CoordinationLockPlan: Equatable, Sendable {
    struct Lock: Equatable, Sendable {
        var key: String
        var mode: CoordinationLockMode
        /// The item this lock is taken for (for error messages).
        var item: String
    }
    private(set) var locks: [Lock] = []

    /// The plan for `items`: lock keys (canonical paths, packages as a whole) with the mode each needs.
    init(items: [(key: String, mode: CoordinationLockMode)]) {
        var byKey: [String: Lock] = [:]
        func want(_ key: String, _ mode: CoordinationLockMode, for item: String) {
            if let existing = byKey[key], existing.mode >= mode { return }
            byKey[key] = Lock(key: key, mode: mode, item: item)
        }
        for item in items {
            for ancestor in CoordinationPath.ancestors(of: item.key) { want(ancestor, .shared, for: item.key) }
        }
        for item in items { want(item.key, item.mode, for: item.key) }
        locks = byKey.values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}
