import Foundation
import Logging
import SyncEngine
import UbiquityProtocol

extension UbiquitousKeyValueStore {
    /// Gives a batch to the container's engine, waiting while it cannot be reached (a refused batch is the engine's
    /// to report: it tells of a quota violation, and the store takes the engine's values again).
    static func send(
        _ batch: [String: PropertyListValue?], ubiquity: Ubiquity, container identifier: String?, logger: Logger
    ) async {
        let puts = batch.compactMapValues { $0 }
        let removes = Set(batch.filter { $0.value == nil }.keys)
        while !Task.isCancelled, !ubiquity.isShutDown, ubiquity.identityToken != nil,
            let container = ubiquity.container(identifier)
        {
            do {
                try await ubiquity.session(for: container).withEngine {
                    try await $0.setKeyValues(puts, removing: removes)
                }
                return
            } catch let error as ProtocolError where error.code != .engineUnavailable {
                logger.warning("the engine refused a key-value write", metadata: ["error": "\(error)"])
                return
            } catch {
                try? await Task.sleep(for: .milliseconds(200))  // the engine is starting, or restarting
            }
        }
    }

    /// Follows the engine's key-value events for as long as the store lives, reopening the container after an
    /// account change or a lost engine.
    static func listen(
        to ubiquity: Ubiquity, container identifier: String?, store: @Sendable () -> UbiquitousKeyValueStore?
    ) async {
        while !Task.isCancelled, !ubiquity.isShutDown {
            guard ubiquity.identityToken != nil, let container = ubiquity.container(identifier),
                let session = try? await ubiquity.session(for: container)
            else {
                guard store() != nil else { return }
                try? await Task.sleep(for: .milliseconds(200))
                continue
            }
            let events = session.events()
            await store()?.refresh(from: session, keys: nil, reason: nil)
            for await event in events {
                guard case .keyValuesChanged(let keys, let reason) = event, let store = store() else { continue }
                await store.refresh(from: session, keys: keys, reason: reason)
            }
            guard store() != nil else { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Takes the engine's values (but for keys written here and not yet taken by the engine) and tells of the
    /// change when it came from outside this device's processes.
    func refresh(from session: ContainerSession, keys: [String]?, reason: KeyValueChangeReason?) async {
        guard let values = try? await session.connection.keyValues() else { return }
        adopt(values, of: ubiquity.identityToken, keys: keys, reason: reason)
    }

    /// Takes the values of the account now signed in (none when signed out).
    func switchAccount() async {
        var values: [String: PropertyListValue] = [:]
        let identity = ubiquity.identityToken
        if identity != nil, let container = ubiquity.container(containerIdentifier),
            let session = try? await ubiquity.session(for: container)
        {
            guard let read = try? await session.connection.keyValues() else { return }
            values = read
        }
        adopt(values, of: identity, keys: nil, reason: nil)
    }

    /// Takes `values`, read from the engine for account `identity`: another account's values replace these whole
    /// (an account change, told with every key that changed); the same account's are merged but for keys written
    /// here and not yet taken by the engine, and told when `reason` is an external one.
    private func adopt(
        _ values: [String: PropertyListValue], of identity: UbiquityIdentityToken?, keys: [String]?,
        reason: KeyValueChangeReason?
    ) {
        let (switched, changed) = state.withLock { state -> (Bool, [String]) in
            if state.identity != identity {
                let keys = Set(state.values.keys).union(values.keys)
                state.identity = identity
                state.values = values
                state.pending = [:]
                return (true, keys.sorted())
            }
            var changed: [String] = []
            for key in Set(state.values.keys).union(values.keys) where state.pending[key] == nil {
                if state.values[key] != values[key] {
                    state.values[key] = values[key]
                    changed.append(key)
                }
            }
            return (false, changed.sorted())
        }
        if switched { return announce(Change(reason: .accountChange, keys: changed)) }
        guard let reason, let external = ChangeReason(reason) else { return }
        // The engine names the keys; a quota violation names keys whose values may not have changed here at all.
        announce(Change(reason: external, keys: keys ?? changed))
    }
}
