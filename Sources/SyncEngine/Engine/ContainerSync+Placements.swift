import DocumentKit
import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// A downloaded item to put in place (see ``place(_:of:at:replacing:)``).
    struct Placement: Sendable {
        /// The assembled content, in `.ubiquity/tmp/`.
        var temporary: URL
        /// Where it goes.
        var destination: URL
        /// Where an old package at `destination` makes way to, whole.
        var movedAside: URL
        /// The local copy it may replace (`nil`: only an absent one).
        var replacing: LocalFileIdentity?
        /// The identity and content hash of the copy last in step, for telling a changed copy from one in step.
        var synced: LocalFileIdentity?
        var syncedHash: ChunkHash?
        var kind: ItemKind
        /// The modification time the placed file takes (nanoseconds since 1970), for a file.
        var modified: Int64?
    }

    /// What a placement did.
    struct Placed: Sendable {
        /// The identity recorded for the placed copy.
        var identity: LocalFileIdentity
        /// Whether an old package was moved aside to the placement's `movedAside` (to be removed).
        var movedAside: Bool
    }

    /// How many downloads one coordinated write puts in place at most (``placements``).
    static let placementCount = 64

    /// The placements of downloads that concurrent operations ask for, taken together: up to ``placementCount``
    /// items under one coordinated write, sharing their folders' locks, each checked and put in place as it would be
    /// alone and answered on its own. When the coordination itself fails (another writer holds one past the
    /// timeout), each is placed again alone, so only its own placement fails.
    static func placementBatcher(scanner: LocalScanner, chunker: FileChunker, disk: any LocalDisk)
        -> RequestBatcher<Placement, Placed>
    {
        .onDisk(count: placementCount, disk: disk) { placements in
            placeTogether(placements, scanner: scanner, chunker: chunker, disk: disk)
        }
    }

    /// Puts `placements` in place under one coordinated write, each checked and placed as it would be alone, with
    /// an outcome of its own; when the coordination itself fails, each is placed again under a coordinated write of
    /// its own. Blocks.
    static func placeTogether(
        _ placements: [Placement], scanner: LocalScanner, chunker: FileChunker, disk: any LocalDisk
    ) -> [Result<Placed, any Error>] {
        // A file takes its version's modification time before its identity is taken (see `place`).
        let assembled = placements.map { placement in
            Result {
                if let modified = placement.modified {
                    try disk.setModificationTime(of: placement.temporary, to: modified)
                }
                return try scanner.identity(of: placement.temporary, kind: placement.kind)
            }
        }
        let ready = placements.indices.filter { (try? assembled[$0].get()) != nil }
        var results = assembled.map { $0.map { Placed(identity: $0, movedAside: false) } }
        func put(_ index: Int) -> Result<Placed, any Error> {
            Result {
                try Self.put(
                    placements[index], assembled: assembled[index].get(), scanner: scanner, chunker: chunker,
                    disk: disk)
            }
        }
        let intents = ready.map {
            FileAccessIntent.writingIntent(with: placements[$0].destination, options: .forReplacing)
        }
        do {
            let done = try FileCoordinator().coordinate(with: intents) {
                try disk.coordinationBegins()
                return ready.map(put)
            }
            for (index, result) in zip(ready, done) { results[index] = result }
        } catch is FileCoordinationError where ready.count > 1 {
            for index in ready {
                results[index] = Result {
                    try FileCoordinator().coordinate(
                        writingItemAt: placements[index].destination, options: .forReplacing
                    ) { _ in
                        try disk.coordinationBegins()
                        return try put(index).get()
                    }
                }
            }
        } catch {
            for index in ready { results[index] = .failure(error) }
        }
        return results
    }

    /// Puts `placement` in place, inside a coordinated write of its destination, if the local copy there is still
    /// the one it may replace. The identity recorded is the one of the bytes just placed, if the placed item is still
    /// the assembled one (same inode, size and modification time); if another writer got in first, the assembled
    /// identity is recorded, so the next scan sees that writer's change.
    /// - Throws: ``LocalCopyChanged`` when a save landed there since the plan (it stays).
    private static func put(
        _ placement: Placement, assembled: LocalFileIdentity, scanner: LocalScanner, chunker: FileChunker,
        disk: any LocalDisk
    ) throws -> Placed {
        let url = placement.destination
        // Only content that is safe (on the service, or nothing at all) is replaced: a save that landed since the
        // plan — one a presenter made when asked to make way, say — stays.
        let check = checkLocalCopy(
            at: url, recorded: placement.replacing, synced: placement.synced, contentHash: placement.syncedHash,
            kind: placement.kind, scanner: scanner, chunker: chunker)
        guard placement.replacing == nil ? check == .absent : check == .unchanged else { throw LocalCopyChanged() }
        let movedAside = disk.isDirectory(url)
        if movedAside {
            try disk.moveItem(at: url, to: placement.movedAside)  // an old package makes way whole
        }
        do {
            try disk.replaceItem(at: url, withItemAt: placement.temporary)
        } catch {
            // The old package goes back to its place: left in the temporary folder, the next scan would take it for
            // deleted here, and the deletion would reach the service.
            if movedAside { try? disk.moveItem(at: placement.movedAside, to: url) }
            throw error
        }
        let now = try scanner.identity(of: url, kind: placement.kind)
        return Placed(identity: now.isUnchanged(since: assembled) ? now : assembled, movedAside: movedAside)
    }
}
