import Synchronization
import UbiquityProtocol

/// The bytes of chunk uploads the service admitted and has not recorded yet, per account: concurrent uploads each
/// checked against the used bytes alone would all fit, and together take the account past its quota (and its bytes
/// onto the disk). An upload reserves its bytes before it is read and keeps them until its chunks are recorded.
///
/// The used bytes are read from the database without the lock held, so a reservation that ended between that read
/// and the lock (its bytes recorded, then let go) would be counted by neither: each ending is counted, and a
/// reservation made over a reading older than the last ending is refused as stale (read again and retry).
final class QuotaReservations: Sendable {
    private struct Account {
        var reserved: Int64 = 0
        var endings: UInt64 = 0
    }

    private let accounts = Mutex<[AccountID: Account]>([:])

    /// How many reservations of `account` ended so far: a reading of its used bytes taken after this counts every
    /// one of them as recorded.
    func endings(of account: AccountID) -> UInt64 {
        accounts.withLock { $0[account]?.endings ?? 0 }
    }

    /// The bytes reserved for `account` now.
    func reserved(for account: AccountID) -> Int64 {
        accounts.withLock { $0[account]?.reserved ?? 0 }
    }

    /// Reserves `bytes` for `account` if they fit its `quota` beside its `used` bytes (read after `endings`) and
    /// what is reserved already.
    /// - Returns: Whether they fit; `nil` when a reservation ended since `used` was read (read it again).
    func reserve(_ bytes: Int64, for account: AccountID, used: Int64, quota: Int64, readAfter endings: UInt64) -> Bool?
    {
        accounts.withLock { accounts in
            var entry = accounts[account] ?? Account()
            guard entry.endings == endings else { return nil }
            let (total, overflow) = used.addingReportingOverflow(entry.reserved)
            let (after, more) = total.addingReportingOverflow(bytes)
            guard !overflow, !more, after <= quota else { return false }
            entry.reserved += bytes
            accounts[account] = entry
            return true
        }
    }

    /// Ends a reservation of `bytes` (its chunks recorded, or the upload refused).
    func release(_ bytes: Int64, of account: AccountID) {
        accounts.withLock { accounts in
            guard var entry = accounts[account] else { return }
            entry.reserved -= bytes
            entry.endings += 1
            accounts[account] = entry
        }
    }
}
