import Foundation
import Prometheus
import Synchronization
import UbiquityProtocol

/// How long storage takes, for `/metrics`: one duration histogram per store and operation.
final class StoreTimings: Sendable {
    private let registry: PrometheusCollectorRegistry
    /// The metric's name between `ubiquity_` and `_seconds`.
    private let name: String
    private let help: String
    private let histograms = Mutex<[String: DurationHistogram]>([:])

    static let buckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]

    init(registry: PrometheusCollectorRegistry, name: String, help: String) {
        self.registry = registry
        self.name = name
        self.help = help
    }

    /// Runs `body`, recording how long it took (whether it returned or threw) as `operation`.
    func time<Value>(_ operation: String, _ body: () async throws -> Value) async throws -> Value {
        let start = ContinuousClock.now
        defer { histogram(operation).record(ContinuousClock.now - start) }
        return try await body()
    }

    private func histogram(_ operation: String) -> DurationHistogram {
        histograms.withLock { histograms in
            if let histogram = histograms[operation] { return histogram }
            let histogram = registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(
                    namespace: "ubiquity", metricName: name, unitName: "seconds", helpText: help),
                labels: [("operation", operation)], buckets: Self.buckets)
            histograms[operation] = histogram
            return histogram
        }
    }
}

/// A metadata store whose every operation is timed (``ServerMetrics/database``).
struct TimedMetadataStore: MetadataStore {
    let base: any MetadataStore
    let timings: StoreTimings

    func createAccount(name: String, passwordHash: String, quotaBytes: Int64?) async throws -> AccountRecord {
        try await timings.time("create_account") {
            try await base.createAccount(name: name, passwordHash: passwordHash, quotaBytes: quotaBytes)
        }
    }
    func account(named name: String) async throws -> AccountRecord? {
        try await timings.time("account") { try await base.account(named: name) }
    }
    func account(id: AccountID) async throws -> AccountRecord? {
        try await timings.time("account") { try await base.account(id: id) }
    }
    func setQuota(_ bytes: Int64?, of account: AccountID) async throws {
        try await timings.time("set_quota") { try await base.setQuota(bytes, of: account) }
    }
    func insertToken(_ token: DeviceTokenRecord) async throws {
        try await timings.time("insert_token") { try await base.insertToken(token) }
    }
    func token(secretHash: [UInt8]) async throws -> DeviceTokenRecord? {
        try await timings.time("token") { try await base.token(secretHash: secretHash) }
    }
    func tokens(of account: AccountID) async throws -> [DeviceTokenRecord] {
        try await timings.time("tokens") { try await base.tokens(of: account) }
    }
    func revokeToken(_ id: UUID, of account: AccountID, at date: Date) async throws -> Bool {
        try await timings.time("revoke_token") { try await base.revokeToken(id, of: account, at: date) }
    }
    func missingChunks(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash] {
        try await timings.time("missing_chunks") { try await base.missingChunks(hashes, of: account) }
    }
    func chunkSizes(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash: Int64] {
        try await timings.time("chunk_sizes") { try await base.chunkSizes(hashes, of: account) }
    }
    func addChunks(_ chunks: [ChunkReference], to account: AccountID) async throws -> [ChunkAddition] {
        try await timings.time("add_chunks") { try await base.addChunks(chunks, to: account) }
    }
    func createItem(_ request: CreateItemRequest, in container: ContainerKey) async throws -> ItemResponse {
        try await timings.time("create_item") { try await base.createItem(request, in: container) }
    }
    func commit(_ version: VersionPayload, in container: ContainerKey) async throws -> ItemResponse {
        try await timings.time("commit") { try await base.commit(version, in: container) }
    }
    func applyItemBatch(_ operations: [ItemBatchOperation], in container: ContainerKey) async throws
        -> [Result<ItemResponse, ProtocolError>]
    {
        try await timings.time("item_batch") { try await base.applyItemBatch(operations, in: container) }
    }
    func applyItemBatch(
        _ operations: [ItemBatchOperation], addingChunks chunks: [ChunkReference], in container: ContainerKey
    ) async throws -> (chunks: [ChunkAddition], results: [Result<ItemResponse, ProtocolError>]) {
        try await timings.time("item_batch") {
            try await base.applyItemBatch(operations, addingChunks: chunks, in: container)
        }
    }
    func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerKey) async throws -> ItemResponse {
        try await timings.time("move_item") { try await base.moveItem(id, to: path, in: container) }
    }
    func deleteItem(_ id: ItemID, basedOn: VersionID?, in container: ContainerKey) async throws -> ItemResponse {
        try await timings.time("delete_item") { try await base.deleteItem(id, basedOn: basedOn, in: container) }
    }
    func markResolved(_ version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    {
        try await timings.time("mark_resolved") { try await base.markResolved(version, of: item, in: container) }
    }
    func removeVersion(_ version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    {
        try await timings.time("remove_version") { try await base.removeVersion(version, of: item, in: container) }
    }
    func replaceCurrent(with version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    {
        try await timings.time("replace_current") {
            try await base.replaceCurrent(with: version, of: item, in: container)
        }
    }
    func item(_ id: ItemID, in container: ContainerKey) async throws -> ItemDetail? {
        try await timings.time("item") { try await base.item(id, in: container) }
    }
    func items(in container: ContainerKey) async throws -> ItemListResponse {
        try await timings.time("items") { try await base.items(in: container) }
    }
    func changes(in container: ContainerKey, since: ChangeToken?, limit: Int) async throws -> ChangePage {
        try await timings.time("changes") { try await base.changes(in: container, since: since, limit: limit) }
    }
    func applyKeyValues(
        _ writes: [KeyValueWrite], from device: DeviceID, in container: ContainerKey, limits: KeyValueLimits
    ) async throws -> KeyValueBatchResponse {
        try await timings.time("apply_key_values") {
            try await base.applyKeyValues(writes, from: device, in: container, limits: limits)
        }
    }
    func keyValues(in container: ContainerKey, since: ChangeToken?) async throws -> KeyValueChanges {
        try await timings.time("key_values") { try await base.keyValues(in: container, since: since) }
    }
}

/// A chunk store whose lookups, reads and stores are timed (``ServerMetrics/chunkStore``).
struct TimedChunkStore: ChunkStore {
    let base: any ChunkStore
    let timings: StoreTimings

    func beginUpload(for account: AccountID) async throws -> any ChunkUpload {
        TimedChunkUpload(base: try await base.beginUpload(for: account), timings: timings)
    }
    func contains(_ hash: ChunkHash, of account: AccountID) async throws -> Bool {
        try await timings.time("contains") { try await base.contains(hash, of: account) }
    }
    /// Times the opening of a chunk (its first byte), not the sending of the rest.
    func read(_ hash: ChunkHash, of account: AccountID, pieceSize: Int) async throws -> ChunkReader? {
        try await timings.time("read") { try await base.read(hash, of: account, pieceSize: pieceSize) }
    }
    func removeAbandonedUploads() async throws {
        try await base.removeAbandonedUploads()
    }
    func finish(_ uploads: [(upload: any ChunkUpload, hash: ChunkHash)]) async throws {
        // The driver gets its own uploads back (a folder store finishes a batch of its own kind together).
        let unwrapped = uploads.map { entry in
            (upload: (entry.upload as? TimedChunkUpload)?.base ?? entry.upload, hash: entry.hash)
        }
        try await timings.time("store") { try await base.finish(unwrapped) }
    }
}

/// An upload whose storing is timed.
struct TimedChunkUpload: ChunkUpload {
    let base: any ChunkUpload
    let timings: StoreTimings

    func write(_ bytes: UnsafeRawBufferPointer) throws { try base.write(bytes) }
    var byteCount: Int64 { base.byteCount }
    func finish(expecting hash: ChunkHash) async throws {
        try await timings.time("store") { try await base.finish(expecting: hash) }
    }
    func cancel() { base.cancel() }
}
