import UbiquityProtocol

/// What the engine's next round is owed, gathered from what asked for it since the last one: the paths file-system
/// events named (or the whole container), the feed heads the service's push told of, and whether anything else asked
/// (push coming up, a key-value change here or there, a retry).
///
/// A round only the push of a feed head asked for, that this device has already read, would find nothing: a device's
/// own commit is pushed back to it, often after the round that made it has read the feed past it. Heads are kept
/// all, not only the latest, since pushes of commits made at once may arrive out of order: a round is skipped only
/// when every head told is the one read.
struct RoundDemand: Hashable, Sendable {
    /// What the round's local scan looks at.
    var scope = ScanScope.paths([])
    /// The feed heads push told of.
    var pushedFeedHeads: Set<ChangeToken> = []
    /// Whether something other than push's feed heads and file-system events asked for the round.
    var other = false

    /// Whether a round is needed, `feedRead` being the token of the feed as far as the device has read it (`nil`
    /// before its first read); read only when push's heads are all that asked.
    func needsRound(feedRead: @autoclosure () -> ChangeToken?) -> Bool {
        if other || scope != .paths([]) { return true }
        if pushedFeedHeads.isEmpty { return false }
        let read = feedRead()
        return pushedFeedHeads.contains { $0 != read }
    }

    /// Both demands together.
    func union(_ more: RoundDemand) -> RoundDemand {
        RoundDemand(
            scope: scope.union(more.scope), pushedFeedHeads: pushedFeedHeads.union(more.pushedFeedHeads),
            other: other || more.other)
    }
}
