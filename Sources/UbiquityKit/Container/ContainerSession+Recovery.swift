import Foundation
import SyncEngine
import UbiquityProtocol

extension ContainerSession {
    /// The external engine this session used went away (its process ended): reaches the engine that follows it —
    /// another process's (`.external`, or `.automatic` when one runs), or one embedded here (`.automatic`) — and
    /// brings the mirror up to date with it, telling listeners (queries) what changed meanwhile. Tries until it
    /// succeeds or the session closes.
    /// - Returns: The new engine's events; `nil` when the session closed, or its engine was not external.
    func reconnect() async -> AsyncStream<SyncEvent>? {
        guard isExternal else { return nil }
        logger.notice(
            "the container's engine ended; reaching the next one", metadata: ["container": "\(layout.container)"])
        var told: String?
        while !Task.isCancelled, !running.withLock({ $0.closed }) {
            do {
                let (connection, engine) = try await Self.engine(
                    for: layout, configuration: configuration, profile: profile)
                let events = try await connection.events()
                replace(connection)
                if let engine { run(engine) }
                try await catchUp()
                return events
            } catch {
                // Said once for each new reason: tries come ten times a second, for as long as, say, the folder's
                // disk is away.
                let reason = "\(error)"
                if reason != told {
                    logger.notice("no engine to reach yet", metadata: ["error": "\(reason)"])
                    told = reason
                }
                // Polling for the next engine: nothing reports when one appears.
                guard (try? await Task.sleep(for: .milliseconds(100))) != nil else { return nil }
            }
        }
        return nil
    }

    /// Takes the engine's items and tells listeners of every difference from the mirror, as the engine's own events
    /// would have: what changed while no engine was reached is not missed.
    private func catchUp() async throws {
        let (items, transfers) = try await connection.items(in: state)
        let now = Dictionary(items.map { ($0.id, $0) }) { first, _ in first }
        let known = self.items()
        for item in known where now[item.id] == nil {
            receive(.itemRemoved(item.id, item.path), announcing: false)
        }
        let before = Dictionary(known.map { ($0.id, $0) }) { first, _ in first }
        for item in items where before[item.id] != item {
            receive(.itemChanged(item), announcing: false)
        }
        for (id, transfer) in transfers where self.transfer(of: id) != transfer {
            if let item = now[id] { receive(.progress(id, item.path, transfer), announcing: false) }
        }
    }
}
