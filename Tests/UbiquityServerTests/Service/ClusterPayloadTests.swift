import Foundation
import Testing
import UbiquityProtocol

@testable import UbiquityServer

@Suite("Cluster bus: events travel in as few notifications as fit, and a node skips its own")
struct ClusterPayloadTests {
    @Test(
        "Events queued together arrive in order, split below PostgreSQL's payload limit; the sender's own are skipped")
    func payloadsRoundTrip() throws {
        let sender = UUID()
        let hearer = UUID()
        let account = AccountID(uuid: UUID())
        let container = try ContainerID("TEAM.com.example.grocery")
        let events: [ClusterEvent] = (0..<400).map { index in
            index % 3 == 2
                ? .tokenRevoked(UUID())
                : .changed(account: account, container: container, token: ChangeToken("feed.epoch.\(index)"))
        }
        let encoded = try events.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let payloads = PostgresClusterBus.payloads(encoded, from: sender)

        #expect(payloads.count > 1, "400 events do not fit one notification")
        #expect(payloads.allSatisfy { $0.utf8.count < 8000 }, "every payload is under PostgreSQL's limit")
        #expect(payloads.flatMap { PostgresClusterBus.events(in: $0, ignoring: hearer) } == events)
        #expect(payloads.allSatisfy { PostgresClusterBus.events(in: $0, ignoring: sender).isEmpty })
        #expect(PostgresClusterBus.events(in: "not a node\n[]", ignoring: hearer).isEmpty)
        #expect(PostgresClusterBus.events(in: "\(sender)\n{broken", ignoring: hearer).isEmpty)
    }
}
