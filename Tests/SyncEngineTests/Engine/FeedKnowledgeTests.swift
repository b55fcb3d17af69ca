import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("The feed: which changes a device takes as known without asking the service")
struct FeedKnowledgeTests {
    static let path = try! ItemPath("Documents/List.txt")
    static let device = SavingDevice(id: DeviceID(), name: "laptop")

    static func version(_ id: VersionID, of item: ItemID, basedOn: VersionID?) -> VersionRecord {
        VersionRecord(
            id: id, itemID: item, manifest: .file([]),
            contentHash: try! ChunkHash(String(repeating: "0", count: 64)),
            modificationDate: Date(timeIntervalSince1970: 1), savingDevice: device, basedOn: basedOn)
    }

    @Test("a device's own new item and first version heard back, in one page or two, are known; nothing else is")
    func ownFirstVersion() {
        let item = ItemID()
        let first = VersionID()
        let remote = RemoteView(path: Self.path, kind: .file, version: first)
        let firstRecord = Self.version(first, of: item, basedOn: nil)
        let created = Change.itemCreated(itemID: item, path: Self.path, kind: .file)
        let added = Change.versionAdded(itemID: item, versionID: first)
        let changed = Change.itemChanged(itemID: item, currentVersion: first)

        // Known: the creation alone, the creation with the first version, the first version in a later page.
        #expect(ContainerSync.shows([created], remote, firstRecord))
        #expect(ContainerSync.shows([created, added, changed], remote, firstRecord))
        #expect(ContainerSync.shows([added, changed], remote, firstRecord))
        #expect(ContainerSync.shows([created], RemoteView(path: Self.path, kind: .directory), nil))

        // Asked about: a version made over another (it made that one a version of the history, or a conflict
        // version, with no change of its own) ...
        let second = VersionID()
        let secondRemote = RemoteView(path: Self.path, kind: .file, version: second)
        let secondRecord = Self.version(second, of: item, basedOn: first)
        #expect(
            !ContainerSync.shows(
                [.versionAdded(itemID: item, versionID: second), .itemChanged(itemID: item, currentVersion: second)],
                secondRemote, secondRecord))
        // ... a version this device does not hold as current, or without its record ...
        #expect(!ContainerSync.shows([.versionAdded(itemID: item, versionID: VersionID())], remote, firstRecord))
        #expect(!ContainerSync.shows([added, changed], remote, nil))
        #expect(!ContainerSync.shows([added, changed], remote, Self.version(VersionID(), of: item, basedOn: nil)))
        // ... any move, deletion or change of another version, and an item the device holds as deleted or not at all.
        for other: Change in [
            .itemMoved(itemID: item, from: Self.path, to: try! ItemPath("Documents/Moved.txt")),
            .itemDeleted(itemID: item), .versionResolved(itemID: item, versionID: first),
            .versionRemoved(itemID: item, versionID: first),
        ] {
            #expect(!ContainerSync.shows([created, added, other], remote, firstRecord), "\(other)")
        }
        var deleted = remote
        deleted.isDeleted = true
        #expect(!ContainerSync.shows([created], deleted, firstRecord))
        #expect(!ContainerSync.shows([created], nil, nil))
        // Nothing named at all is not a reason to skip asking.
        #expect(!ContainerSync.shows([], remote, firstRecord))
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
