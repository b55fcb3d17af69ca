import Foundation
import NIOCore
import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("How the rounds have gone")
struct SyncHealthTests {
    @Test(
        "Failures in a row keep the first one's time and count; a round in step clears them; the wire form round-trips")
    func failuresInARow() throws {
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        var health = SyncHealth().after(roundEndedAt: start, failing: nil)
        #expect(health == SyncHealth(lastSucceeded: start))

        let unreachable = try #require(
            ServiceUnreachableError(IOError(errnoCode: ECONNREFUSED, reason: "connect"), url: "http://host:8080"))
        health = health.after(roundEndedAt: start + 5, failing: unreachable)
        #expect(health.failure?.message == "cannot reach the service at http://host:8080: connection refused")
        #expect(health.failure?.code == nil && health.failure?.rounds == 1)
        let replaced = ProtocolError(.containerFolderReplaced, "the folder is not the one the engine opened")
        health = health.after(roundEndedAt: start + 9, failing: replaced)
        let failure = try #require(health.failure)
        #expect(failure.since == start + 5 && failure.rounds == 2)
        #expect(failure.message == "the folder is not the one the engine opened")
        #expect(failure.code == "containerFolderReplaced")
        #expect(health.lastSucceeded == start)

        let wire = try JSONEncoder().encode(health)
        #expect(try JSONDecoder().decode(SyncHealth.self, from: wire) == health)
        let object = try #require(try JSONSerialization.jsonObject(with: wire) as? [String: Any])
        #expect(object["lastSucceeded"] as? Int == 1_796_000_000_000, "milliseconds since 1970")

        health = health.after(roundEndedAt: start + 12, failing: nil)
        #expect(health == SyncHealth(lastSucceeded: start + 12))
    }
}
