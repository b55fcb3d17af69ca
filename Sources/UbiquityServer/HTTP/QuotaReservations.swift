import Synchronization
import UbiquityProtocol

/// The bytes of chunk uploads the service admitted and has not recorded yet, per account: concurrent uploads each
/// checked against the used bytes alone would all fit, and together take the account past its quota (and its bytes
/// onto the disk). An upload reserves its bytes before it is read and keeps them until its chunks are recorded.
///
/// The used bytes are read from the database without the lock held, so a reservation that ended between that read
/// and the lock (its bytes recorded, then let go) would be counted by neither: the bytes of every reservation that
/// ended are added up, and those that ended since the reading are counted on top of it (at most what they added).
final class QuotaReservations: Sendable {
    private struct Account {
        var reserved: Int64 = 0
        var ended: Int64 = 0
    }

    private let accounts = Mutex<[AccountID: Account]>([:])

    /// The bytes of the reservations of `account` that ended so far: what a reading of its used bytes taken after
    /// this may already count.
    func ended(for account: AccountID) -> Int64 {
        accounts.withLock { $0[account]?.ended ?? 0 }
    }

    /// The bytes reserved for `account` now.
    func reserved(for account: AccountID) -> Int64 {
        accounts.withLock { $0[account]?.reserved ?? 0 }
    }

    /// Reserves `bytes` for `account` if they fit its `quota` beside its `used` bytes (read after ``ended(for:)``
    /// said `endedBefore`), the reservations that ended since, and what is reserved now.
    func reserve(_ bytes: Int64, for account: AccountID, used: Int64, quota: Int64, readAfter endedBefore: Int64)
        -> Bool
    {
        accounts.withLock { accounts in
            var entry = accounts[account] ?? Account()
            let counted = [used, entry.ended - endedBefore, entry.reserved, bytes]
            var total: Int64 = 0
            for part in counted {
                let (sum, overflow) = total.addingReportingOverflow(part)
                guard !overflow else { return false }
                total = sum
            }
            guard total <= quota else { return false }
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
            entry.ended += bytes
            accounts[account] = entry
        }
    }
}
