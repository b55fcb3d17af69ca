import Foundation

/// The objects a context knows, each found by its id: a hash table of the objects themselves, each object's key its
/// own ``ManagedObject/objectID``.
///
/// A fetch registers every object it reads, thousands at a time. A `Dictionary` keyed by ``ManagedObjectID`` made
/// that a quarter of a large fetch: a 40-byte key copied beside each object (its entity's name retained), SipHash
/// over the UUID, a table twice as wide. Here a bucket is one reference, the id is read from the object, and the
/// bucket comes from mixing the UUID's two words with a seed drawn once a process (ids are random already; the seed
/// keeps ids another device chose from piling into one run of buckets). Linear probing, at most half full,
/// removals shifting the run back so that no tombstones are left.
///
/// The table does not retain its objects: a list in the order they were registered does (each object keeping its
/// place, ``ManagedObject/registryPlace``). A context that goes away then releases its objects in the order a fetch
/// made them, one after another in memory, rather than in the table's scattered order, where releasing each was a
/// miss of the processor's cache; that release was a third of a large fetch in a context made for it.
///
/// A fetch into a context that knows no objects yet appends what it makes to the list alone (its rows are
/// distinct by their primary key): the table takes them in when an id is first looked up, so a context made for one
/// fetch, read and let go, never hashes them.
///
/// Every object's ``ManagedObject/objectID`` must stay what it was registered under until it is removed: the
/// context removes an object before giving it its permanent id.
struct ObjectRegistry {
    /// The table, each bucket an object ``ordered`` holds.
    private var buckets: [Unmanaged<ManagedObject>?] = []
    /// The registered objects, in the order they were registered but for removals (the last moved into the gap).
    private var ordered: [ManagedObject] = []
    /// How many objects at the end of ``ordered`` the table does not hold yet (``appendUnindexed(_:)``).
    private var unindexed = 0
    /// How many objects are registered.
    var count: Int { ordered.count }

    private static let seed: (UInt64, UInt64) = (.random(in: .min ... .max), .random(in: .min ... .max))

    /// The object registered with `id`.
    subscript(id: ManagedObjectID) -> ManagedObject? {
        mutating get { find(id).object }
        set {
            if let object = newValue {
                precondition(object.objectID == id, "an object is registered under its own id")
                var (bucket, existing) = find(id)
                if let existing {
                    guard existing !== object else { return }
                    removeFromOrder(existing)
                    buckets[bucket] = .passUnretained(object)
                    addToOrder(object)
                    return
                }
                if grow(toHold: count + 1) { bucket = find(id).bucket }
                insert(object, at: bucket)
            } else {
                let (bucket, existing) = find(id)
                if existing != nil { remove(at: bucket) }
            }
        }
    }

    /// The object registered with `id`, or the one `make` makes, registered with one search of the table.
    mutating func object(for id: ManagedObjectID, orRegister make: () -> ManagedObject) -> ManagedObject {
        var (bucket, existing) = find(id)
        if let existing { return existing }
        if grow(toHold: count + 1) { bucket = find(id).bucket }
        let object = make()
        insert(object, at: bucket)
        return object
    }

    /// Registers `object`, whose id no registered object has, without placing it in the table yet: a fetch's
    /// objects, which the table takes in when an id is next looked up.
    /// - Precondition: no registered object has `object`'s id.
    mutating func appendUnindexed(_ object: ManagedObject) {
        addToOrder(object)
        unindexed += 1
    }

    /// Makes room for `capacity` objects in all, so that registering them does not grow the table again; only in
    /// the list when `indexing` is `false` (for ``appendUnindexed(_:)``).
    mutating func reserveCapacity(_ capacity: Int, indexing: Bool = true) {
        ordered.reserveCapacity(capacity)
        if indexing { _ = grow(toHold: capacity) }
    }

    /// Every registered object, in no particular order.
    var values: [ManagedObject] { ordered }

    /// Forgets every object.
    mutating func removeAll() {
        buckets = []
        ordered = []
        unindexed = 0
    }

    // MARK: - The table

    /// The bucket of `id` in a table of `bucketCount` buckets (a power of two).
    private func home(of id: ManagedObjectID, in bucketCount: Int) -> Int {
        let (first, second) = id.words
        let bits = UInt64(bucketCount.trailingZeroBitCount)
        var mixed = (first ^ Self.seed.0) &* 0x9E37_79B9_7F4A_7C15
        mixed ^= second ^ Self.seed.1
        mixed &*= 0xBF58_476D_1CE4_E5B9
        mixed ^= mixed >> 31
        return Int(truncatingIfNeeded: mixed >> (64 - bits))
    }

    /// The bucket holding `id`'s object, or the empty one it would go in, once the table holds every object.
    private mutating func find(_ id: ManagedObjectID) -> (bucket: Int, object: ManagedObject?) {
        if unindexed > 0 { index() }
        guard !buckets.isEmpty else { return (0, nil) }
        let mask = buckets.count - 1
        var bucket = home(of: id, in: buckets.count)
        while let entry = buckets[bucket] {
            // The UUID first: it tells objects apart, the entity's name and temporariness rarely do.
            let matches = entry._withUnsafeGuaranteedRef { object in
                object.objectID.hasSameUUID(as: id) && object.objectID == id
            }
            if matches { return (bucket, entry.takeUnretainedValue()) }
            bucket = (bucket + 1) & mask
        }
        return (bucket, nil)
    }

    /// Places the objects ``appendUnindexed(_:)`` registered in the table.
    private mutating func index() {
        let first = ordered.count - unindexed
        unindexed = 0
        // Growing places every object.
        guard !grow(toHold: ordered.count) else { return }
        let mask = buckets.count - 1
        for object in ordered[first...] {
            var bucket = home(of: object.objectID, in: buckets.count)
            while buckets[bucket] != nil { bucket = (bucket + 1) & mask }
            buckets[bucket] = .passUnretained(object)
        }
    }

    /// Puts `object` in the empty `bucket`.
    private mutating func insert(_ object: ManagedObject, at bucket: Int) {
        buckets[bucket] = .passUnretained(object)
        addToOrder(object)
    }

    private mutating func addToOrder(_ object: ManagedObject) {
        object.registryPlace = ordered.count
        ordered.append(object)
    }

    /// Takes `object` out of ``ordered``, the last object moving into its place.
    private mutating func removeFromOrder(_ object: ManagedObject) {
        let place = object.registryPlace
        precondition(ordered.indices.contains(place) && ordered[place] === object, "a registered object")
        let last = ordered.removeLast()
        if last !== object {
            ordered[place] = last
            last.registryPlace = place
        }
        object.registryPlace = -1
    }

    /// Grows the table when `capacity` objects would fill more than half of it.
    /// - Returns: Whether it grew (buckets found before are stale).
    private mutating func grow(toHold capacity: Int) -> Bool {
        guard capacity * 2 > buckets.count else { return false }
        var size = max(16, buckets.count)
        while capacity * 2 > size { size *= 2 }
        rebuild(size: size)
        return true
    }

    /// Places every object again in a table of `size` buckets.
    private mutating func rebuild(size: Int) {
        unindexed = 0
        buckets = Array(repeating: nil, count: size)
        let mask = size - 1
        for object in ordered {
            var bucket = home(of: object.objectID, in: size)
            while buckets[bucket] != nil { bucket = (bucket + 1) & mask }
            buckets[bucket] = .passUnretained(object)
        }
    }

    /// Empties `bucket` and moves back each object after it in its run that would no longer be found past the gap.
    private mutating func remove(at bucket: Int) {
        let mask = buckets.count - 1
        if let removed = buckets[bucket] { removeFromOrder(removed.takeUnretainedValue()) }
        buckets[bucket] = nil
        var gap = bucket
        var next = (bucket + 1) & mask
        while let entry = buckets[next] {
            let home = home(of: entry._withUnsafeGuaranteedRef { $0.objectID }, in: buckets.count)
            // The object may fill the gap when its home is not inside (gap, next], cyclically.
            let homeAfterGap = gap <= next ? (home > gap && home <= next) : (home > gap || home <= next)
            if !homeAfterGap {
                buckets[gap] = entry
                buckets[next] = nil
                gap = next
            }
            next = (next + 1) & mask
        }
    }
}
