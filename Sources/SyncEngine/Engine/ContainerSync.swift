import DocumentKit
import Foundation
import Logging
import Synchronization
import UbiquityProtocol

/// Keeps one container folder in step with the service, one round at a time. Observers record what is on disk and
/// what the service has as each item's observations (``ItemObservation``, persisted in the state database); the
/// ``SyncPlanner`` works out the operations from them; the executor runs them, one lane per item and a few items at
/// a time, each checking inside its coordinated write that the local copy is still what the plan saw. Apps' requests
/// (download, evict, version changes) go through the same planner and lanes.
///
/// This is the engine's core; the long-running engine drives it from file-system events and push.
///
/// ```swift
/// let sync = try ContainerSync(layout: layout, client: client, device: device)
/// try await sync.syncOnce()
/// ```
public actor ContainerSync {
    /// How the engine treats content.
    public struct Configuration: Sendable {
        /// Items up to this size are downloaded as soon as they are heard of; larger ones stay placeholders
        /// until asked for (default 1 MiB).
        public var eagerDownloadLimit: Int64
        /// The chunker for uploads.
        public var chunker: FileChunker
        /// The key-value store's limits, checked on this device before a write is taken (Apple's by default; the
        /// service checks its own).
        public var keyValueLimits: KeyValueLimits
        /// The disk the container is on (the machine's file system by default).
        public var disk: any LocalDisk
        /// Makes the identifiers of new items, versions and temporary files (random UUIDs by default; the
        /// simulation's come from its seed).
        public var makeIdentifier: @Sendable () -> UUID
        /// Where the engine's own tasks run: Swift's shared threads by default (`nil`); the simulation runs them on
        /// an executor it steps through in an order its seed chooses.
        public var taskExecutor: (any TaskExecutor)?
        /// How many items out of step are planned at once (``ContainerSync/defaultPlanningPage`` by default, at
        /// least 1): what a round holds in memory, however many items a change brought.
        public var planningPage: Int
        /// A file at least this large whose first version goes up is uploaded while it is still being cut, each few
        /// megabytes of chunks as they are found (16 MiB by default).
        public var pipelinedUploadBytes: Int64
        /// A version whose chunks the service may lack come to at most this many bytes brings them in the request
        /// that creates or commits it, rather than uploading them first (64 KiB by default; with 0 only a version
        /// whose chunks the service has is sent without an upload first).
        public var inlineUploadBytes: Int64
        /// Up to how many bytes of the content of small new files other devices saved a feed page is asked to carry
        /// (``ChangePage/chunks``), so that they need no download request of their own (1 MiB by default; 0: none).
        public var feedChunkBytes: Int

        /// Creates a configuration; the defaults are documented on each field.
        public init(
            eagerDownloadLimit: Int64 = 1 << 20, chunker: FileChunker = FileChunker(),
            keyValueLimits: KeyValueLimits = .apple, disk: any LocalDisk = PosixDisk(),
            makeIdentifier: @escaping @Sendable () -> UUID = { UUID.random() }, taskExecutor: (any TaskExecutor)? = nil,
            planningPage: Int = ContainerSync.defaultPlanningPage, pipelinedUploadBytes: Int64 = 16 << 20,
            inlineUploadBytes: Int64 = 64 << 10, feedChunkBytes: Int = ChangePage.maximumChunkBytes
        ) {
            self.planningPage = max(1, planningPage)
            self.pipelinedUploadBytes = pipelinedUploadBytes
            self.inlineUploadBytes = inlineUploadBytes
            self.feedChunkBytes = feedChunkBytes
            self.eagerDownloadLimit = eagerDownloadLimit
            self.chunker = chunker
            self.keyValueLimits = keyValueLimits
            self.disk = disk
            self.makeIdentifier = makeIdentifier
            self.taskExecutor = taskExecutor
        }
    }

    /// Where the container lives.
    public nonisolated let layout: ContainerLayout
    /// The service.
    public nonisolated let client: ServiceClient
    /// What the engine asks of the service: `client`, unless another was handed in (the simulation's).
    public nonisolated let service: any SyncService
    /// The item creations and commits of concurrent operations, sent to `service` together.
    nonisolated let itemRequests: ItemRequestBatcher
    /// The chunk downloads of concurrent operations (many small files, a large file's next chunks), sent to
    /// `service` together.
    nonisolated let chunkRequests: RequestBatcher<ChunkReference, Data>
    /// The chunk bytes the last feed page carried, which downloads take before asking the service.
    nonisolated let heldChunks = HeldChunks()
    /// The small chunk uploads of concurrent operations (many small files), sent to `service` together.
    nonisolated let smallUploads: RequestBatcher<[UploadChunk], Void>
    /// The reads of new small files that concurrent operations ask for, taken under one coordination.
    nonisolated let smallReads: RequestBatcher<ItemPath, ContentRead>
    /// The placements of downloads that concurrent operations ask for, taken under one coordination.
    nonisolated let placements: RequestBatcher<Placement, Placed>
    /// The uploads larger than ``smallUploadBytes`` under way (``largeUploadCount`` at most), whatever the number of
    /// operations under way.
    nonisolated let largeUploads = TransferSlots(largeUploadCount)
    /// The bytes the small uploads under way hold, in slots of ``smallUploadSlotBytes``: ``smallUploadMemory`` at
    /// most, however many operations run at once.
    nonisolated let smallUploadSlots = TransferSlots(Int(smallUploadMemory / smallUploadSlotBytes))
    /// This device, as versions name it.
    public nonisolated let device: SavingDevice
    /// How content is treated.
    public nonisolated let configuration: Configuration
    /// The container's engine lock, held from ``init`` until ``releaseLock()``.
    nonisolated let lock: EngineLock
    nonisolated let state: LocalStateStore
    nonisolated let disk: any LocalDisk
    let scanner: LocalScanner
    let logger: Logger
    nonisolated let hub = SyncEventHub()
    /// Uploads and downloads under way, by item: read without waiting for the engine, which may be busy with a long
    /// round (an app opening the container asks for them).
    nonisolated let transfers = Mutex<[ItemID: ItemTransfer]>([:])
    /// How the rounds have gone (``health()``).
    nonisolated let rounds = Mutex(SyncHealth())
    /// Downloads under way, by the name of their partial file: a second request for the same content waits for the
    /// first instead of writing the same file.
    var downloads: [String: Task<URL, any Error>] = [:]
    /// Drafts of versions still being uploaded that are fetched ahead of their commit, by the name of the partial
    /// file their download will resume (see ``draftGrew(_:version:count:)``), with how far each got.
    var prefetching: [String: Task<DraftProgress, Never>] = [:]
    /// The drafts' lengths as push last told them, for the fetches running.
    var draftCounts: [String: Int] = [:]
    /// The partial files drafts' fetches that ended by themselves left, with how far each got.
    var prefetched: [String: DraftProgress] = [:]
    /// The names of the partial downloads in `.ubiquity/tmp/`, as far as this sync made, moved and removed them
    /// since it first listed the folder (`nil` before that): a download finds another version's partial file of
    /// its item here, not by listing a folder that holds every download under way.
    var partialFiles: Set<String>?
    /// When this sync first cleared `.ubiquity/tmp/`, by the disk's clock, and whether it got to: what is there from
    /// no later is an earlier engine's (see ``clearTemporaryFiles()``).
    var clearingStarted: Int64?
    var leftoversCleared = false
    /// The folders and packages found unreadable, once read from the state database (see ``unreadablePaths()``).
    var unreadable: [ItemPath: String]?
    /// The identity of the container's folder as opened: each round checks it is still the one at its path
    /// (see ``checkFolder()``).
    nonisolated let openedFolder: FileIdentity
    /// Whether the next round scans the whole container whatever it was asked to (set when a round found the
    /// container's folder replaced, and what it observed is not to be acted on).
    var needsWholeScan = false
    /// The last round asked for; the next waits for it.
    var round: Task<Void, any Error>?
    /// Whether a ``ContainerEngine`` drives this sync.
    var engineRunning = false
    /// The items an operation holds the lane of, and who waits for each (see ``inLane(_:_:)``).
    var lanes = ItemLanes()
    /// Operations' record writes waiting to be committed together (see ``commit(_:)-async``).
    var grouped = GroupedWrites()

    /// Opens the container (creating its folders and state database when missing) and takes its engine lock, held
    /// until ``releaseLock()``: one engine per container on the machine. A sync started for a signed-in device
    /// claims the folder first (``ContainerLayout/claim(forAccount:register:)``, as `ubiquity sync` and UbiquityKit
    /// do), which refuses a folder set up before that is gone or empty now rather than have this make it afresh.
    /// - Throws: ``ProtocolError/Code/engineAlreadyRunning`` when another engine has the container open (in this
    ///   process or another); the file system's and the state database's errors.
    /// - Parameters:
    ///   - service: What the engine asks of the service: `client` unless another is handed in.
    ///   - state: The state database: the container's `.ubiquity/state.sqlite` unless another is handed in (the
    ///     simulation's, in memory).
    public init(
        layout: ContainerLayout, client: ServiceClient, service: (any SyncService)? = nil, device: SavingDevice,
        configuration: Configuration = Configuration(), state: LocalStateStore? = nil,
        types: DocumentTypeRegistry = .default, logger: Logger = Logger(label: "ubiquity.sync")
    ) throws {
        try layout.create()
        lock = try EngineLock(layout)
        self.layout = layout
        self.client = client
        self.service = service ?? client
        self.itemRequests = ItemRequestBatcher(service: service ?? client, container: layout.container)
        self.chunkRequests = Self.chunkBatcher(service: service ?? client, container: layout.container)
        self.smallUploads = Self.uploadBatcher(service: service ?? client, container: layout.container)
        self.device = device
        self.configuration = configuration
        self.state = try state ?? Self.openState(of: layout, logger: logger)
        self.disk = configuration.disk
        self.openedFolder = try Self.folderIdentity(of: layout, on: configuration.disk)
        let scanner = LocalScanner(types: types, disk: configuration.disk)
        self.scanner = scanner
        self.smallReads = Self.smallReadBatcher(
            layout: layout, scanner: scanner, chunker: configuration.chunker, disk: configuration.disk)
        self.placements = Self.placementBatcher(
            scanner: scanner, chunker: configuration.chunker, disk: configuration.disk)
        self.logger = logger
        if !configuration.disk.blocksThreads { try configuration.disk.createDirectory(at: layout.temporary) }
    }

    var container: ContainerID { layout.container }

    /// Every item the engine knows, placeholders included.
    public func items() throws -> [LocalItem] { try state.items() }

    /// The item at `path`, when the engine knows one there.
    public func item(at path: ItemPath) throws -> LocalItem? { try state.item(at: path) }

    /// The uploads and downloads under way, by item.
    public nonisolated func currentTransfers() -> [ItemID: ItemTransfer] { transfers.withLock { $0 } }

    /// How the rounds have gone since this sync was opened: when one last ended in step, and why they fail while
    /// they do.
    public nonisolated func health() -> SyncHealth { rounds.withLock { $0 } }

    /// Notes that the push connection came up (`reason` `nil`) or failed, for ``health()``; tells
    /// ``SyncEvent/pushChanged(connected:reason:)`` when that is news.
    public nonisolated func notePush(failing reason: String?) {
        // Told under the lock, so that two changes noted at once are told in the order they were noted.
        rounds.withLock { health in
            let before = health.push
            health = health.after(pushAt: Date(), failing: reason)
            guard before?.connected != health.push?.connected || before?.reason != health.push?.reason else { return }
            hub.send(.pushChanged(connected: reason == nil, reason: reason))
        }
    }

    /// What the engine does from now on, as it happens, for as long as the stream is iterated.
    public nonisolated func events() -> AsyncStream<SyncEvent> { hub.stream() }

    /// One round: the scope is scanned and what changed here is planned and sent; then the service's feed is read
    /// and what changed there is planned and brought here; then the key-value store both ways. Rounds asked for while
    /// one runs (by the engine's loop and a client of its socket, say) run one after the other.
    /// - Parameter scope: What the local scan looks at: the whole container (the default, as at start-up), or only
    ///   the paths file-system events named (none: a round for the service's changes alone).
    public func syncOnce(scanning scope: ScanScope = .everything) async throws {
        let previous = round
        let next = Task(executorPreference: configuration.taskExecutor) {
            _ = await previous?.result
            do {
                do {
                    try await self.runRound(scope)
                } catch  where Self.isDamage(error) {
                    // The state database is damaged deeper in than opening reads: emptied, the whole container is
                    // compared again with the service, at once.
                    try await self.resetDamagedState(after: error)
                    try await self.runRound(.everything)
                }
                self.rounds.withLock { $0 = $0.after(roundEndedAt: Date(), failing: nil) }
                self.hub.send(.roundEnded(failure: nil))
            } catch {
                // A round cancelled (the engine stopping, an app's call given up) did not fail, whatever error its
                // request under way ended with.
                if !(error is CancellationError), !Task.isCancelled {
                    self.rounds.withLock { $0 = $0.after(roundEndedAt: Date(), failing: error) }
                }
                self.hub.send(.roundEnded(failure: String(describing: error)))
                throw error
            }
        }
        round = next
        try await withTaskCancellationHandler {
            try await next.value
        } onCancel: {
            next.cancel()
        }
    }

    /// The steps of one round (see ``syncOnce(scanning:)``).
    private func runRound(_ scope: ScanScope) async throws {
        try await sendQueuedOperations()
        // What changed here is planned and sent first (as soon as possible, and before an app that hears of the
        // service's changes may quit), then what changed there; only once the scan is known to have been of the
        // container's own folder.
        try checkFolder()
        let whole = needsWholeScan
        try await observeLocal(whole ? .everything : scope)
        try checkFolder()
        if whole { needsWholeScan = false }
        try await settle()
        try await observeRemoteChanges()
        try await settle()
        try clearStalePartials()
        if !leftoversCleared { clearTemporaryFiles() }
        try await forgetAbandonedPrefetches()
        try await syncKeyValues()
    }

    /// Runs blocking disk work off Swift concurrency's shared threads when the disk blocks; in place when not.
    nonisolated func onDisk<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        disk.blocksThreads ? try await BlockingWork.run(work) : try work()
    }

    /// A new identifier, from the configuration's source.
    nonisolated func newIdentifier() -> UUID { configuration.makeIdentifier() }

    /// Marks the sync as driven by a ``ContainerEngine``.
    /// - Throws: ``ProtocolError/Code/engineAlreadyRunning`` when another engine drives it already.
    func beginEngine() throws {
        guard !engineRunning else {
            throw ProtocolError(.engineAlreadyRunning, "an engine already runs the sync of \(container)")
        }
        engineRunning = true
    }

    /// Marks the sync as no longer driven by an engine.
    func endEngine() { engineRunning = false }

    /// Lets the container's engine lock go: another engine may open the container from now on. Call it once this
    /// engine is done (its rounds and its ``ContainerEngine`` ended); freeing the engine lets it go too.
    public nonisolated func releaseLock() { lock.release() }

    /// Removes the partial downloads no operation will resume: of items gone or in step, of versions that are not
    /// the item's current one any more (a download of the current one is resumed; one under way is left alone).
    func clearStalePartials() throws {
        let suffix = ".download" + Self.partialSuffix
        partialFiles = nil
        for name in listPartialFiles()
        where name.hasSuffix(suffix) && downloads[name] == nil && !isPrefetched(name) {
            let parts = name.dropLast(suffix.count).split(separator: ".")
            let id = parts.first.flatMap { try? ItemID(String($0)) }
            let version = parts.dropFirst().first.map(String.init)
            if let id, let item = try state.record(id), !isInStep(item),
                item.observation.remote?.version?.string == version
            {
                continue
            }
            removePartialFile(named: name)
        }
    }

    /// The names of the partial downloads in `.ubiquity/tmp/` (``partialFiles``), listing the folder the first time.
    func listPartialFiles() -> Set<String> {
        if let partialFiles { return partialFiles }
        let listed = Set(
            ((try? disk.contentsOfDirectory(at: layout.temporary)) ?? []).filter {
                $0.hasSuffix(Self.partialSuffix)
            })
        partialFiles = listed
        return listed
    }

    /// Removes the partial download `name` from `.ubiquity/tmp/`, if it is there.
    func removePartialFile(named name: String) {
        try? disk.removeItem(at: layout.temporary.appendingPathComponent(name, isDirectory: false))
        partialFiles?.remove(name)
    }

    /// Clears what a stopped engine left in `.ubiquity/tmp/` but partial downloads (resumed when next asked for).
    /// Called as the engine starts; should the folder not be listed then, each round tries again, taking only what
    /// was last changed no later than the first try (an earlier engine's), not this sync's own downloads under way.
    public func clearTemporaryFiles() {
        guard !leftoversCleared else { return }
        let started = clearingStarted ?? disk.identity(at: layout.temporary)?.capturedAt ?? 0
        clearingStarted = started
        guard let names = try? disk.contentsOfDirectory(at: layout.temporary) else { return }
        for name in names where !name.hasSuffix(Self.partialSuffix) {
            let url = layout.temporary.appendingPathComponent(name, isDirectory: false)
            if (disk.identity(at: url)?.changed ?? 0) > started { continue }  // this sync's own
            try? disk.removeItem(at: url)
        }
        leftoversCleared = true
    }
}

/// What a round's local scan looks at.
public enum ScanScope: Hashable, Sendable {
    /// The whole container: every item compared with the state database.
    case everything
    /// Only these paths, relative to the container's folder, and what is below them (a path inside a package stands
    /// for the package): the items file-system events named.
    case paths(Set<String>)

    /// Both scopes' paths together.
    public func union(_ other: ScanScope) -> ScanScope {
        guard case .paths(let mine) = self, case .paths(let theirs) = other else { return .everything }
        return .paths(mine.union(theirs))
    }
}
