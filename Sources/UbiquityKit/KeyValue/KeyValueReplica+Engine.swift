import Foundation
import Logging
import SyncEngine
import UbiquityProtocol

extension KeyValueReplica {
    typealias Change = UbiquitousKeyValueStore.Change
    typealias ChangeReason = UbiquitousKeyValueStore.ChangeReason

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

    /// Follows the engine's key-value events for as long as the replica lives, opening the container again after
    /// an account change or a lost engine.
    static func follow(_ replica: WeakReplica, ubiquity: Ubiquity, container identifier: String?) async {
        guard let container = ubiquity.container(identifier) else { return }  // not one of the app's: nothing to follow
        while !Task.isCancelled, !ubiquity.isShutDown, replica.value != nil {
            let identity = ubiquity.identityToken
            // The container is opened only once the replica holds the signed-in account's values.
            guard identity != nil, replica.value?.state.withLock({ $0.identity }) == identity,
                let session = try? await ubiquity.session(for: container), ubiquity.identityToken == identity
            else {
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            let events = session.events()
            // What changed while nobody listened: before the container was open, or while its engine was away.
            await replica.value?.refresh(from: session, of: identity, keys: nil, reason: .serverChange)
            for await event in events {
                guard case .keyValuesChanged(let keys, let reason) = event else { continue }
                guard let current = replica.value else { return }
                await current.refresh(from: session, of: identity, keys: keys, reason: ChangeReason(reason))
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Takes the engine's values and tells of the change for `reason` (`nil`: silently — this device's own writes).
    func refresh(
        from session: ContainerSession, of identity: UbiquityIdentityToken?, keys: [String]?, reason: ChangeReason?
    ) async {
        let answered = state.withLock { $0.delivered }
        guard let values = try? await session.connection.keyValues() else { return }
        if let change = adopt(values, of: identity, answeredThrough: answered, keys: keys, reason: reason) {
            announce(change)
        }
    }

    /// Takes the values of the account signed in now from its state database on this machine (none when signed out,
    /// or before its first sync here), and tells of an account change; its engine brings the rest.
    func switchAccount() {
        let identity = ubiquity.identityToken
        let answered = state.withLock { $0.delivered }
        guard state.withLock({ $0.identity }) != identity else { return }
        let values = Self.storedValues(of: identity, ubiquity: ubiquity, container: containerIdentifier)
        if let change = adopt(values, of: identity, answeredThrough: answered, keys: nil, reason: nil, switching: true)
        {
            announce(change)
        }
    }

    /// Takes `values`, read for account `identity` once the engine had answered writes up to `answered`.
    ///
    /// Another account's values replace these whole (an account change, naming every key whose value changed), but
    /// for that account's writes made here and not yet answered. The same account's values are merged but for keys
    /// written here that the engine had not answered when the read began, and told for `reason`. A read for an
    /// account no longer signed in is ignored.
    /// - Returns: The change to tell, if any.
    private func adopt(
        _ values: [String: PropertyListValue], of identity: UbiquityIdentityToken?, answeredThrough answered: UInt64,
        keys: [String]?, reason: ChangeReason?, switching: Bool = false
    ) -> Change? {
        state.withLock { state -> Change? in
            guard identity == ubiquity.identityToken else { return nil }
            if state.identity != identity {
                var next = values
                for (key, mark) in state.written where mark.sequence > answered && mark.identity == identity {
                    next[key] = state.values[key]
                }
                let changed = Set(state.values.keys).union(next.keys).filter { state.values[$0] != next[$0] }
                state.values = next
                state.identity = identity
                state.written = state.written.filter { $0.value.identity == identity }
                return Change(reason: .accountChange, keys: changed.sorted())
            }
            guard !switching else { return nil }
            var changed: [String] = []
            for key in Set(state.values.keys).union(values.keys) where state.values[key] != values[key] {
                if let mark = state.written[key], mark.sequence > answered { continue }
                state.values[key] = values[key]
                changed.append(key)
            }
            switch reason {
            case nil: return nil
            // A quota violation names keys whose values may not have changed here at all.
            case .quotaViolationChange?: return Change(reason: .quotaViolationChange, keys: keys ?? changed.sorted())
            case let reason?: return changed.isEmpty ? nil : Change(reason: reason, keys: changed.sorted())
            }
        }
    }

    /// The values the state database on this machine holds for account `identity`: the container folder's, or the
    /// one kept aside for the account while another is signed in.
    static func storedValues(
        of identity: UbiquityIdentityToken?, ubiquity: Ubiquity, container identifier: String?
    ) -> [String: PropertyListValue] {
        guard let identity, let container = ubiquity.container(identifier) else { return [:] }
        let layout = ubiquity.layout(of: container)
        let owner = (try? String(contentsOf: layout.accountFile, encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let database =
            owner == identity.value
            ? layout.stateDatabase
            : ContainerLayout(
                root: layout.signedOutAccounts.appendingPathComponent(identity.value, isDirectory: true),
                container: container
            ).stateDatabase
        guard FileManager.default.fileExists(atPath: database.path) else { return [:] }
        return (try? LocalStateStore(url: database).keyValues()) ?? [:]
    }
}
