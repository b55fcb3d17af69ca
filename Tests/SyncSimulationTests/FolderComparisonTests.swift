import Foundation
import SyncEngine
import SyncSimulation
import Testing
import UbiquityProtocol

/// The start-up comparison a folder at a time gives what the comparison of the whole container gives, on random
/// containers: items kept, changed, moved within and across folders, gone with their folders, made on both sides,
/// and new.
@Suite("FolderComparison: a folder at a time, the same as the whole")
struct FolderComparisonTests {
    static let folders = ["", "Documents", "Documents/A", "Documents/B", "Documents/A/C", "Documents/Gone"]
    static let names = ["a.txt", "b.txt", "c.txt", "d", "e.txt"]

    /// A random path of a random folder.
    static func path(_ random: inout SeededGenerator) -> ItemPath {
        let folder = folders.randomElement(using: &random)!
        let name = names.randomElement(using: &random)!
        return try! ItemPath(folder.isEmpty ? name : folder + "/" + name)
    }

    static func identity(_ inode: UInt64, _ random: inout SeededGenerator) -> LocalFileIdentity {
        let modified = Int64.random(in: 1...3, using: &random) * 1_000_000_000_000
        var identity = LocalFileIdentity(device: 1, inode: inode, size: 5, modified: modified, changed: modified)
        identity.capturedAt = modified + 60_000_000_000
        return identity
    }

    /// Items with random local, synced and remote views, each on its own file (inode), and a scan of the disk: some
    /// of the items' files where they were (changed or not), some moved, some gone; files nobody knew; no two files
    /// one inode, and no two items never agreed on at one path of the service (both would make the whole
    /// comparison's choice arbitrary).
    static func container(_ random: inout SeededGenerator) -> ([ItemID: ItemObservation], [ItemPath: ScannedItem]) {
        var items: [ItemID: ItemObservation] = [:]
        var scanned: [ItemPath: ScannedItem] = [:]
        var inode: UInt64 = 100
        var remoteOnly: Set<ItemPath> = []
        for _ in 0..<Int.random(in: 0...14, using: &random) {
            inode += 1
            let id = ItemID(uuid: random.uuid())
            let kind: ItemKind = Bool.random(using: &random) ? .file : .directory
            let known = identity(inode, &random)
            let at = path(&random)
            var item = ItemObservation(id: id)
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                item.local = LocalView(path: at, kind: kind, identity: known)
            case 1:
                item.synced = SyncedView(path: at, kind: kind, identity: known)
                item.local = LocalView(path: at, kind: kind, identity: known)
            case 2:
                item.synced = SyncedView(path: at, kind: kind, identity: Bool.random(using: &random) ? known : nil)
            default:
                guard remoteOnly.insert(at).inserted else { continue }
                item.remote = RemoteView(path: at, kind: kind, isDeleted: Int.random(in: 0..<4, using: &random) == 0)
            }
            if item.remote == nil, Bool.random(using: &random) {
                let remote = path(&random)
                if item.synced != nil || remoteOnly.insert(remote).inserted {
                    item.remote = RemoteView(path: remote, kind: kind)
                }
            }
            items[id] = item
            // Its file: where it was, elsewhere (moved), or gone.
            switch Int.random(in: 0..<4, using: &random) {
            case 0, 1:
                scanned[at] = ScannedItem(path: at, kind: kind, identity: identity(inode, &random))
            case 2:
                let moved = path(&random)
                scanned[moved] = ScannedItem(path: moved, kind: kind, identity: identity(inode, &random))
            default: break
            }
        }
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            inode += 1
            let at = path(&random)
            scanned[at] = ScannedItem(path: at, kind: .file, identity: identity(inode, &random))
        }
        // No entry inside a file's path: a folder's entries are what a scan finds there.
        return (items, scanned)
    }

    /// The folder a path is an entry of.
    static func parent(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
    }

    @Test("500 random containers compared folder by folder end as the whole comparison leaves them")
    func sameAsTheWhole() throws {
        var madeEarly = 0
        for seed in UInt64(1)...500 {
            var random = SeededGenerator(seed: seed)
            let (items, scanned) = Self.container(&random)

            var whole = items
            var wholeIDs = SeededGenerator(seed: seed ^ 0xFACE)
            LocalObservation.apply(scanned, to: &whole) { ItemID(uuid: wholeIDs.uuid()) }

            // The folders on disk are those of the entries (and the container's own); "Documents/Gone" has none.
            var parts = items
            var comparison = FolderComparison()
            var partIDs = SeededGenerator(seed: seed ^ 0xFACE)
            let onDisk = Set(scanned.keys.map { Self.parent($0.string) }).union([""])
            let byFolder = Dictionary(grouping: items.values) { Self.parent(StoredItem($0).path.string) }
            for folder in onDisk.sorted() {
                let entries = scanned.values.filter { Self.parent($0.path.string) == folder }
                for changed in comparison.compare(byFolder[folder] ?? [], with: Array(entries)) {
                    parts[changed.id] = changed
                }
                // What the engine asks its state database: entries no record could claim at the end, with no item at
                // their path as apps see it.
                let certainlyNew = comparison.leftInFolder.filter { entry in
                    !items.values.contains {
                        ($0.local?.identity ?? $0.synced?.identity)?.inode == entry.identity.inode
                            || ($0.remote.map { !$0.isDeleted && $0.path.collisionKey == entry.path.collisionKey }
                                ?? false)
                            || StoredItem($0).path == entry.path
                    }
                }
                for item in comparison.createNow(certainlyNew.map(\.path), newID: { ItemID(uuid: partIDs.uuid()) }) {
                    parts[item.id] = item
                    madeEarly += 1
                }
            }
            for (folder, away) in byFolder where !onDisk.contains(folder) {
                #expect(comparison.compare(away, with: []).isEmpty)
            }
            comparison.matchMoves()
            var owners: [ItemPath: ItemID] = [:]
            for path in comparison.pathsLeft {
                let candidates = items.values.filter {
                    StoredItem($0).path == path && $0.local == nil && $0.synced == nil && $0.remote?.isDeleted == false
                }
                owners[path] = candidates.map(\.id).min { $0.string < $1.string }
            }
            let outcome = comparison.finish(remoteOwners: owners)
            for (id, local) in outcome.localViews { parts[id]?.local = local }
            // A batch of two at a time, as the engine takes a batch of many.
            while case let created = comparison.nextCreated(2, newID: { ItemID(uuid: partIDs.uuid()) }),
                !created.isEmpty
            {
                for item in created { parts[item.id] = item }
            }

            // New items compare by where they are: their ids are drawn in another order.
            func new(_ all: [ItemID: ItemObservation]) -> [LocalView?] {
                all.values.filter { items[$0.id] == nil }.map(\.local).sorted {
                    ($0?.path.string ?? "") < ($1?.path.string ?? "")
                }
            }
            #expect(new(parts) == new(whole), "seed \(seed): new items differ")
            let differing = Set(items.keys).filter { parts[$0] != whole[$0] }
            #expect(
                differing.isEmpty,
                "seed \(seed): \(differing.map { "\n\(items[$0].map(String.init(describing:)) ?? "new") → \n  \(parts[$0].map(String.init(describing:)) ?? "none") / \n  \(whole[$0].map(String.init(describing:)) ?? "none")" })"
            )
        }
        #expect(madeEarly > 100, "entries made new items before the end: \(madeEarly)")
    }
}
