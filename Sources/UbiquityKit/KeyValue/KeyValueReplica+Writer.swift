import Foundation
import Logging
import SyncEngine
import UbiquityProtocol

/// The writer: hands the queued writes to the engine, one batch at a time, and answers those waiting for it.
extension KeyValueReplica {
    /// How the engine answered a batch.
    enum Delivery: Sendable {
        /// The engine took it.
        case taken
        /// The engine refused it whole (its own check of the limits), through `session`, for account `identity`.
        case refused(KeyValueStoreError?, ContainerSession, UbiquityIdentityToken?)
        /// Nothing of it went to the engine: made for an account no longer signed in, or UbiquityKit shut down.
        case dropped
    }

    /// Hands a batch to the engine of the container, for the account signed in now (writes made for another account
    /// are dropped), waiting while the engine cannot be reached; `stalled` hears whether it is waiting.
    static func deliver(
        _ batch: [String: Outgoing], ubiquity: Ubiquity, container identifier: String?, logger: Logger,
        stalled: @Sendable (Bool) -> Void
    ) async -> Delivery {
        defer { stalled(false) }
        let identity = ubiquity.identityToken
        let mine = batch.filter { identity != nil && $0.value.identity == identity }
        if mine.count < batch.count {
            let keys = batch.keys.filter { mine[$0] == nil }.sorted()
            logger.notice(
                "key-value writes made for an account no longer signed in were dropped", metadata: ["keys": "\(keys)"])
        }
        guard !mine.isEmpty else { return .dropped }
        let puts = mine.compactMapValues(\.value)
        let removes = Set(mine.filter { $0.value.value == nil }.keys)
        var wait = Duration.milliseconds(50)
        while !Task.isCancelled, !ubiquity.isShutDown, ubiquity.identityToken == identity,
            let container = ubiquity.container(identifier)
        {
            if ubiquity.openedSession(for: container) == nil { stalled(true) }
            do {
                let session = try await ubiquity.session(for: container)
                guard ubiquity.identityToken == identity else { break }
                do {
                    try await session.connection.setKeyValues(puts, removing: removes)
                    return .taken
                } catch let error as ProtocolError where error.code != .engineUnavailable {
                    logger.warning("the engine refused a key-value write", metadata: ["error": "\(error)"])
                    return .refused(KeyValueStoreError(error), session, identity)
                }
            } catch {
                // The engine is starting, or another process's engine is restarting.
                stalled(true)
                try? await Task.sleep(for: wait)
                wait = min(wait * 2, .seconds(1))
            }
        }
        return .dropped
    }

    /// Returns once every write made before the call was answered by the engine (or dropped: signed out, another
    /// account signed in, UbiquityKit shut down).
    func synchronized() async {
        await withCheckedContinuation { waiter in
            if case .terminated = signals.yield(.barrier(waiter)) { waiter.resume() }
        }
    }

    /// Returns once the writer has handed the engine every write made so far, or is waiting for an engine it
    /// cannot reach; run before an account change or shutdown closes the containers.
    func flush() async {
        await withCheckedContinuation { waiter in
            let idle = state.withLock { state in
                if (state.outgoing.isEmpty && !state.sending) || state.stalled { return true }
                state.flushing.append(waiter)
                return false
            }
            if idle { waiter.resume() }
        }
    }

    /// Hands the queued writes to the engine as one batch, then marks them answered.
    func sendOutgoing() async {
        let taken = state.withLock { state -> ([String: Outgoing], UInt64)? in
            guard !state.outgoing.isEmpty else { return nil }
            defer { state.outgoing = [:] }
            state.sending = true
            return (state.outgoing, state.sequence)
        }
        guard let (batch, through) = taken else { return }
        let delivery = await Self.deliver(
            batch, ubiquity: ubiquity, container: containerIdentifier, logger: logger,
            stalled: { [weak self] stalled in self?.markStalled(stalled) })
        let waiters = state.withLock { state in
            state.delivered = max(state.delivered, through)
            state.written = state.written.filter { $0.value.sequence > state.delivered }
            state.sending = false
            guard state.outgoing.isEmpty else { return [CheckedContinuation<Void, Never>]() }
            defer { state.flushing = [] }
            return state.flushing
        }
        for waiter in waiters { waiter.resume() }
        if case .refused(let error, let session, let identity) = delivery {
            // The engine's own limits check refused what this store took: the keys take the engine's values again
            // (the engine tells of the quota violation itself).
            if let error { state.withLock { $0.lastError = error } }
            await refresh(from: session, of: identity, keys: nil, reason: nil)
        }
    }

    private func markStalled(_ stalled: Bool) {
        let waiters = state.withLock { state in
            state.stalled = stalled
            guard stalled else { return [CheckedContinuation<Void, Never>]() }
            defer { state.flushing = [] }
            return state.flushing
        }
        for waiter in waiters { waiter.resume() }
    }
}
