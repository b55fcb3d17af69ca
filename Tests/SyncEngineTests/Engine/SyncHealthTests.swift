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

    @Test("Push: down since the first failure, whatever the later reasons; up since it came up; kept across rounds")
    func push() throws {
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        var health = SyncHealth().after(pushAt: start, failing: nil)
        #expect(health.push == SyncHealth.Push(connected: true, since: start))
        health = health.after(roundEndedAt: start + 1, failing: nil)
        health = health.after(roundEndedAt: start + 2, failing: POSIXError(.EIO))
        #expect(health.push == SyncHealth.Push(connected: true, since: start), "a round forgot the push")

        health = health.after(pushAt: start + 3, failing: "connection refused")
        health = health.after(pushAt: start + 5, failing: "the service refused the upgrade: 400")
        #expect(
            health.push
                == SyncHealth.Push(connected: false, since: start + 3, reason: "the service refused the upgrade: 400"))
        let wire = try JSONEncoder().encode(health)
        #expect(try JSONDecoder().decode(SyncHealth.self, from: wire) == health)

        health = health.after(pushAt: start + 9, failing: nil)
        #expect(health.push == SyncHealth.Push(connected: true, since: start + 9))
        #expect(health.failure?.rounds == 1 && health.lastSucceeded == start + 1)
    }
}
