import DocumentKit
import Foundation
import NIOCore
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ContainerSync {
    /// Sends what changed on disk since the last round.
    func pushLocalChanges() async throws {
        let (scanner, folder) = (scanner, layout.folder)
        let scan = try await BlockingWork.run { try scanner.scan(folder) }
        let known = try state.items()
        for change in LocalChangeDetector.changes(known: known, scanned: scan.items) {
            switch change {
            case .created(let path, let kind):
                guard let found = scan.items[path] else { continue }
                try await create(found, kind: kind)
            case .modified(let id):
                guard var item = try state.item(id), let found = scan.items[item.path], found.kind != .directory else {
                    continue
                }
                let (content, identity) = try await readContent(at: item.path, kind: found.kind)
                if content.contentHash == item.contentHash, item.baseVersion != nil {
                    item.identity = identity  // only the recorded identity was stale (or racy): nothing to send
                    try state.update(saving: [item])
                    continue
                }
                try await uploadChunks(of: content, at: item.path)
                let version = makeVersion(of: id, content, identity, basedOn: item.baseVersion)
                let answer = try await client.commit(version, in: container)
                try await settle(&item, after: answer, uploaded: version, content: content, identity: identity)
            case .moved(let id, _, let to):
                guard var item = try state.item(id) else { continue }
                _ = try await client.moveItem(id, to: to, in: container)
                item.path = to
                if let found = scan.items[to],
                    item.kind == .directory || item.identity?.isSameFile(as: found.identity) == true
                {
                    item.identity?.changed = found.identity.changed
                }
                try state.update(saving: [item])
            case .deleted(let id):
                guard let item = try state.item(id) else { continue }
                do {
                    _ = try await client.deleteItem(id, basedOn: item.baseVersion, in: container)
                    try state.update(removing: [id])
                } catch let error as ProtocolError where error.code == .staleDelete {
                    // Edited elsewhere meanwhile: the edit wins; the item comes back with the service's version.
                    var restored = item
                    restored.identity = nil
                    restored.isPlaceholder = true
                    try state.update(saving: [restored])
                    if let detail = try? await client.item(id, in: container) { try await apply(detail, force: true) }
                }
            }
        }
    }

    /// Creates a new item on the service from what is on disk.
    private func create(_ found: ScannedItem, kind: ItemKind) async throws {
        let id = ItemID()
        switch kind {
        case .directory:
            var folderID = id
            do {
                _ = try await client.createItem(
                    CreateItemRequest(id: id, path: found.path, kind: .directory), in: container)
            } catch let error as ProtocolError where error.code == .pathCollision {
                // Another device made the same folder: both mean the same one.
                guard
                    let existing = try await client.items(in: container).items.first(where: {
                        !$0.isDeleted && $0.kind == .directory && $0.path == found.path
                    })
                else { throw error }
                folderID = existing.id
            }
            try state.update(
                saving: [LocalItem(id: folderID, path: found.path, kind: .directory, identity: found.identity)])
        case .file, .package:
            let (content, identity) = try await readContent(at: found.path, kind: kind)
            try await uploadChunks(of: content, at: found.path)
            let version = makeVersion(of: id, content, identity, basedOn: nil)
            let answer: ItemResponse
            do {
                answer = try await client.createItem(
                    CreateItemRequest(id: id, path: found.path, kind: kind, version: version), in: container)
            } catch let error as ProtocolError where error.code == .pathCollision {
                try await resolveCollision(at: found.path, kind: kind, content: content, identity: identity)
                return
            }
            var item = LocalItem(id: id, path: found.path, kind: kind)
            try await settle(&item, after: answer, uploaded: version, content: content, identity: identity)
        }
    }

    /// A new local item whose path the service already has: the same content there means it is that item (a
    /// create whose answer was lost, or the same file made on two devices), which is adopted; other content there
    /// means another item, and the local one steps aside as a "conflicted copy" to be uploaded next round.
    private func resolveCollision(
        at path: ItemPath, kind: ItemKind, content: LocalContent, identity: LocalFileIdentity
    ) async throws {
        let existing = try await client.items(in: container).items.first {
            !$0.isDeleted && $0.path.collisionKey == path.collisionKey
        }
        if let existing, existing.kind == kind, existing.path == path {
            let detail = try await client.item(existing.id, in: container)
            if let current = detail.versions.first(where: { $0.id == existing.currentVersion }),
                current.contentHash == content.contentHash
            {
                let item = LocalItem(
                    id: existing.id, path: path, kind: kind, identity: identity, baseVersion: current.id,
                    serverVersion: current.id, contentHash: current.contentHash, size: current.size,
                    hasUnresolvedConflicts: detail.versions.contains { $0.isConflict && !$0.isResolved })
                try state.update(saving: [item])
                return
            }
        }
        try moveAside(layout.url(of: path))
    }

    /// Records what a commit did: a version that became current (or was already there) is now the local base; one
    /// kept as a conflict leaves the service's current version to come down.
    private func settle(
        _ item: inout LocalItem, after answer: ItemResponse, uploaded version: VersionRecord, content: LocalContent,
        identity: LocalFileIdentity
    ) async throws {
        item.serverVersion = answer.item.currentVersion
        switch answer.outcome {
        case .conflict:
            item.hasUnresolvedConflicts = true
            try state.update(saving: [item])
            try await apply(try await client.item(item.id, in: container), force: true)
        default:
            item.baseVersion = answer.version?.id ?? version.id
            item.contentHash = content.contentHash
            item.size = content.size
            item.identity = identity
            item.isPlaceholder = false
            try state.update(saving: [item])
        }
    }

    /// Chunks and hashes the file or package at `path` under a coordinated read; the identity is taken inside the
    /// same access, and an item that changed while it was read is refused (it is read again next round).
    func readContent(at path: ItemPath, kind: ItemKind) async throws -> (LocalContent, LocalFileIdentity) {
        let url = layout.url(of: path)
        let (scanner, chunker) = (scanner, configuration.chunker)
        return try await BlockingWork.run {
            try Self.readContent(at: url, path: path, kind: kind, scanner: scanner, chunker: chunker)
        }
    }

    private static func readContent(
        at url: URL, path: ItemPath, kind: ItemKind, scanner: LocalScanner, chunker: FileChunker
    ) throws -> (LocalContent, LocalFileIdentity) {
        try FileCoordinator().coordinate(readingItemAt: url) { url in
            let before = try scanner.identity(of: url, kind: kind)
            let content =
                kind == .package
                ? try LocalContent(package: url, chunker: chunker)
                : try LocalContent(file: url, chunker: chunker)
            guard try scanner.identity(of: url, kind: kind) == before else {
                throw ProtocolError(.malformedRequest, "\(path) changed while it was read; it is read again later")
            }
            return (content, before)
        }
    }

    /// Uploads the chunks of `content` the service lacks, reading each from its file by its offset.
    private func uploadChunks(of content: LocalContent, at path: ItemPath) async throws {
        let missing = try await client.missingChunks(content.manifest.chunks, in: container)
        for hash in missing {
            guard let source = content.sources[hash] else { continue }
            let descriptor = open(source.file.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(descriptor) }
            var buffer = ByteBuffer()
            let count = Int(source.size)
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
                max(0, pread(descriptor, bytes.baseAddress, count, off_t(source.offset)))
            }
            guard read == count else { throw POSIXError(.EIO) }
            try await client.uploadChunk(buffer, hash: hash, in: container)
        }
    }

    private func makeVersion(
        of id: ItemID, _ content: LocalContent, _ identity: LocalFileIdentity, basedOn: VersionID?
    ) -> VersionRecord {
        VersionRecord(
            id: VersionID(), itemID: id, manifest: content.manifest, contentHash: content.contentHash,
            modificationDate: Date(timeIntervalSince1970: Double(identity.modified) / 1e9), savingDevice: device,
            basedOn: basedOn)
    }
}
