import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("The feed: which changes a device takes as known without asking the service")
struct FeedKnowledgeTests {
    static let path = try! ItemPath("Documents/List.txt")

    @Test("a device's own new item heard back with its first version is known; a first version heard alone is not")
    func ownFirstVersion() {
        let item = ItemID()
        let first = VersionID()
        let remote = RemoteView(path: Self.path, kind: .file, version: first)
        let created = Change.itemCreated(itemID: item, path: Self.path, kind: .file)
        let added = Change.versionAdded(itemID: item, versionID: first)
        let changed = Change.itemChanged(itemID: item, currentVersion: first)

        // Known: the creation alone, the creation with the first version this device holds as current.
        #expect(ContainerSync.shows([created], remote))
        #expect(ContainerSync.shows([created, added, changed], remote))
        #expect(ContainerSync.shows([created], RemoteView(path: Self.path, kind: .directory)))

        // Asked about: the first version in a later page than the creation. Made over no version here, it may have
        // been made over another device's first version, which is then a conflict version with no change of its own
        // (seen in the engine's simulation, when the read after such a commit failed) ...
        #expect(!ContainerSync.shows([added, changed], remote))
        // ... a version this device does not hold as current ...
        #expect(!ContainerSync.shows([created, .versionAdded(itemID: item, versionID: VersionID())], remote))
        // ... any move, deletion or change of another version, and an item the device holds as deleted or not at all.
        for other: Change in [
            .itemMoved(itemID: item, from: Self.path, to: try! ItemPath("Documents/Moved.txt")),
            .itemDeleted(itemID: item), .versionResolved(itemID: item, versionID: first),
            .versionRemoved(itemID: item, versionID: first),
        ] {
            #expect(!ContainerSync.shows([created, added, other], remote), "\(other)")
        }
        var deleted = remote
        deleted.isDeleted = true
        #expect(!ContainerSync.shows([created], deleted))
        #expect(!ContainerSync.shows([created], nil))
        // Nothing named at all is not a reason to skip asking.
        #expect(!ContainerSync.shows([], remote))
    }

    @Test(
        "an item first heard of by its creation alone, or with its first version whose record the page carries, is recorded from the page; with more, it is asked about"
    )
    func creationAlone() throws {
        let item = ItemID()
        let created = Change.itemCreated(itemID: item, path: Self.path, kind: .file)
        #expect(
            ContainerSync.created([created], [:])
                == ItemDetail(item: ItemRecord(id: item, path: Self.path, kind: .file), versions: []))

        let first = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file([]), contentHash: try LocalContent.hash(of: .file([])),
            modificationDate: Date(timeIntervalSince1970: 1_800_000_000),
            savingDevice: SavingDevice(id: DeviceID(), name: "laptop"))
        let made = [
            created, .versionAdded(itemID: item, versionID: first.id),
            .itemChanged(itemID: item, currentVersion: first.id),
        ]
        #expect(
            ContainerSync.created(made, [first.id: first])
                == ItemDetail(
                    item: ItemRecord(id: item, path: Self.path, kind: .file, currentVersion: first.id),
                    versions: [first]))
        // Asked about: the first version's record not carried, or carried for another item ...
        #expect(ContainerSync.created(made, [:]) == nil)
        var elsewhere = first
        elsewhere.itemID = ItemID()
        #expect(ContainerSync.created(made, [first.id: elsewhere]) == nil)
        // ... a conflict version by now (another is current, further on in the feed), or a resolved one ...
        var conflict = first
        conflict.isConflict = true
        #expect(ContainerSync.created(made, [first.id: conflict]) == nil)
        // ... a version added but not made current, and anything more than the creation and its first version.
        #expect(ContainerSync.created(Array(made.prefix(2)), [first.id: first]) == nil)
        #expect(ContainerSync.created(made + [.itemDeleted(itemID: item)], [first.id: first]) == nil)
        #expect(ContainerSync.created([created, .itemDeleted(itemID: item)], [:]) == nil)
        #expect(ContainerSync.created([.itemDeleted(itemID: item)], [:]) == nil)
        #expect(ContainerSync.created([], [:]) == nil)
    }
}
