import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

/// The planner's rules, one situation each, without disks or sockets.
@Suite("SyncPlanner: the rules, one situation each")
struct SyncPlannerTests {
    let id = ItemID()
    let path = try! ItemPath("Documents/List.txt")
    let v1 = VersionID()
    let v2 = VersionID()
    let h1 = try! ChunkHash(String(repeating: "a", count: 64))
    let h2 = try! ChunkHash(String(repeating: "b", count: 64))

    /// An identity taken long after its modification (not racy).
    func identity(inode: UInt64 = 7, modified: Int64 = 1_000_000_000_000) -> LocalFileIdentity {
        var identity = LocalFileIdentity(device: 1, inode: inode, size: 5, modified: modified, changed: modified)
        identity.capturedAt = modified + 60_000_000_000
        return identity
    }

    func inStep() -> ItemObservation {
        ItemObservation(
            id: id, remote: RemoteView(path: path, kind: .file, version: v1, contentHash: h1, size: 5),
            local: LocalView(path: path, kind: .file, identity: identity()),
            synced: SyncedView(path: path, kind: .file, version: v1, contentHash: h1, size: 5, identity: identity()))
    }

    func decide(_ item: ItemObservation) -> SyncOperation? {
        SyncPlanner.decide(item, context: .init([item]), configuration: .init())
    }

    @Test("In step: nothing to do")
    func inStepPlansNothing() {
        #expect(decide(inStep()) == nil)
        #expect(inStep().isInStep)
    }

    @Test(
        "A folder made on both sides: the service's record, heard after the scan, takes the new local folder; a folder already synced or a file at that path stays its own"
    )
    func sameFolderMadeOnBothSides() {
        let folder = try! ItemPath("Documents/Lists")
        let made = ItemObservation(
            id: ItemID(), local: LocalView(path: folder, kind: .directory, identity: identity(inode: 9)))
        var synced = made
        synced.id = ItemID()
        synced.synced = SyncedView(path: folder, kind: .directory, identity: identity(inode: 9))
        let file = ItemObservation(id: ItemID(), local: LocalView(path: folder, kind: .file, identity: identity()))
        #expect(LocalObservation.madeHereToo(path: folder, kind: .directory, among: [synced, file, made]) == made.id)
        #expect(LocalObservation.madeHereToo(path: folder, kind: .directory, among: [synced, file]) == nil)
        // Once it holds the local folder, the service's item is adopted: one folder, nothing moved aside.
        let heard = ItemObservation(
            id: ItemID(), remote: RemoteView(path: folder, kind: .directory), local: made.local)
        #expect(decide(heard) == .adoptLocal(heard.id, remote: heard.remote!, identity: made.local!.identity))
    }

    @Test("Deleted on the service: an unchanged copy is removed, checked against what the plan saw")
    func remoteDeleteRemovesUnchangedCopy() {
        var item = inStep()
        item.remote?.isDeleted = true
        #expect(decide(item) == .deleteLocal(id, path: path, expecting: identity()))
    }

    @Test(
        "Deleted on the service, a folder another item now has on the service: the record lets go of the folder, which stays; alone at its path, the folder is removed"
    )
    func remoteDeletedFolderTakenByAnother() {
        let folder = try! ItemPath("Documents (conflicted copy)/Notes")
        let view = LocalView(path: folder, kind: .directory, identity: identity(inode: 8))
        let deleted = ItemObservation(
            id: ItemID(), remote: RemoteView(path: folder, kind: .directory, isDeleted: true), local: view,
            synced: SyncedView(path: folder, kind: .directory, identity: identity(inode: 8)))
        let successor = ItemObservation(
            id: ItemID(), remote: RemoteView(path: folder, kind: .directory),
            synced: SyncedView(path: folder, kind: .directory, identity: identity(inode: 8)))
        let context = SyncPlanner.Context([deleted, successor])
        #expect(SyncPlanner.decide(deleted, context: context, configuration: .init()) == .forget(deleted.id))
        #expect(decide(deleted) == .deleteLocal(deleted.id, path: folder, expecting: identity(inode: 8)))
    }

    @Test("Deleted on the service: an edited copy is uploaded (the edit brings the item back), never removed")
    func remoteDeleteKeepsEdit() {
        var item = inStep()
        item.remote?.isDeleted = true
        item.local?.identity = identity(modified: 2_000_000_000_000)
        #expect(decide(item) == .uploadContent(id, basedOn: v1, expecting: identity(modified: 2_000_000_000_000)))
    }

    @Test("Deleted here, changed on the service: the newer version wins over the delete")
    func remoteEditWinsOverLocalDelete() {
        var item = inStep()
        item.local = nil
        item.remote?.version = v2
        guard case .recordPlaceholder(_, let view) = decide(item) else {
            Issue.record("expected a placeholder, got \(String(describing: decide(item)))")
            return
        }
        #expect(view.version == v2)
        item.remote?.version = v1
        #expect(decide(item) == .deleteRemote(id, basedOn: v1))
    }

    @Test(
        "Heard of for the first time: content within the eager limit comes down at once; larger content, content kept evicted and folders get a placeholder first"
    )
    func newRemoteItem() {
        let small = ItemObservation(id: id, remote: RemoteView(path: path, kind: .file, version: v1, size: 5))
        #expect(decide(small) == .download(id, version: v1, path: path, replacing: nil))
        let limit = SyncPlanner.Configuration(eagerDownloadLimit: 4)
        let placeholder = SyncPlanner.decide(small, context: .init([small]), configuration: limit)
        #expect(placeholder == .recordPlaceholder(id, small.remote!))
        var asked = small
        asked.requests.insert(.download)
        #expect(
            SyncPlanner.decide(asked, context: .init([asked]), configuration: limit)
                == .download(id, version: v1, path: path, replacing: nil))
        var evicted = small
        evicted.requests.insert(.keepEvicted)
        #expect(decide(evicted) == .recordPlaceholder(id, small.remote!))
        let empty = ItemObservation(id: id, remote: RemoteView(path: path, kind: .file))
        #expect(decide(empty) == .recordPlaceholder(id, empty.remote!))
        let folder = ItemObservation(id: id, remote: RemoteView(path: path, kind: .directory))
        #expect(decide(folder) == .recordPlaceholder(id, folder.remote!))
        // Once placed, the item is in step: nothing more.
        var placed = small
        placed.recordPlaced(small.remote!, identity: identity())
        #expect(decide(placed) == nil)
    }

    @Test("Edited here and on the service: the same bytes are adopted, other bytes go up as a conflict")
    func bothEdited() {
        var item = inStep()
        item.remote?.version = v2
        item.remote?.contentHash = h2
        let edited = identity(modified: 2_000_000_000_000)
        item.local?.identity = edited
        #expect(decide(item) == .hashLocal(id, expecting: edited))
        item.local?.contentHash = h2
        #expect(decide(item) == .adoptLocal(id, remote: item.remote!, identity: edited))
        item.local?.contentHash = try! ChunkHash(String(repeating: "c", count: 64))
        #expect(decide(item) == .uploadContent(id, basedOn: v1, expecting: edited))
    }

    @Test("A racy identity is not trusted: the content is hashed before anything replaces or removes it")
    func racyIdentityIsHashed() {
        var item = inStep()
        var racy = identity()
        racy.capturedAt = racy.modified + 1
        item.synced?.identity = racy
        item.local?.identity = racy
        item.remote?.version = v2
        #expect(decide(item) == .hashLocal(id, expecting: racy))
        item.local?.contentHash = h1
        #expect(decide(item) == .download(id, version: v2, path: path, replacing: racy))
    }

    @Test("Moved on the service: the local copy follows; moved here: the service's record follows")
    func moves() {
        let moved = try! ItemPath("Documents/Groceries.txt")
        var item = inStep()
        item.remote?.path = moved
        #expect(decide(item) == .moveLocal(id, from: path, to: moved, expecting: identity()))
        item = inStep()
        item.local?.path = moved
        #expect(decide(item) == .moveRemote(id, to: moved))
    }

    @Test("A local copy written between the plan and its move is not taken for the synced content afterwards")
    func moveOfAnEditedCopy() {
        let moved = try! ItemPath("Documents/Groceries.txt")
        var item = inStep()
        item.local?.contentHash = h1
        item.remote?.path = moved
        item.remote?.version = v2
        item.remote?.contentHash = h2
        // The plan moves the copy it saw; an app writes it in place before the move, which finds the same file.
        let edited = identity(modified: 1_000_000_000_000 + 4_000_000_000)
        item.recordMovedLocal(to: moved, identity: edited)
        #expect(item.local?.contentHash == nil)
        // Nothing replaces the copy before it is read again: its bytes may be an edit to send.
        #expect(decide(item) == .hashLocal(id, expecting: edited))
        // A move of a copy that did not change keeps what is known of its bytes.
        var unchanged = inStep()
        unchanged.local?.contentHash = h1
        unchanged.remote?.path = moved
        var renamed = identity()
        renamed.changed += 1_000
        unchanged.recordMovedLocal(to: moved, identity: renamed)
        #expect(unchanged.local?.contentHash == h1)
    }

    @Test(
        "A local copy written between the plan and its step aside is read again, not taken for the content read before")
    func stepAsideOfAnEditedCopy() {
        let aside = try! ItemPath("Documents/List (conflicted copy).txt")
        // Created here, its creation's answer lost: the service's record and this copy were never seen together.
        var item = inStep()
        item.synced = SyncedView(path: path, kind: .file, version: nil, contentHash: nil, size: 0)
        item.local?.contentHash = h1
        // The plan steps the copy it saw aside; an app writes it in place before the rename, which finds the same
        // file.
        let edited = identity(modified: 1_000_000_000_000 + 4_000_000_000)
        item.recordMovedAside(to: aside, identity: edited)
        #expect(item.local?.path == aside)
        #expect(item.local?.contentHash == nil)
        // The new path goes up; then the bytes are read again, and not taken for the synced content before.
        #expect(decide(item) == .moveRemote(id, to: aside))
        var moved = item.remote!
        moved.path = aside
        item.recordMovedRemote(moved)
        #expect(decide(item) == .hashLocal(id, expecting: edited))
        // A copy that did not change keeps what is known of its bytes.
        var unchanged = inStep()
        unchanged.local?.contentHash = h1
        var renamed = identity()
        renamed.changed += 1_000
        unchanged.recordMovedAside(to: aside, identity: renamed)
        #expect(unchanged.local?.contentHash == h1)
        // A hash read within the racy interval of the last write proves nothing once the rename's identity is not
        // racy any more: a same-size write in the same tick would not show.
        var justWritten = identity()
        justWritten.capturedAt = justWritten.modified + 1
        var racy = inStep()
        racy.local?.identity = justWritten
        racy.local?.contentHash = h1
        var later = racy.local!.identity
        later.changed += 1_000
        later.capturedAt += 60_000_000_000
        racy.recordMovedAside(to: aside, identity: later)
        #expect(racy.local?.contentHash == nil)
        var racyMoved = inStep()
        racyMoved.local?.identity = justWritten
        racyMoved.local?.contentHash = h1
        racyMoved.recordMovedLocal(to: aside, identity: later)
        #expect(racyMoved.local?.contentHash == nil)
    }

    @Test(
        "A copy never agreed on whose item was deleted on the service steps aside when another item holds its path there, rather than be created again at that path"
    )
    func deletedBeforeAgreedStepsAsideForTheNewOwner() {
        // Made here, its creation's answer lost; deleted on the service by another device, which then made another
        // item at the same path.
        var mine = ItemObservation(
            id: id, remote: RemoteView(path: path, kind: .file, version: v1, contentHash: h1, size: 5, isDeleted: true),
            local: LocalView(path: path, kind: .file, identity: identity()))
        mine.requests.insert(.firstUpload)
        let other = ItemObservation(
            id: ItemID(), remote: RemoteView(path: path, kind: .file, version: v2, contentHash: h2, size: 5))
        #expect(
            SyncPlanner.decide(mine, context: .init([mine, other]), configuration: .init())
                == .moveAside(id, path: path, expecting: identity()))
        // With the path free, the copy brings the item back.
        #expect(decide(mine) == .createRemote(id, path: path, kind: .file))
    }

    @Test("A new local file at a path another item holds on the service steps aside")
    func collisionStepsAside() {
        let other = inStep()
        let mine = ItemObservation(
            id: ItemID(), local: LocalView(path: path, kind: .file, identity: identity(inode: 9)))
        let plan = SyncPlanner().plan([other, mine])
        #expect(plan == [.moveAside(mine.id, path: path, expecting: identity(inode: 9))])
    }

    @Test(
        "Never agreed on, a copy here that is an earlier version is that version, then updated; other content steps aside"
    )
    func earlierVersionHere() {
        let h0 = try! ChunkHash(String(repeating: "c", count: 64))
        let v0 = VersionID()
        var item = ItemObservation(
            id: id, remote: RemoteView(path: path, kind: .file, version: v1, contentHash: h1, size: 5),
            local: LocalView(path: path, kind: .file, identity: identity()))
        item.local?.contentHash = h0
        #expect(SyncPlanner.asksEarlierVersions(item))
        var context = SyncPlanner.Context([item])
        #expect(
            SyncPlanner.decide(item, context: context, configuration: .init())
                == .moveAside(id, path: path, expecting: identity()), "no earlier version known: an edit made here")
        context.earlierVersions = [id: [h0: v0, h2: v2]]
        #expect(
            SyncPlanner.decide(item, context: context, configuration: .init())
                == .adoptEarlier(id, version: v0, contentHash: h0, identity: identity()))
        #expect(
            SyncPlanner().plan([item], earlierVersions: context.earlierVersions)
                == [.adoptEarlier(id, version: v0, contentHash: h0, identity: identity())])
        item.recordAdoptedEarlier(v0, contentHash: h0, identity: identity())
        #expect(!SyncPlanner.asksEarlierVersions(item))
        #expect(decide(item) == .download(id, version: v1, path: path, replacing: identity()), "the newer one comes")
        // The service's own content, or no hash yet, asks for no earlier version.
        item.synced = nil
        item.local?.contentHash = h1
        #expect(!SyncPlanner.asksEarlierVersions(item))
        item.local?.contentHash = nil
        #expect(!SyncPlanner.asksEarlierVersions(item))
    }

    @Test("At most one operation per item, none for an item in flight")
    func oneOperationPerItem() {
        var items: [ItemObservation] = []
        for index in 0..<50 {
            items.append(
                ItemObservation(
                    id: ItemID(),
                    local: LocalView(
                        path: try! ItemPath("Documents/\(index).txt"), kind: .file, identity: identity(inode: 100))))
        }
        let busy = Set(items.prefix(10).map(\.id))
        let plan = SyncPlanner().plan(items, inFlight: busy)
        #expect(plan.count == 40)
        #expect(Set(plan.map(\.itemID)).count == plan.count)
        #expect(plan.allSatisfy { !busy.contains($0.itemID) })
    }
}
