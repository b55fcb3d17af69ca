import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("The winner rule")
struct WinnerTests {
    let base = Date(timeIntervalSinceReferenceDate: 815_000_000)

    @Test("the latest modification date wins, whatever the order")
    func latestDate() {
        let older = version("ffffffff-0000-4000-8000-000000000000", date: base)
        let newer = version("00000000-0000-4000-8000-000000000000", date: base + 0.000_001)
        let oldest = version("88888888-0000-4000-8000-000000000000", date: base - 3600)
        for order in permutations([older, newer, oldest]) {
            #expect(VersionRecord.winner(among: order)?.id == newer.id)
        }
    }

    @Test("equal dates: the greater version id wins, whatever the order")
    func tie() {
        let a = version("0fffffff-0000-4000-8000-000000000000", date: base)
        let b = version("a0000000-0000-4000-8000-000000000000", date: base)
        let c = version("9fffffff-0000-4000-8000-000000000000", date: base)
        for order in permutations([a, b, c]) {
            #expect(VersionRecord.winner(among: order)?.id == b.id)
        }
    }

    @Test("dates that encode the same are a tie, so every device agrees after the wire")
    func sameOnTheWire() throws {
        let a = version("a0000000-0000-4000-8000-000000000000", date: base + 0.000_000_1)
        let b = version("b0000000-0000-4000-8000-000000000000", date: base)
        #expect(VersionRecord.winner(among: [a, b])?.id == b.id)
        let decoded = try [a, b].map { try roundTrip($0).0 }
        #expect(VersionRecord.winner(among: decoded)?.id == b.id)
    }

    @Test("no versions, no winner; one version wins alone")
    func edges() {
        #expect(VersionRecord.winner(among: []) == nil)
        let only = version("a0000000-0000-4000-8000-000000000000", date: base)
        #expect(VersionRecord.winner(among: [only]) == only)
    }

    func permutations(_ items: [VersionRecord]) -> [[VersionRecord]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index in
            var rest = items
            let first = rest.remove(at: index)
            return permutations(rest).map { [first] + $0 }
        }
    }
}
