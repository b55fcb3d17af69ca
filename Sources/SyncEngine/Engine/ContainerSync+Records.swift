import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// Records (or, with `nil`, ends) the transfer of an item's content and tells listeners.
    func setTransfer(_ transfer: ItemTransfer?, of item: LocalItem) {
        transfers.withLock { $0[item.id] = transfer }
        hub.send(.progress(item.id, item.path, transfer))
    }

    /// Adds `bytes` to an item's transfer under way.
    func advanceTransfer(of item: LocalItem, by bytes: Int64) {
        guard var transfer = transfers.withLock({ $0[item.id] }) else { return }
        transfer.completed += bytes
        setTransfer(transfer, of: item)
    }

    /// Where the chunks of the item's local copy (`manifest`, just uploaded or downloaded) lie, to be recorded with
    /// its record (``RecordWrite/chunkLocations``).
    func chunkLocations(of manifest: ContentManifest, for item: LocalItem) -> [(ChunkHash, LocalChunkLocation)] {
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
        return locations
    }
}
