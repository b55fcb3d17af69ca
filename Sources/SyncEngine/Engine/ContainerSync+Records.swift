import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// Stores items and removes others in one transaction, then tells listeners.
    func save(_ items: [LocalItem], removing removed: [LocalItem] = []) throws {
        try state.update(saving: items, removing: removed.map(\.id))
        for item in removed { hub.send(.itemRemoved(item.id, item.path)) }
        for item in items { hub.send(.itemChanged(item)) }
    }

    /// Records (or, with `nil`, ends) the transfer of an item's content and tells listeners.
    func setTransfer(_ transfer: ItemTransfer?, of item: LocalItem) {
        transfers[item.id] = transfer
        hub.send(.progress(item.id, item.path, transfer))
    }

    /// Adds `bytes` to an item's transfer under way.
    func advanceTransfer(of item: LocalItem, by bytes: Int64) {
        guard var transfer = transfers[item.id] else { return }
        transfer.completed += bytes
        setTransfer(transfer, of: item)
    }

    /// Records why an upload or download of the item failed (or, with `nil`, that it succeeded) when that changes.
    func setError(_ error: ItemError?, of id: ItemID, direction: ItemTransfer.Direction) throws {
        guard var item = try state.item(id) else { return }
        switch direction {
        case .upload:
            guard item.uploadError != error else { return }
            item.uploadError = error
        case .download:
            guard item.downloadError != error else { return }
            item.downloadError = error
        }
        try save([item])
    }

    /// Records where the chunks of the item's local copy (`manifest`, just uploaded or downloaded) lie.
    func recordChunkLocations(of manifest: ContentManifest, for item: LocalItem) throws {
        var locations: [(ChunkHash, LocalChunkLocation)] = []
        func add(_ chunks: [ChunkReference], file: String) {
            var offset: Int64 = 0
            for chunk in chunks {
                locations.append((chunk.hash, LocalChunkLocation(file: file, offset: offset, size: Int(chunk.size))))
                offset += chunk.size
            }
        }
        switch manifest {
        case .file(let chunks): add(chunks, file: item.path.string)
        case .package(let entries):
            for entry in entries where entry.kind != .directory {
                add(entry.chunks, file: item.path.string + "/" + entry.path.string)
            }
        }
        try state.setChunkLocations(locations, of: item.id)
    }
}
