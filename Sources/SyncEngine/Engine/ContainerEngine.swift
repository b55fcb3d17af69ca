import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UbiquityProtocol

/// The long-running engine of one container, as a `Service`: its sync holds the container's lock; it watches its folder,
/// serves other processes on its socket (``EngineSocketServer``), listens to push, and runs a sync round whenever
/// something changed here or there — and every ``pollInterval`` in case a push was missed. A failed round (the
/// service unreachable, say) is retried with backoff; local changes wait on disk and in the state database
/// meanwhile.
///
/// ```swift
/// let engine = ContainerEngine(sync: sync, pushToken: token)
/// try await ServiceGroup(services: [engine], logger: logger).run()
/// ```
public struct ContainerEngine: Service {
    /// The container's sync.
    public let sync: ContainerSync
    /// The device's token for push (`nil`: no push; rely on polling).
    public let pushToken: String?
    /// Where the engine hears of the service's changes: the service's push for `pushToken` unless another source was
    /// handed in; `nil`: none (polling only).
    public let push: (any PushSource)?
    /// How often a round runs with nothing heard (default 30 s).
    public var pollInterval: Duration = .seconds(30)
    /// The longest wait before retrying a failed round (default 30 s).
    public var maximumBackoff: Duration = .seconds(30)
    /// How often the whole folder is scanned when file-system events are unavailable (default 2 s).
    public var unwatchedScanInterval: Duration = .seconds(2)
    /// The clock polling and backoff wait on (the continuous clock; tests hand in one they move themselves).
    public let clock: any Clock<Duration>
    let logger: Logger

    /// Creates the engine of `sync`'s container.
    public init(
        sync: ContainerSync, pushToken: String?, push: (any PushSource)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), logger: Logger = Logger(label: "ubiquity.engine")
    ) {
        self.sync = sync
        self.pushToken = pushToken
        self.push =
            push
            ?? pushToken.map {
                PushClient(baseURL: sync.client.baseURL, token: $0, containers: [sync.layout.container], logger: logger)
            }
        self.clock = clock
        self.logger = logger
    }

    /// Runs until cancelled or shut down gracefully.
    public func run() async throws {
        // The sync holds the container's engine lock from its opening: nothing below runs without it. One engine
        // drives it at a time.
        try await sync.beginEngine()
        do {
            try await runHoldingSync()
        } catch {
            await sync.endEngine()
            throw error
        }
        await sync.endEngine()
    }

    private func runHoldingSync() async throws {
        await sync.clearTemporaryFiles()
        let (triggers, trigger) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // What the next round is owed: a scan of everything at start (the start-up scan) and after each poll;
        // otherwise the paths file-system events named since the last round, the feed heads push told of, and
        // whether anything else asked (see `RoundDemand`).
        let pending = PendingRound()
        // Without file-system events (inotify unavailable: its per-user limit reached, say) the engine still syncs,
        // finding local changes by a scan every ``unwatchedScanInterval`` instead.
        let watcher: ContainerWatcher?
        do {
            watcher = try ContainerWatcher(folder: sync.layout.folder) { scope in
                pending.add(RoundDemand(scope: scope))
                trigger.yield()
            }
        } catch {
            logger.error(
                "file-system events are unavailable; local changes are found by a scan every \(unwatchedScanInterval)",
                metadata: ["error": "\(error)", "folder": "\(sync.layout.folder.path)"])
            watcher = nil
        }
        defer { watcher?.stop() }
        // Other processes reach the engine through its socket, bound only now that the lock is held.
        let socket = try await EngineSocketServer.bind(serving: sync, logger: logger)
        // A graceful shutdown cancels everything, a round under way included (it may be waiting on an unreachable
        // service): every step of a round is its own transaction, so a cancelled round loses nothing.
        await cancelWhenGracefulShutdown {
            await serve(
                socket: socket, pending: pending, triggers: triggers, trigger: trigger,
                scanEvery: watcher == nil ? min(pollInterval, unwatchedScanInterval) : pollInterval)
        }
        await sync.stopPrefetches()
    }

    /// Serves the socket, listens to push and local key-value writes, scans everything every `interval`, and runs the
    /// rounds they ask for.
    private func serve(
        socket: EngineSocketServer, pending: PendingRound, triggers: AsyncStream<Void>,
        trigger: AsyncStream<Void>.Continuation, scanEvery interval: Duration
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await socket.run()
                } catch {
                    logger.debug("engine socket stopped", metadata: ["error": "\(error)"])
                }
            }
            if let push {
                group.addTask {
                    for await event in push.events() {
                        switch event {
                        case .connected:
                            sync.notePush(failing: nil)
                            pending.add(RoundDemand(other: true))  // what was missed while it was down
                            trigger.yield()
                        case .message(.changed(_, let head)):
                            pending.add(RoundDemand(pushedFeedHeads: [head]))
                            trigger.yield()
                        case .message(.keyValueChanged):
                            pending.add(RoundDemand(other: true))
                            trigger.yield()
                        case .message(.draft(_, let item, let version, let count)):
                            await sync.draftGrew(item, version: version, count: count)
                        case .disconnected(let reason, let retryIn):
                            sync.notePush(failing: reason)
                            logger.notice(
                                "push connection lost; polling until it is back",
                                metadata: ["reason": "\(reason)", "retry in": "\(retryIn)"])
                        default: break
                        }
                    }
                }
            }
            // A key-value write made here (by this process or a client of the socket) goes up with a round soon.
            let events = sync.events()
            group.addTask {
                for await event in events {
                    if case .keyValuesChanged(_, .localChange) = event {
                        pending.add(RoundDemand(other: true))
                        trigger.yield()
                    }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    guard (try? await clock.sleep(for: interval)) != nil else { return }
                    pending.add(RoundDemand(scope: .everything))
                    trigger.yield()
                }
            }
            trigger.yield()
            var backoff = Duration.milliseconds(100)
            for await _ in triggers.cancelOnGracefulShutdown() {
                let demand = pending.take()
                // A round asked for only by the push of a feed head this device has already read finds nothing.
                guard demand.needsRound(feedRead: sync.feedRead()) else { continue }
                do {
                    try await sync.syncOnce(scanning: demand.scope)
                    backoff = .milliseconds(100)
                } catch {
                    pending.add(demand)  // owed again next time
                    logger.warning("sync round failed; retrying", metadata: ["error": "\(error)", "in": "\(backoff)"])
                    let wait = backoff
                    backoff = min(backoff * 2, maximumBackoff)
                    // A retry is one more trigger after the wait; the group ends it on shutdown.
                    group.addTask {
                        guard (try? await clock.sleep(for: wait)) != nil else { return }
                        pending.add(RoundDemand(other: true))
                        trigger.yield()
                    }
                }
            }
            group.cancelAll()
        }
    }
}

/// What the engine's next round is owed: events add to it, a round takes it (the first, a scan of everything).
private final class PendingRound: Sendable {
    private let demand = Mutex(RoundDemand(scope: .everything))

    func add(_ more: RoundDemand) { demand.withLock { $0 = $0.union(more) } }

    func take() -> RoundDemand {
        demand.withLock { demand in
            defer { demand = RoundDemand() }
            return demand
        }
    }
}
