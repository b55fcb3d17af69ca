import Foundation
import Synchronization
import UbiquityProtocol

/// The decoded records of the items written or read lately, so that an operation's reads of its item, and a write's
/// look at the record it replaces, do not read and decode the same JSON again (a new small file cost about ten such
/// decodes on its way up).
///
/// The cache never holds what the database does not, and readers never mix it with a snapshot it lags behind:
/// - Writes of item records run one at a time through ``write(_:)``, which puts what a write stored into the cache
///   after its transaction committed, before the next write begins; inside a write the cache is exact.
/// - The ``generation`` counts a write's start and its end, so it is odd while a write is under way: its
///   transaction may have committed rows the cache does not hold yet.
/// - A read uses the cache only when it began with no write under way and none began before it looked
///   (``records(_:readAt:)``, ``keep(_:readAt:)``): then its snapshot and the cache agree. A lone lookup
///   (``record(_:)``) answers only while no write is under way, so no read returns a record older than one an
///   earlier read returned.
///
/// It holds at most ``capacity`` records, dropping arbitrary ones when full.
final class RecordCache: Sendable {
    /// The most records kept.
    static let capacity = 8192

    private struct State {
        var records: [ItemID: StoredItem] = [:]
        var generation: UInt64 = 0
        var isWriting: Bool { generation % 2 == 1 }
    }

    private let state = Mutex(State())

    /// Held around each write of item records and its update of the cache.
    private let writing = NSLock()

    /// The generation a read begins at, for ``records(_:readAt:)`` and ``keep(_:readAt:)``; `nil` while a write
    /// is under way (the read must then not use the cache).
    var readGeneration: UInt64? {
        state.withLock { $0.isWriting ? nil : $0.generation }
    }

    /// The cached record of `id`; `nil` also while a write is under way.
    func record(_ id: ItemID) -> StoredItem? {
        state.withLock { $0.isWriting ? nil : $0.records[id] }
    }

    /// The cached record of `id` inside ``write(_:)``, where the cache is exact.
    func recordWhileWriting(_ id: ItemID) -> StoredItem? {
        state.withLock { $0.records[id] }
    }

    /// The cached records among `ids`: inside ``write(_:)`` when `generation` is `nil`; else none when a write
    /// began since the read began at `generation` (a cached record could then be older or newer than the rows a
    /// query matched, and mixing them would answer a question nobody asked: a record found under a path it has
    /// left).
    func records(_ ids: some Sequence<ItemID>, readAt generation: UInt64?) -> [ItemID: StoredItem] {
        state.withLock { state in
            if let generation, state.generation != generation { return [:] }
            var found: [ItemID: StoredItem] = [:]
            for id in ids { found[id] = state.records[id] }
            return found
        }
    }

    /// Keeps records a read decoded, unless a write began since the read began at `generation`.
    func keep(_ records: [StoredItem], readAt generation: UInt64) {
        guard !records.isEmpty else { return }
        state.withLock { state in
            guard state.generation == generation else { return }
            for record in records { Self.put(record, into: &state) }
        }
    }

    /// Runs `body`, a write transaction of item records, after every other such write; `body` returns its value
    /// and what it stored (`nil`: removed, or changed by a write that did not decode it), by item. When `body`
    /// throws, the cache is emptied: what it committed is unknown.
    func write<Value>(_ body: () throws -> (Value, [(ItemID, StoredItem?)])) throws -> Value {
        writing.lock()
        defer { writing.unlock() }
        state.withLock { $0.generation &+= 1 }
        do {
            let (value, changes) = try body()
            state.withLock { state in
                for (id, record) in changes {
                    if let record {
                        Self.put(record, into: &state)
                    } else {
                        state.records[id] = nil
                    }
                }
                state.generation &+= 1
            }
            return value
        } catch {
            state.withLock { state in
                state.records = [:]
                state.generation &+= 1
            }
            throw error
        }
    }

    /// Runs `body`, which empties the database, after every other write of item records, and empties the cache
    /// whatever `body` did: reads that began before see no cached record from then.
    func emptying(_ body: () throws -> Void) throws {
        writing.lock()
        defer { writing.unlock() }
        state.withLock { $0.generation &+= 1 }
        defer {
            state.withLock { state in
                state.records = [:]
                state.generation &+= 1
            }
        }
        try body()
    }

    private static func put(_ record: StoredItem, into state: inout State) {
        if state.records[record.id] == nil, state.records.count >= capacity, let any = state.records.keys.first {
            state.records[any] = nil
        }
        state.records[record.id] = record
    }
}
