import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

@Suite("Engine events on the wire")
struct EngineEventCodingTests {
    @Test("Push and round events keep their fields through the socket's JSON; an unknown event is refused, not guessed")
    func pushAndRoundEvents() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let events: [(SyncEvent, String)] = [
            (.pushChanged(connected: true, reason: nil), #"{"connected":true,"event":"pushChanged"}"#),
            (
                .pushChanged(connected: false, reason: "connection refused"),
                #"{"connected":false,"event":"pushChanged","reason":"connection refused"}"#
            ),
            (.roundEnded(failure: nil), #"{"event":"roundEnded"}"#),
            (.roundEnded(failure: "disk full"), #"{"event":"roundEnded","failure":"disk full"}"#),
        ]
        for (event, wire) in events {
            let encoded = try encoder.encode(EngineMessage.event(event))
            #expect(String(decoding: encoded, as: UTF8.self) == wire)
            #expect(try JSONDecoder().decode(EngineMessage.self, from: encoded) == .event(event))
        }
        // A push event without its state is malformed, as is an event this version does not know (a client skips
        // such a frame: see EngineSocketClient).
        for frame in [#"{"event":"pushChanged"}"#, #"{"event":"somethingNew","connected":true}"#] {
            #expect(throws: (any Error).self) { try JSONDecoder().decode(EngineMessage.self, from: Data(frame.utf8)) }
        }
        let unknown = #expect(throws: ProtocolError.self) {
            try JSONDecoder().decode(EngineMessage.self, from: Data(#"{"event":"somethingNew"}"#.utf8))
        }
        #expect(unknown?.code == .malformedRequest)
    }
}
