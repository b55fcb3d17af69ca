import Foundation
import Synchronization
import UbiquityProtocol

/// The decoded records of the items written or read lately, so that an operation's reads of its item, and a write's
/// look at the record it replaces, do not read and decode the same JSON again (a new small file cost about ten such
/// decodes on its way up).
///
/// The cache never holds what the database does not: writes of item records are serialized by ``writing``, and a
/// write puts what it stored into the cache after its transaction committed, before the next write begins — so
/// inside a write the cache is exact. A read puts what it decoded into the cache only when no write committed since
/// it began (the ``generation`` it saw is still current); otherwise a read of an older snapshot could overwrite a
/// newer record. It holds at most ``capacity`` records, dropping arbitrary ones when full.
final class RecordCache: Sendable {
    /// The most records kept.
    static let capacity = 8192

    private struct State {
        var records: [ItemID: StoredItem] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Held around each write of item records and its update of the cache.
    let writing = NSLock()

    /// The count of writes committed so far; a read notes it before it begins.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// The cached record of `id`.
    func record(_ id: ItemID) -> StoredItem? {
        state.withLock { $0.records[id] }
    }

    /// The cached records among `ids`; none when `generation` is given and a write committed since (a cached
    /// record would then be newer than the rows a query matched, and mixing them would answer a question nobody
    /// asked: a record found under a path it has left).
    func records(_ ids: some Sequence<ItemID>, readAt generation: UInt64? = nil) -> [ItemID: StoredItem] {
        state.withLock { state in
            if let generation, state.generation != generation { return [:] }
            var found: [ItemID: StoredItem] = [:]
            for id in ids { found[id] = state.records[id] }
            return found
        }
    }

    /// Keeps records a read decoded, unless a write committed since the read began at `generation`.
    func keep(_ records: [StoredItem], readAt generation: UInt64) {
        guard !records.isEmpty else { return }
        state.withLock { state in
            guard state.generation == generation else { return }
            for record in records { Self.put(record, into: &state) }
        }
    }

    /// What a committed write stored (`nil`: removed, or changed by a write that did not decode it), by item.
    func committed(_ changes: [(ItemID, StoredItem?)]) {
        state.withLock { state in
            state.generation &+= 1
            for (id, record) in changes {
                if let record {
                    Self.put(record, into: &state)
                } else {
                    state.records[id] = nil
                }
            }
        }
    }

    private static func put(_ record: StoredItem, into state: inout State) {
        if state.records[record.id] == nil, state.records.count >= capacity, let any = state.records.keys.first {
            state.records[any] = nil
        }
        state.records[record.id] = record
    }
}
