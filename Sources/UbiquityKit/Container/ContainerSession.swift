import DocumentKit
import Foundation
import Logging
import SyncEngine
import Synchronization
import UbiquityProtocol

/// One container as this process uses it: the connection to its engine (embedded or external), a mirror of what the
/// engine knows of every item (so the synchronous, Apple-shaped calls answer at once), and the engine's events
/// handed on to queries, key-value stores and presenters.
final class ContainerSession: Sendable {
    /// Where the container lives.
    let layout: ContainerLayout
    /// How the engine is reached now (another one after an external engine ended: see ``reconnect()``).
    var connection: EngineConnection { slot.current.connection }
    /// The engine now, and the wait for the next one.
    let slot: EngineSlot
    /// What the session was opened with: how to reach or start an engine again.
    let configuration: UbiquityConfiguration
    let profile: DeviceProfile
    /// The engine's state database, read (and, for version changes made here, written) by this process too.
    let state: LocalStateStore
    private let mirror: Mutex<Mirror>
    private let broadcast = EventBroadcast<SyncEvent>()
    /// The session's tasks (the embedded engine, the event forwarding), and whether it closed.
    let running: Mutex<(tasks: [Task<Void, Never>], closed: Bool)>
    let logger: Logger

    private struct Mirror {
        var byPath: [ItemPath: LocalItem] = [:]
        var pathByID: [ItemID: ItemPath] = [:]
        var transfers: [ItemID: ItemTransfer] = [:]

        mutating func set(_ item: LocalItem) {
            if let old = pathByID[item.id], old != item.path { byPath[old] = nil }
            byPath[item.path] = item
            pathByID[item.id] = item.path
        }

        mutating func remove(_ id: ItemID) {
            if let path = pathByID.removeValue(forKey: id), byPath[path]?.id == id { byPath[path] = nil }
            transfers[id] = nil
        }
    }

    private init(
        layout: ContainerLayout, connection: EngineConnection, state: LocalStateStore,
        configuration: UbiquityConfiguration, profile: DeviceProfile
    ) {
        self.layout = layout
        slot = EngineSlot(connection)
        self.state = state
        self.configuration = configuration
        self.profile = profile
        logger = configuration.logger
        mirror = Mutex(Mirror())
        running = Mutex(([], false))
    }

    /// Opens the container with the engine `configuration` asks for, signed in as `profile`.
    static func open(
        _ container: ContainerID, configuration: UbiquityConfiguration, profile: DeviceProfile
    ) async throws -> ContainerSession {
        let layout = ContainerLayout(root: configuration.root, container: container)
        let (connection, engine) = try await engine(for: layout, configuration: configuration, profile: profile)
        return try await start(
            layout: layout, connection: connection, engine: engine, configuration: configuration, profile: profile)
    }

    /// The engine `configuration` asks for: the running one's socket (`.external`, or `.automatic` when one runs), or
    /// one embedded here (with its `ContainerEngine` to run).
    static func engine(
        for layout: ContainerLayout, configuration: UbiquityConfiguration, profile: DeviceProfile
    ) async throws -> (EngineConnection, ContainerEngine?) {
        switch configuration.engine {
        case .external:
            return (.external(try await connect(to: layout, waiting: configuration.engineWait)), nil)
        case .automatic:
            let deadline = ContinuousClock.now + configuration.engineWait
            while true {
                if FileManager.default.fileExists(atPath: layout.socket.path),
                    let client = try? await EngineSocketClient.connect(to: layout)
                {
                    return (.external(client), nil)
                }
                do {
                    let (sync, engine) = try embedded(layout: layout, configuration: configuration, profile: profile)
                    return (.embedded(sync), engine)
                } catch let error as UbiquityError where error.code == .engineAlreadyRunning {
                    // Another process holds the lock: one about to serve its socket (then it is used), or one ending
                    // (then the lock comes free). Polling: neither is announced.
                    guard ContinuousClock.now < deadline else { throw error }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
        case .embedded:
            let (sync, engine) = try embedded(layout: layout, configuration: configuration, profile: profile)
            return (.embedded(sync), engine)
        }
    }

    private static func embedded(
        layout: ContainerLayout, configuration: UbiquityConfiguration, profile: DeviceProfile
    ) throws -> (ContainerSync, ContainerEngine) {
        do {
            try layout.claim(
                forAccount: ContainerLayout.accountKey(server: profile.server, account: profile.account),
                register: configuration.containerFolders)
        } catch let error as ProtocolError where error.code == .containerFolderMissing {
            throw UbiquityError(
                .containerFolderMissing,
                error.message + " (or set the container up afresh there: `Ubiquity.forgetContainerFolder`)")
        }
        let milliseconds =
            configuration.requestTimeout.components.seconds * 1000
            + configuration.requestTimeout.components.attoseconds / 1_000_000_000_000_000
        // An unreachable service reads as offline at once (a document's download fails, rounds back off).
        let client = ServiceClient(
            baseURL: profile.server, token: profile.token, timeout: .milliseconds(milliseconds))
        // The sync takes the container's engine lock and holds it until the session closes.
        let sync: ContainerSync
        do {
            sync = try ContainerSync(
                layout: layout, client: client,
                device: profile.device, configuration: configuration.sync, logger: configuration.logger)
        } catch let error as ProtocolError where error.code == .engineAlreadyRunning {
            throw UbiquityError(.engineAlreadyRunning, "another process runs the engine of \(layout.container)")
        }
        var engine = ContainerEngine(sync: sync, pushToken: profile.token, logger: configuration.logger)
        engine.pollInterval = configuration.pollInterval
        return (sync, engine)
    }

    /// Connects to the engine's socket, trying again until `wait` is over.
    private static func connect(to layout: ContainerLayout, waiting wait: Duration) async throws -> EngineSocketClient {
        let deadline = ContinuousClock.now + wait
        while true {
            do {
                return try await EngineSocketClient.connect(to: layout)
            } catch {
                guard ContinuousClock.now < deadline else {
                    throw UbiquityError(.engineUnavailable, "no engine is running for \(layout.container): \(error)")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    private static func start(
        layout: ContainerLayout, connection: EngineConnection, engine: ContainerEngine?,
        configuration: UbiquityConfiguration, profile: DeviceProfile
    ) async throws -> ContainerSession {
        let session = ContainerSession(
            layout: layout, connection: connection, state: try LocalStateStore(url: layout.stateDatabase),
            configuration: configuration, profile: profile)
        // Listen first, then take the snapshot: an event from before the snapshot is at worst applied again, and
        // every later one arrives.
        let events = try await connection.events()
        if let engine { session.run(engine) }
        let (items, transfers) = try await connection.items(in: session.state)
        session.mirror.withLock { mirror in
            for item in items { mirror.set(item) }
            mirror.transfers = transfers
        }
        // Hands each engine event on until the session closes (which cancels this task); when an external engine
        // goes away, the session reaches its successor (or embeds one) and goes on with its events.
        session.add(
            Task { [weak session] in
                var events = events
                while true {
                    for await event in events {
                        guard let session else { return }
                        session.receive(event, announcing: session.isExternal)
                    }
                    guard !Task.isCancelled, let next = await session?.reconnect() else { return }
                    events = next
                }
            })
        return session
    }

    /// Whether the engine runs in another process (which tells only its own process's presenters).
    var isExternal: Bool { if case .external = connection { true } else { false } }

    /// Runs an embedded engine until the session closes (which cancels its task).
    func run(_ engine: ContainerEngine) {
        let logger = logger
        add(
            Task {
                do {
                    try await engine.run()
                } catch {
                    logger.error("the container's engine stopped", metadata: ["error": "\(error)"])
                }
            })
    }

    /// Keeps `task` for ``close()`` to cancel; one added after the session closed is cancelled at once.
    private func add(_ task: Task<Void, Never>) {
        let closed = running.withLock { running in
            if !running.closed { running.tasks.append(task) }
            return running.closed
        }
        if closed { task.cancel() }
    }

    /// Takes another connection (the old one's engine ended).
    func replace(_ connection: EngineConnection) { slot.replace(connection) }

    /// Applies an engine event to the mirror, tells this process's presenters of version changes (an external
    /// engine told only its own process's), and hands it on.
    func receive(_ event: SyncEvent, announcing: Bool) {
        mirror.withLock { mirror in
            switch event {
            case .itemChanged(let item): mirror.set(item)
            case .itemRemoved(let id, _): mirror.remove(id)
            case .progress(let id, _, let transfer): mirror.transfers[id] = transfer
            default: break
            }
        }
        if announcing {
            switch event {
            case .versionGained(_, let path, let version):
                FileCoordinator.announce(.gained(Self.presented(version)), ofItemAt: layout.url(of: path))
            case .versionLost(_, let path, let version):
                FileCoordinator.announce(.lost(Self.presented(version)), ofItemAt: layout.url(of: path))
            case .versionResolved(_, let path, let version):
                FileCoordinator.announce(.resolved(Self.presented(version)), ofItemAt: layout.url(of: path))
            default: break
            }
        }
        broadcast.send(event)
    }

    /// Runs a sync round, then takes the engine's items again: the round's events reach the mirror on their own
    /// task, so this makes sure the caller sees what the round did. (Queries still learn of it from the events.)
    func synchronize() async throws {
        try await withEngine { try await $0.syncNow() }
        let state = state
        let (items, transfers) = try await withEngine { try await $0.items(in: state) }
        // Only adds and updates: an item the snapshot lacks may be one an event added just after it was taken;
        // removals come with their own events.
        mirror.withLock { mirror in
            for item in items { mirror.set(item) }
            mirror.transfers.merge(transfers) { _, new in new }
        }
    }

    static func presented(_ version: VersionRecord) -> PresentedItemVersion {
        PresentedItemVersion(
            persistentIdentifier: version.id.string, isConflict: version.isConflict,
            modificationDate: version.modificationDate, savingComputer: version.savingDevice.name)
    }

    /// The engine's events from now on, after the mirror took them.
    func events() -> AsyncStream<SyncEvent> { broadcast.stream() }

    /// Every item the engine knows, placeholders included.
    func items() -> [LocalItem] { mirror.withLock { Array($0.byPath.values) } }

    /// The item at `path`, when the engine knows one there.
    func item(at path: ItemPath) -> LocalItem? { mirror.withLock { $0.byPath[path] } }

    /// The transfer of the item's content under way, if any.
    func transfer(of id: ItemID) -> ItemTransfer? { mirror.withLock { $0.transfers[id] } }

    /// Downloads the item's current content; when this returns, the mirror has the item as the engine left it.
    func download(_ path: ItemPath) async throws {
        try await withEngine { try await $0.download(path) }
        await refresh(path)
    }

    /// Drops the item's local content; when this returns, the mirror has the placeholder.
    func evict(_ path: ItemPath) async throws {
        try await withEngine { try await $0.evict(path) }
        await refresh(path)
    }

    /// Reads the item at `path` from the engine into the mirror, so a call that changed it reads its own write (the
    /// engine's event of the change may still be on its way).
    func refresh(_ path: ItemPath) async {
        guard let item = try? await withEngine({ try await $0.item(at: path) }) else { return }
        mirror.withLock { $0.set(item) }
    }

    /// The item path of a URL inside the container folder.
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` for a URL elsewhere or in `.ubiquity/`.
    func path(of url: URL) throws -> ItemPath {
        let folder = layout.folder.standardizedFileURL.path
        let target = url.standardizedFileURL.path
        guard target.hasPrefix(folder + "/"), let path = try? ItemPath(String(target.dropFirst(folder.count + 1)))
        else {
            throw UbiquityError(.notUbiquitous, "\(url.path) is not an item of container \(layout.container)")
        }
        return path
    }

    /// Ends the engine (when embedded) or the connection to it, and every listener's stream.
    func close() async {
        let running = running.withLock { running in
            defer { running = ([], true) }
            return running.tasks
        }
        for task in running { task.cancel() }
        slot.close()
        if case .external(let client) = connection { await client.close() }
        for task in running { await task.value }
        // The embedded engine has ended: its lock goes, so another engine (this process's next session of the
        // container, or another process's) may open the container.
        if case .embedded(let sync) = connection { sync.releaseLock() }
        broadcast.finish()
    }
}
