import DocumentKit
import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// Drops the local content of the item at `path`, leaving a placeholder (downloaded again on demand).
    ///
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for an unknown path; ``ProtocolError/Code/malformedRequest``
    ///   for a folder; ``ProtocolError/Code/notUploaded`` when the local copy has changes the service does not have
    ///   yet (evicting would lose them) — nothing changes then.
    public func evict(_ path: ItemPath) async throws {
        try await betweenRounds { try await self.evictNow(path) }
    }

    private func evictNow(_ path: ItemPath) async throws {
        guard let found = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        try await inLane(found.id) { try await evictInLane(path) }
    }

    private func evictInLane(_ path: ItemPath) async throws {
        guard var item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        guard item.kind != .directory else { throw ProtocolError(.malformedRequest, "\(path) is a folder") }
        if item.isPlaceholder { return }
        guard item.baseVersion != nil else {
            throw ProtocolError(.notUploaded, "\(path) is not on the service yet; sync before evicting")
        }
        let url = layout.url(of: path)
        let (scanner, chunker, kind, recorded, hash) = (
            scanner, configuration.chunker, item.kind, item.identity, item.contentHash
        )
        try await BlockingWork.run {
            try FileCoordinator().coordinate(writingItemAt: url, options: .forDeleting) { url in
                let check = Self.checkLocalCopy(
                    at: url, recorded: recorded, contentHash: hash, kind: kind, scanner: scanner, chunker: chunker)
                guard check == .unchanged else {
                    throw ProtocolError(
                        .notUploaded, "\(path) has changes that are not on the service yet; sync before evicting")
                }
                try FileManager.default.removeItem(at: url)
            }
        }
        item.isPlaceholder = true
        item.identity = nil
        try save([item])
        try state.setChunkLocations([], of: item.id)
    }
}
