import AsyncHTTPClient
import Foundation
import NIOCore
import UbiquityProtocol

extension ServiceClient {
    // MARK: Accounts

    /// Creates an account (when the service allows open registration).
    public func register(name: String, password: String) async throws -> AccountInfo {
        try await send(
            .POST, "/v1/accounts", json: RegisterRequest(name: name, password: password), as: AccountInfo.self)
    }

    /// Signs a device in; the answer's token is shown only this once.
    public func login(_ request: LoginRequest) async throws -> LoginResponse {
        try await send(.POST, "/v1/login", json: request, as: LoginResponse.self)
    }

    /// The signed-in account and its storage use.
    public func account() async throws -> AccountInfo { try await get("/v1/account", as: AccountInfo.self) }

    // MARK: Items and versions

    /// Every item of the container and the feed position they reflect.
    public func items(in container: ContainerID) async throws -> ItemListResponse {
        try await get(Self.path(container, "items"), as: ItemListResponse.self)
    }

    /// An item and its kept versions. With `have` (a version of the item this device holds), their manifests travel
    /// as deltas against it where shorter, and are made whole here.
    public func item(_ id: ItemID, have: VersionRecord? = nil, in container: ContainerID) async throws -> ItemDetail {
        guard let have else { return try await get(Self.path(container, "items/\(id)"), as: ItemDetail.self) }
        return try await get(Self.path(container, "items/\(id)?have=\(have.id)"), as: ItemDetailPayload.self)
            .resolved(have: have)
    }

    /// Grows the draft of `version` of `item` by its next chunks; returns the draft's length.
    public func appendDraft(
        _ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerID
    ) async throws -> Int {
        try await send(
            .POST, Self.path(container, "items/\(item)/drafts/\(version)"), json: request, as: DraftPage.self
        ).count
    }

    /// The chunks of the draft of `version` of `item` from the `from`th on; `nil` when there is no such draft.
    public func draft(of version: VersionID, of item: ItemID, from: Int, in container: ContainerID) async throws
        -> DraftPage?
    {
        do {
            return try await get(
                Self.path(container, "items/\(item)/drafts/\(version)?from=\(from)"), as: DraftPage.self)
        } catch let error as ProtocolError where error.code == .unknownVersion {
            return nil
        }
    }

    /// The details of several items (at most ``ItemDetailsRequest/maximumItems``) in one request, each with its
    /// manifests as deltas against the version of it named as held, made whole here; items the container lacks are
    /// left out.
    public func items(_ asked: [(id: ItemID, have: VersionRecord?)], in container: ContainerID) async throws
        -> [ItemDetail]
    {
        let held = Dictionary(asked.compactMap { entry in entry.have.map { (entry.id, $0) } }) { first, _ in first }
        let request = ItemDetailsRequest(items: asked.map { .init(id: $0.id, have: $0.have?.id) })
        return try await send(
            .POST, Self.path(container, "items/details"), json: request, as: ItemDetailsResponse.self
        ).items.map { payload in try payload.resolved(have: held[payload.item.id]) }
    }

    /// Creates an item, optionally with its first version (whose chunks must be uploaded).
    public func createItem(_ request: CreateItemRequest, in container: ContainerID) async throws -> ItemResponse {
        try await send(.POST, Self.path(container, "items"), json: request, as: ItemResponse.self)
    }

    /// Commits a new version of an item, its manifest whole or as a delta against a version the service keeps.
    public func commit(_ version: VersionPayload, in container: ContainerID) async throws -> ItemResponse {
        try await send(
            .POST, Self.path(container, "items/\(version.itemID)/versions"), json: version, as: ItemResponse.self)
    }

    /// Creates items and commits versions in one request, up to ``ItemBatchRequest/maximumOperations``, applied in
    /// order: each result is what the single-item request would have answered, or why it was refused.
    public func applyItemBatch(_ request: ItemBatchRequest, in container: ContainerID) async throws
        -> ItemBatchResponse
    {
        try await send(.POST, Self.path(container, "batch"), json: request, as: ItemBatchResponse.self)
    }

    /// Renames or moves an item.
    public func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerID) async throws -> ItemResponse {
        try await send(
            .PATCH, Self.path(container, "items/\(id)"), json: MoveItemRequest(path: path), as: ItemResponse.self)
    }

    /// Deletes an item whose current version is `basedOn`.
    public func deleteItem(_ id: ItemID, basedOn: VersionID?, in container: ContainerID) async throws -> ItemResponse {
        let query = basedOn.map { "?basedOn=\($0)" } ?? ""
        return try await send(
            .DELETE, Self.path(container, "items/\(id)\(query)"), json: Optional<String>.none, as: ItemResponse.self)
    }

    /// One version of an item.
    public func version(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> VersionRecord {
        try await get(Self.path(container, "items/\(item)/versions/\(id)"), as: VersionRecord.self)
    }

    /// Marks a conflict version resolved.
    public func markResolved(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse {
        try await send(
            .POST, Self.path(container, "items/\(item)/versions/\(id)/resolve"), json: Optional<String>.none,
            as: ItemResponse.self)
    }

    /// Removes a version that is not current.
    public func removeVersion(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse
    {
        try await send(
            .DELETE, Self.path(container, "items/\(item)/versions/\(id)"), json: Optional<String>.none,
            as: ItemResponse.self)
    }

    /// Makes a version current.
    public func replaceCurrent(with id: VersionID, of item: ItemID, in container: ContainerID) async throws
        -> ItemResponse
    {
        try await send(
            .POST, Self.path(container, "items/\(item)/current"), json: ReplaceCurrentRequest(versionID: id),
            as: ItemResponse.self)
    }

    // MARK: Chunks

    /// Which of `chunks` the service lacks for this account.
    public func missingChunks(_ chunks: [ChunkReference], in container: ContainerID) async throws -> [ChunkHash] {
        try await send(
            .POST, Self.path(container, "chunks/missing"), json: MissingChunksRequest(chunks: chunks),
            as: MissingChunksResponse.self
        ).missing
    }

    /// Uploads one chunk's bytes under their hash.
    public func uploadChunk(_ bytes: ByteBuffer, hash: ChunkHash, in container: ContainerID) async throws {
        _ = try await send(
            request(
                .PUT, Self.path(container, "chunks/\(hash)"), body: bytes, contentType: "application/octet-stream"),
            limit: 1 << 20)
    }

    /// Uploads several chunks in one request (a ``ChunkBatch``); the service stores them all, or none if one does
    /// not match its hash.
    public func uploadChunks(_ chunks: [(hash: ChunkHash, bytes: ByteBuffer)], in container: ContainerID) async throws {
        var body = ByteBuffer()
        body.reserveCapacity(chunks.reduce(0) { $0 + ChunkBatch.headerBytes + $1.bytes.readableBytes })
        for (hash, bytes) in chunks {
            body.writeBytes(ChunkBatch.header(hash, size: bytes.readableBytes))
            body.writeImmutableBuffer(bytes)
        }
        _ = try await send(
            request(.POST, Self.path(container, "chunks"), body: body, contentType: ChunkBatch.contentType),
            limit: 1 << 20)
    }

    /// Downloads several chunks (at most ``ChunkFetchRequest/maximumChunks``) in one request; a chunk the account
    /// lacks is left out. The bytes are not checked against their hashes here.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` for an answer that is not a ``ChunkBatch`` of chunks asked
    ///   for.
    public func downloadChunks(_ chunks: [ChunkReference], in container: ContainerID) async throws
        -> [ChunkHash: Data]
    {
        let body = ByteBuffer(bytes: try WireJSONEncoder().encode(ChunkFetchRequest(hashes: chunks.map(\.hash))))
        let limit = chunks.reduce(0) { $0 + ChunkBatch.headerBytes + Int($1.size) } + (1 << 20)
        var answer = try await send(.POST, Self.path(container, "chunks/fetch"), body: body, limit: limit)
        let asked = Set(chunks.map(\.hash))
        var found: [ChunkHash: Data] = [:]
        while answer.readableBytes > 0 {
            guard let header = answer.readBytes(length: ChunkBatch.headerBytes) else {
                throw ProtocolError(.malformedRequest, "the service's batch of chunks ends inside a header")
            }
            let (hash, size) = try ChunkBatch.parseHeader(header)
            guard asked.contains(hash), let bytes = answer.readBytes(length: size) else {
                throw ProtocolError(
                    .malformedRequest, "the service's batch of chunks holds one not asked for, or ends early")
            }
            found[hash] = Data(bytes)
        }
        return found
    }

    /// Downloads one chunk, handing its bytes to `receive` piece by piece as they arrive.
    public func downloadChunk(
        _ hash: ChunkHash, in container: ContainerID, into receive: (ByteBuffer) throws -> Void
    ) async throws {
        let response = try await execute(.GET, Self.path(container, "chunks/\(hash)"))
        try await ServiceUnreachableError.wrapping(url: baseURL) {
            guard response.status == .ok else {
                try Self.check(response.status, try await response.body.collect(upTo: 1 << 20))
                return
            }
            for try await piece in response.body { try receive(piece) }
        }
    }

    // MARK: Change feed and key-value store

    /// A page of the container's change feed after `since` (from the start without it), carrying up to
    /// `chunkBytes` bytes of the chunks of the small new versions other devices saved.
    public func changes(in container: ContainerID, since: ChangeToken?, limit: Int = 1000, chunkBytes: Int = 0)
        async throws -> ChangePage
    {
        let query =
            "changes?limit=\(limit)" + (since.map { "&since=\($0)" } ?? "")
            + (chunkBytes > 0 ? "&chunkBytes=\(chunkBytes)" : "")
        return try await get(Self.path(container, query), as: ChangePage.self)
    }

    /// The container's key-value store, or its writes after `since`.
    public func keyValues(in container: ContainerID, since: ChangeToken?) async throws -> KeyValueChanges {
        try await get(Self.path(container, "kv" + (since.map { "?since=\($0)" } ?? "")), as: KeyValueChanges.self)
    }

    /// Applies a batch of key-value writes, whole or not at all.
    public func apply(_ batch: KeyValueBatch, in container: ContainerID) async throws -> KeyValueBatchResponse {
        try await send(.POST, Self.path(container, "kv"), json: batch, as: KeyValueBatchResponse.self)
    }
}
