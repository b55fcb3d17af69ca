import Foundation
import Synchronization

/// Recently checked device tokens, so a busy device is not looked up in the database on every request.
///
/// An entry lives for ``lifetime``; revoking a token through this service drops it at once, and a token revoked
/// by another node sharing the database stops working within ``lifetime``.
final class TokenCache: Sendable {
    private struct Entry {
        var token: DeviceTokenRecord
        var expires: ContinuousClock.Instant
    }

    /// How long a checked token is trusted without asking the database again.
    let lifetime: Duration
    private let capacity: Int
    private let entries = Mutex<[[UInt8]: Entry]>([:])

    init(lifetime: Duration = .seconds(5), capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The cached token with this secret hash, if still fresh.
    func token(secretHash: [UInt8]) -> DeviceTokenRecord? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[secretHash] else { return nil }
            guard entry.expires > now else {
                entries[secretHash] = nil
                return nil
            }
            return entry.token
        }
    }

    /// Remembers a valid token.
    func insert(_ token: DeviceTokenRecord) {
        let expires = ContinuousClock.now + lifetime
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token.secretHash] = Entry(token: token, expires: expires)
        }
    }

    /// Forgets every token (revocations may have gone unheard).
    func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    /// Forgets the token with this id (it was revoked).
    func remove(id: UUID) {
        entries.withLock { entries in
            for (key, entry) in entries where entry.token.info.id == id { entries[key] = nil }
        }
    }
}
