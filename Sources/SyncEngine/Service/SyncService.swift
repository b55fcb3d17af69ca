import Foundation
import NIOCore
import UbiquityProtocol

/// What the engine asks of the service: items and their versions, the change feed, chunks and the key-value store.
/// ``ServiceClient`` (HTTP) is the real one; the engine's simulation hands in an in-memory service of its own, so the
/// same engine runs against a simulated world.
public protocol SyncService: Sendable {
    /// Every item of the container, deleted ones included.
    func items(in container: ContainerID) async throws -> ItemListResponse
    /// One item and its kept versions; their manifests may travel as deltas against `have`, a version of the item
    /// the engine holds (``ItemDetailPayload``), and come back whole.
    func item(_ id: ItemID, have: VersionRecord?, in container: ContainerID) async throws -> ItemDetail
    /// The details of several items in one request, each with the version of it the engine holds (its manifests
    /// travel as deltas against it); an item the service lacks is left out.
    func items(_ asked: [(id: ItemID, have: VersionRecord?)], in container: ContainerID) async throws -> [ItemDetail]
    /// Creates an item's record.
    func createItem(_ request: CreateItemRequest, in container: ContainerID) async throws -> ItemResponse
    /// Commits a version whose chunks the service has, its manifest whole or as a delta against a version of the
    /// item the service keeps (answered then without the version when it is the one sent).
    func commit(_ version: VersionPayload, in container: ContainerID) async throws -> ItemResponse
    /// Moves an item.
    func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerID) async throws -> ItemResponse
    /// Deletes an item, based on the version the caller last had.
    func deleteItem(_ id: ItemID, basedOn: VersionID?, in container: ContainerID) async throws -> ItemResponse
    /// Marks a conflict version resolved.
    func markResolved(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse
    /// Removes a version other than the current one.
    func removeVersion(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse
    /// Makes a kept version the current one.
    func replaceCurrent(with id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse
    /// The chunks among `chunks` the service does not have.
    func missingChunks(_ chunks: [ChunkReference], in container: ContainerID) async throws -> [ChunkHash]
    /// Uploads chunks in one request.
    func uploadChunks(_ chunks: [(hash: ChunkHash, bytes: ByteBuffer)], in container: ContainerID) async throws
    /// Downloads one chunk, handing its bytes to `receive` piece by piece.
    func downloadChunk(
        _ hash: ChunkHash, in container: ContainerID, into receive: (ByteBuffer) throws -> Void
    ) async throws
    /// Downloads several chunks in one request; a chunk the service lacks is left out. Each is checked by the
    /// caller.
    func downloadChunks(_ chunks: [ChunkReference], in container: ContainerID) async throws -> [ChunkHash: Data]
    /// A page of the change feed after `since`, carrying up to `chunkBytes` bytes of the chunks of the small new
    /// versions it names that other devices saved (``ChangePage/chunks``).
    func changes(in container: ContainerID, since: ChangeToken?, limit: Int, chunkBytes: Int) async throws
        -> ChangePage
    /// The key-value store's changes after `since`.
    func keyValues(in container: ContainerID, since: ChangeToken?) async throws -> KeyValueChanges
    /// Applies a batch of key-value writes.
    func apply(_ batch: KeyValueBatch, in container: ContainerID) async throws -> KeyValueBatchResponse
    /// Creates items and commits versions in order, each answered on its own, with the chunks the request brings
    /// stored first (``ItemBatchRequest``).
    func applyItemBatch(_ request: ItemBatchRequest, in container: ContainerID) async throws -> ItemBatchResponse
    /// Grows the draft of `version` of `item` (``DraftAppendRequest``); returns the draft's length.
    func appendDraft(
        _ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerID
    ) async throws -> Int
    /// The chunks of the draft of `version` of `item` from the `from`th on; `nil` when the service has no such
    /// draft (committed, forgotten, or never sent).
    func draft(of version: VersionID, of item: ItemID, from: Int, in container: ContainerID) async throws
        -> DraftPage?
}

extension SyncService {
    /// A page of the change feed after `since`, without chunks.
    public func changes(in container: ContainerID, since: ChangeToken?, limit: Int) async throws -> ChangePage {
        try await changes(in: container, since: since, limit: limit, chunkBytes: 0)
    }

    /// A service without drafts keeps none: the draft's length is 0.
    public func appendDraft(
        _ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerID
    ) async throws -> Int { 0 }

    /// A service without drafts has none.
    public func draft(of version: VersionID, of item: ItemID, from: Int, in container: ContainerID) async throws
        -> DraftPage?
    { nil }

    /// One request per chunk: what a service without the route does.
    public func downloadChunks(_ chunks: [ChunkReference], in container: ContainerID) async throws
        -> [ChunkHash: Data]
    {
        var found: [ChunkHash: Data] = [:]
        for chunk in chunks where found[chunk.hash] == nil {
            var bytes = Data()
            do {
                try await downloadChunk(chunk.hash, in: container) { bytes.append(contentsOf: $0.readableBytesView) }
            } catch let error as ProtocolError where error.code == .chunkNotFound {
                continue
            }
            found[chunk.hash] = bytes
        }
        return found
    }

    /// One item and its kept versions, every manifest whole.
    public func item(_ id: ItemID, in container: ContainerID) async throws -> ItemDetail {
        try await item(id, have: nil, in: container)
    }

    /// Creates items and commits versions in order, each answered on its own (``ItemBatchRequest``).
    public func applyItemBatch(_ operations: [ItemBatchOperation], in container: ContainerID) async throws
        -> ItemBatchResponse
    {
        try await applyItemBatch(ItemBatchRequest(operations: operations), in: container)
    }

    /// One request per chunk, then one per operation, in order: what a service without a batch route does, with the
    /// same answers (a chunk refused, its bytes not its hash's or over the quota, refuses the operations naming it).
    public func applyItemBatch(_ request: ItemBatchRequest, in container: ContainerID) async throws
        -> ItemBatchResponse
    {
        var wrong: [ChunkHash: ProtocolError] = [:]
        for chunk in request.chunks {
            do {
                try await uploadChunks([(chunk.hash, ByteBuffer(bytes: chunk.data))], in: container)
            } catch let error as ProtocolError where error.code != .internalError {
                wrong[chunk.hash] = error
            }
        }
        var results: [ItemBatchResult] = []
        for operation in request.operations {
            if let error = operation.refusal(among: wrong) {
                results.append(.refused(error))
                continue
            }
            do {
                switch operation {
                case .create(let request): results.append(.applied(try await createItem(request, in: container)))
                case .commit(let version): results.append(.applied(try await commit(version, in: container)))
                }
            } catch let error as ProtocolError where error.code != .internalError {
                results.append(.refused(error))
            }
        }
        return ItemBatchResponse(results: results, token: results.compactMap(\.response).last?.token)
    }
}

extension ServiceClient: SyncService {}
