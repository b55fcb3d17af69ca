/// The objects a context inserted, changed or deleted since its last save.
///
/// A list in which each object keeps its own place (``ManagedObject/pendingPlace``), so that adding, finding and
/// removing one costs no hashing: a context adds every object it inserts and every one whose values change, thousands
/// in a bulk insert. Used under the context's lock, as the objects' other state is.
struct PendingObjects: Sequence {
    private var objects: [ManagedObject] = []

    /// Adds `object` unless it is here.
    mutating func insert(_ object: ManagedObject) {
        guard !contains(object) else { return }
        object.pendingPlace = objects.count
        objects.append(object)
    }

    /// Removes `object` if it is here; the last object takes its place.
    mutating func remove(_ object: ManagedObject) {
        guard contains(object) else { return }
        let place = object.pendingPlace
        let last = objects.removeLast()
        if last !== object {
            objects[place] = last
            last.pendingPlace = place
        }
        object.pendingPlace = -1
    }

    func contains(_ object: ManagedObject) -> Bool {
        let place = object.pendingPlace
        return place >= 0 && place < objects.count && objects[place] === object
    }

    mutating func removeAll() {
        for object in objects { object.pendingPlace = -1 }
        objects.removeAll()
    }

    var isEmpty: Bool { objects.isEmpty }
    var count: Int { objects.count }

    func makeIterator() -> IndexingIterator<[ManagedObject]> { objects.makeIterator() }
    var underestimatedCount: Int { objects.count }
}
