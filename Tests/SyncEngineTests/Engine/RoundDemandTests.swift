import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("What asks the engine for a round")
struct RoundDemandTests {
    let read = ChangeToken("f1.7.42")
    let newer = ChangeToken("f1.7.43")

    @Test("Push of the feed head already read asks for nothing; of any other head, a round")
    func pushedHeads() {
        #expect(!RoundDemand().needsRound(feedRead: read), "nothing asked")
        #expect(!RoundDemand(pushedFeedHeads: [read]).needsRound(feedRead: read), "the device's own commit, read")
        #expect(RoundDemand(pushedFeedHeads: [newer]).needsRound(feedRead: read))
        #expect(RoundDemand(pushedFeedHeads: [read]).needsRound(feedRead: nil), "nothing read yet")
        // Two commits made at once, pushed out of order: the latest to arrive is the one read, the other is not.
        let both = RoundDemand(pushedFeedHeads: [newer]).union(RoundDemand(pushedFeedHeads: [read]))
        #expect(both.needsRound(feedRead: read))
        #expect(both.needsRound(feedRead: newer), "the older head differs from the newer one read")
    }

    @Test("File-system events, polls, push coming up, key-value changes and retries always ask for a round")
    func otherReasons() {
        #expect(RoundDemand(scope: .paths(["Documents/a.txt"])).needsRound(feedRead: read))
        #expect(RoundDemand(scope: .everything).needsRound(feedRead: read))
        #expect(RoundDemand(pushedFeedHeads: [read], other: true).needsRound(feedRead: read))
        let gathered = RoundDemand(pushedFeedHeads: [read]).union(RoundDemand(scope: .paths(["Documents/b.txt"])))
        #expect(gathered.scope == .paths(["Documents/b.txt"]) && gathered.pushedFeedHeads == [read])
        #expect(gathered.needsRound(feedRead: read))
        #expect(RoundDemand(scope: .paths(["x"])).union(RoundDemand(scope: .everything)).scope == .everything)
    }
}
