import Crypto
import DocumentKit
import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ContainerSync {
    /// The service's feed token key in the state database.
    static let feedTokenKey = "feedToken"

    /// Follows the container's change feed from the stored token and applies each touched item's new state.
    func pullRemoteChanges() async throws {
        var token = try state.value(forKey: Self.feedTokenKey).map(ChangeToken.init)
        while true {
            let page: ChangePage
            do {
                page = try await client.changes(in: container, since: token, limit: 500)
            } catch let error as ProtocolError where error.code == .changeTokenExpired {
                token = nil  // the feed was reset: read it again from the start; applying is idempotent
                continue
            }
            var touched: [ItemID] = []
            for change in page.changes where !touched.contains(change.itemID) { touched.append(change.itemID) }
            for id in touched { try await apply(try await client.item(id, in: container), force: false) }
            token = page.nextToken
            try state.setValue(page.nextToken.string, forKey: Self.feedTokenKey)
            if !page.hasMore { return }
        }
    }

    /// Makes the local copy of an item match the service's record: placeholders for new items, moves, deletions,
    /// and new content when the local copy has no edits of its own (an edited copy is uploaded with its old base
    /// next round, which the service keeps as a conflict version — nothing is overwritten).
    func apply(_ detail: ItemDetail, force: Bool) async throws {
        let record = detail.item
        let known = try state.item(record.id)
        let current = detail.versions.first { $0.id == record.currentVersion }
        let conflicts = detail.versions.contains { $0.isConflict && !$0.isResolved }

        if record.isDeleted {
            guard let known else { return }
            if !known.isPlaceholder, try isUnmodified(known) {
                try? FileManager.default.removeItem(at: layout.url(of: known.path))
            }
            try state.update(removing: [known.id])
            return
        }
        var item =
            known
            ?? LocalItem(
                id: record.id, path: record.path, kind: record.kind, size: current?.size ?? 0,
                isPlaceholder: record.kind != .directory)
        if let known, known.path != record.path {
            try await moveLocalCopy(of: known, to: record.path)
            item.path = record.path
            if let identity = try? scanner.identity(of: layout.url(of: record.path), kind: record.kind),
                known.identity != nil
            {
                item.identity = identity
            }
        }
        item.serverVersion = record.currentVersion
        item.hasUnresolvedConflicts = conflicts
        if record.kind == .directory {
            try FileManager.default.createDirectory(at: layout.url(of: record.path), withIntermediateDirectories: true)
            item.identity = try scanner.identity(of: layout.url(of: record.path), kind: .directory)
            try state.update(saving: [item])
            return
        }
        guard let current else {
            try state.update(saving: [item])
            return
        }
        item.size = current.size
        try state.update(saving: [item])
        if item.baseVersion == current.id && !item.isPlaceholder { return }  // already in step
        // Local edits stay until they are uploaded (as a conflict version, based on the old version); `force`
        // says they already were.
        if !item.isPlaceholder, !force, !(try isUnmodified(item)) { return }
        if item.isPlaceholder && current.size > configuration.eagerDownloadLimit { return }  // on demand
        try await download(current, into: item)
    }

    /// Downloads the current content of the item at `path` (a placeholder, or an out-of-date copy).
    public func download(_ path: ItemPath) async throws {
        guard let item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        let detail = try await client.item(item.id, in: container)
        guard let current = detail.versions.first(where: { $0.id == detail.item.currentVersion }) else { return }
        try await download(current, into: item)
    }

    /// Assembles `version` in `.ubiquity/tmp/`, checks it against its hashes, and puts it in place with a
    /// coordinated write (an open document sees another writer's change).
    private func download(_ version: VersionRecord, into item: LocalItem) async throws {
        let temporary = layout.temporary.appendingPathComponent(UUID().uuidString.lowercased())
        do {
            switch version.manifest {
            case .file(let chunks):
                let hash = try await assemble(chunks, into: temporary)
                guard hash == version.contentHash else {
                    throw ProtocolError(
                        .chunkHashMismatch, "the downloaded content of \(item.path) does not match its hash")
                }
            case .package(let entries):
                guard try LocalContent.hash(of: version.manifest) == version.contentHash else {
                    throw ProtocolError(.chunkHashMismatch, "the manifest of \(item.path) does not match its hash")
                }
                try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
                for entry in entries {
                    let member = temporary.appendingPathComponent(entry.path.string)
                    if entry.kind == .directory {
                        try FileManager.default.createDirectory(at: member, withIntermediateDirectories: true)
                    } else {
                        try FileManager.default.createDirectory(
                            at: member.deletingLastPathComponent(), withIntermediateDirectories: true)
                        _ = try await assemble(entry.chunks, into: member)
                    }
                }
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        let destination = layout.url(of: item.path)
        if item.isPlaceholder, FileManager.default.fileExists(atPath: destination.path) {
            try moveAside(destination)
        }
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let replaced = layout.temporary.appendingPathComponent(UUID().uuidString.lowercased())
        let (scanner, kind) = (scanner, item.kind)
        // The identity recorded is the one of the bytes just placed: taken inside the coordinated write, and only
        // if the placed item is still the assembled one (same inode, size and modification time); if another
        // writer got in first, the assembled identity is recorded, so the next scan sees that writer's change.
        let placed = try await BlockingWork.run {
            let assembled = try scanner.identity(of: temporary, kind: kind)
            return try FileCoordinator().coordinate(writingItemAt: destination, options: .forReplacing) { url in
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
                    try FileManager.default.moveItem(at: url, to: replaced)  // an old package makes way whole
                }
                guard rename(temporary.path, url.path) == 0 else {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
                let now = try scanner.identity(of: url, kind: kind)
                let untouched =
                    now.isSameFile(as: assembled) && now.size == assembled.size && now.modified == assembled.modified
                return untouched ? now : assembled
            }
        }
        try? FileManager.default.removeItem(at: replaced)
        var updated = item
        updated.identity = placed
        updated.baseVersion = version.id
        updated.contentHash = version.contentHash
        updated.size = version.size
        updated.isPlaceholder = false
        try state.update(saving: [updated])
    }

    /// Downloads `chunks` into a new file at `url`, checking each chunk against its hash, and flushes it.
    /// - Returns: The SHA-256 of the whole file.
    private func assemble(_ chunks: [ChunkReference], into url: URL) async throws -> ChunkHash {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw POSIXError(.EIO) }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var whole = SHA256()
        for chunk in chunks {
            var piece = SHA256()
            try await client.downloadChunk(chunk.hash, in: container) { bytes in
                bytes.withUnsafeReadableBytes {
                    whole.update(bufferPointer: $0)
                    piece.update(bufferPointer: $0)
                }
                try handle.write(contentsOf: Data(bytes.readableBytesView))
            }
            guard try ChunkHash(digest: piece.finalize()) == chunk.hash else {
                throw ProtocolError(.chunkHashMismatch, "chunk \(chunk.hash) arrived with other bytes")
            }
        }
        try await BlockingWork.run { try handle.synchronize() }
        return try ChunkHash(digest: whole.finalize())
    }

    /// Moves a local file the engine does not know out of the way of a download to the same path: it becomes
    /// "Name (conflicted copy).ext" (numbered if taken) and is uploaded as an item of its own next round.
    func moveAside(_ url: URL) throws {
        let folder = url.deletingLastPathComponent()
        let base = url.deletingPathExtension().lastPathComponent
        let suffix = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        var number = 1
        var target: URL
        repeat {
            let label = number == 1 ? "conflicted copy" : "conflicted copy \(number)"
            target = folder.appendingPathComponent("\(base) (\(label))\(suffix)")
            number += 1
        } while FileManager.default.fileExists(atPath: target.path)
        try FileManager.default.moveItem(at: url, to: target)
        logger.notice("moved a local file aside", metadata: ["from": "\(url.path)", "to": "\(target.path)"])
    }

    /// Whether the local copy is as it was when last in step (so replacing or removing it loses nothing).
    private func isUnmodified(_ item: LocalItem) throws -> Bool {
        guard let identity = item.identity else { return item.isPlaceholder }
        guard let now = try? scanner.identity(of: layout.url(of: item.path), kind: item.kind) else { return true }
        return now.size == identity.size && now.modified == identity.modified && now.isSameFile(as: identity)
    }

    /// Moves the local copy of an item that was moved elsewhere (a placeholder has nothing to move).
    private func moveLocalCopy(of item: LocalItem, to path: ItemPath) async throws {
        let from = layout.url(of: item.path)
        let to = layout.url(of: path)
        guard FileManager.default.fileExists(atPath: from.path), !FileManager.default.fileExists(atPath: to.path) else {
            return
        }
        try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
        try await BlockingWork.run {
            try FileCoordinator().coordinate(writingItemAt: from, options: .forMoving, writingItemAt: to, options: []) {
                from, to in
                try FileManager.default.moveItem(at: from, to: to)
            }
        }
    }
}
