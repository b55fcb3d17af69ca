import Foundation
import UbiquityProtocol

/// Where the service keeps everything but chunk bytes: accounts, device tokens, the chunks each account has,
/// items and their versions, change feeds and key-value stores.
///
/// A driver (``SQLiteMetadataStore`` is the embedded default) implements each operation as one transaction:
/// a change to an item and the feed entries it makes are committed together or not at all, so a crash never
/// leaves half of one visible. The rules themselves live in shared pure types (``ItemVersions``,
/// ``KeyValueStoreState``, ``ItemPath/collisionKey``); every driver must pass the same contract suite.
///
/// Rule violations throw ``ProtocolError``; anything else a driver throws is a failure of the store.
public protocol MetadataStore: Sendable {
    // MARK: Accounts and tokens

    /// Makes an account. - Throws: ``ProtocolError/Code/accountExists`` when the name (case-insensitively) is taken.
    func createAccount(name: String, passwordHash: String, quotaBytes: Int64?) async throws -> AccountRecord
    /// The account with this name (compared by ``AccountRecord/nameKey(_:)``).
    func account(named name: String) async throws -> AccountRecord?
    /// The account with this id.
    func account(id: AccountID) async throws -> AccountRecord?
    /// Sets an account's quota (`nil`: unlimited). Stored chunks are kept even if they now exceed it.
    func setQuota(_ bytes: Int64?, of account: AccountID) async throws
    /// Stores a new device token.
    func insertToken(_ token: DeviceTokenRecord) async throws
    /// The token whose secret has this SHA-256, revoked or not.
    func token(secretHash: [UInt8]) async throws -> DeviceTokenRecord?
    /// The account's tokens, oldest first.
    func tokens(of account: AccountID) async throws -> [DeviceTokenRecord]
    /// Revokes a token of the account. - Returns: `false` when the account has no such token.
    func revokeToken(_ id: UUID, of account: AccountID, at date: Date) async throws -> Bool

    // MARK: Chunks

    /// Which of `hashes` the account has no chunk for, each once, in the order given.
    func missingChunks(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash]
    /// The sizes of the account's chunks among `hashes` (at most 1,000), by hash; a hash the account has no chunk
    /// for is left out.
    func chunkSizes(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash: Int64]
    /// Records, in one transaction and in order, that the account has these chunks (their bytes are already
    /// stored), counting each new one's size against the quota once. A new chunk that would take the account over its
    /// quota is refused alone (``ChunkAddition/refused(_:)``, with ``ProtocolError/Code/quotaExceeded``) and the
    /// next ones are still tried.
    func addChunks(_ chunks: [ChunkReference], to account: AccountID) async throws -> [ChunkAddition]

    // MARK: Items and versions

    /// Creates an item, and commits its first version when the request has one.
    func createItem(_ request: CreateItemRequest, in container: ContainerKey) async throws -> ItemResponse
    /// Commits a new version of an item (see ``ItemVersions`` for the rules), its manifest whole or as a delta
    /// against a version of the item the store keeps. A commit sent as a delta is answered without the version when
    /// the version is the one sent (made current or kept as a conflict): the device has it.
    /// - Throws: ``ProtocolError/Code/unknownVersion`` when a delta's base is not a kept version of the item, and
    ///   the codes of ``VersionPayload/resolved(base:)``.
    func commit(_ version: VersionPayload, in container: ContainerKey) async throws -> ItemResponse
    /// Applies creates and commits in order, each as ``createItem(_:in:)`` or ``commit(_:in:)`` would: a refused one
    /// changes nothing and is answered with its error, the others still apply. A driver groups them into as few
    /// transactions as it can.
    /// - Throws: A failure of the store (not a refusal), after which any of them may or may not have applied.
    func applyItemBatch(_ operations: [ItemBatchOperation], in container: ContainerKey) async throws
        -> [Result<ItemResponse, ProtocolError>]
    /// Records chunks whose bytes are stored (as ``addChunks(_:to:)``, for the container's account) and then applies
    /// the operations (as ``applyItemBatch(_:in:)``): a batch that brought its chunks with it. A driver records them
    /// in the operations' transaction where it can.
    func applyItemBatch(
        _ operations: [ItemBatchOperation], addingChunks chunks: [ChunkReference], in container: ContainerKey
    ) async throws -> (chunks: [ChunkAddition], results: [Result<ItemResponse, ProtocolError>])
    /// Renames or moves an item.
    func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerKey) async throws -> ItemResponse
    /// Deletes an item (it stays as a tombstone).
    func deleteItem(_ id: ItemID, basedOn: VersionID?, in container: ContainerKey) async throws -> ItemResponse
    /// Marks a conflict version resolved.
    func markResolved(_ version: VersionID, of item: ItemID, in container: ContainerKey) async throws -> ItemResponse
    /// Removes a version that is not current. Chunks no kept version uses any more (here or when retention prunes
    /// history) stop counting against the account's quota and are no longer reported present.
    func removeVersion(_ version: VersionID, of item: ItemID, in container: ContainerKey) async throws -> ItemResponse
    /// Makes a version current.
    func replaceCurrent(with version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    /// An item and its versions, or `nil` when the container has no such item.
    func item(_ id: ItemID, in container: ContainerKey) async throws -> ItemDetail?
    /// Every item of the container and the feed position they reflect.
    func items(in container: ContainerKey) async throws -> ItemListResponse

    // MARK: Change feed

    /// The changes after `since` (from the start without it), at most `limit` (and at most 100,000).
    /// - Throws: ``ProtocolError/Code/changeTokenExpired`` for a token this container's feed did not give.
    func changes(in container: ContainerKey, since: ChangeToken?, limit: Int) async throws -> ChangePage

    // MARK: Key-value store

    /// Applies a batch of writes from a device, whole or not at all (see ``KeyValueStoreState``).
    func applyKeyValues(
        _ writes: [KeyValueWrite], from device: DeviceID, in container: ContainerKey, limits: KeyValueLimits
    ) async throws -> KeyValueBatchResponse
    /// The whole store (without `since`) or the writes after `since`, tombstones included.
    /// - Throws: ``ProtocolError/Code/changeTokenExpired`` for a token this store did not give.
    func keyValues(in container: ContainerKey, since: ChangeToken?) async throws -> KeyValueChanges
}

/// What recording one chunk did (``MetadataStore/addChunks(_:to:)``).
public enum ChunkAddition: Sendable, Equatable {
    /// The chunk is new to the account and counted against its quota.
    case added
    /// The account had it already.
    case known
    /// Not recorded: the account's quota has no room for it.
    case refused(ProtocolError)
}

extension MetadataStore {
    /// Records the chunks in one transaction and applies the operations in the next ones.
    public func applyItemBatch(
        _ operations: [ItemBatchOperation], addingChunks chunks: [ChunkReference], in container: ContainerKey
    ) async throws -> (chunks: [ChunkAddition], results: [Result<ItemResponse, ProtocolError>]) {
        let added = try await addChunks(chunks, to: container.account)
        return (added, try await applyItemBatch(operations, in: container))
    }

    /// Records that the account has a chunk (see ``addChunks(_:to:)``).
    /// - Returns: `false` when the account had it already.
    /// - Throws: ``ProtocolError/Code/quotaExceeded`` when a new chunk would take the account over its quota.
    public func addChunk(_ chunk: ChunkReference, to account: AccountID) async throws -> Bool {
        switch try await addChunks([chunk], to: account).first {
        case .added: return true
        case .known, nil: return false
        case .refused(let error): throw error
        }
    }

    /// The size of the account's chunk with this hash, or `nil` when it has none.
    public func chunkSize(_ hash: ChunkHash, of account: AccountID) async throws -> Int64? {
        try await chunkSizes([hash], of: account)[hash]
    }

    /// Commits a version sent with its whole manifest.
    public func commit(_ version: VersionRecord, in container: ContainerKey) async throws -> ItemResponse {
        try await commit(VersionPayload(version), in: container)
    }
}
