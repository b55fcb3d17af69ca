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

    @Test("an item first heard of by its creation alone is recorded from the change; with more, it is asked about")
    func creationAlone() {
        let item = ItemID()
        let created = Change.itemCreated(itemID: item, path: Self.path, kind: .file)
        #expect(ContainerSync.created(alone: [created]) == ItemRecord(id: item, path: Self.path, kind: .file))
        #expect(ContainerSync.created(alone: [created, .versionAdded(itemID: item, versionID: VersionID())]) == nil)
        #expect(ContainerSync.created(alone: [created, .itemDeleted(itemID: item)]) == nil)
        #expect(ContainerSync.created(alone: [.itemDeleted(itemID: item)]) == nil)
        #expect(ContainerSync.created(alone: []) == nil)
    }
}
