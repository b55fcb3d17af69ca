import Foundation
import UbiquityProtocol

/// How a container's sync rounds have gone since its engine started: when one last ended in step, and while they
/// fail, why, since when and how many in a row; and whether the engine hears the service's pushes — what `ubiquity
/// status` shows, since a state database with nothing waiting says nothing of an engine that cannot reach the
/// service, whose folder's disk went away, or that finds changes only by polling (a proxy that does not pass
/// WebSocket upgrades on, say).
///
/// On the engine's socket it is the answer to `{"op":"health"}`, times in milliseconds since 1970:
///
/// ```json
/// {"id":1,"result":"health","health":{"lastSucceeded":1796000000000,"push":{"connected":true,"since":1795999999000}}}
/// {"id":2,"result":"health","health":{"lastSucceeded":1796000000000,"failure":{"message":"cannot reach the service at http://host:8080: connection refused","since":1796000005000,"rounds":3},"push":{"connected":false,"since":1796000004000,"reason":"connection refused"}}}
/// ```
public struct SyncHealth: Hashable, Sendable, Codable {
    /// Why rounds fail, while they do.
    public struct Failure: Hashable, Sendable, Codable {
        /// The last failed round's error, as people read it.
        public var message: String
        /// The error's code when it has one (``ProtocolError/code``): `containerFolderReplaced`, `unauthorized`, ….
        public var code: String?
        /// When the first of the rounds failing in a row ended.
        public var since: Date
        /// How many rounds in a row failed.
        public var rounds: Int

        /// Creates a failure.
        public init(message: String, code: String? = nil, since: Date, rounds: Int) {
            self.message = message
            self.code = code
            self.since = since
            self.rounds = rounds
        }

        enum CodingKeys: String, CodingKey {
            case message, code, since, rounds
        }

        /// Decodes a failure.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            message = try container.decode(String.self, forKey: .message)
            code = try container.decodeIfPresent(String.self, forKey: .code)
            since = SyncHealth.date(milliseconds: try container.decode(Int64.self, forKey: .since))
            rounds = try container.decode(Int.self, forKey: .rounds)
        }

        /// Encodes the failure in its wire form.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(message, forKey: .message)
            try container.encodeIfPresent(code, forKey: .code)
            try container.encode(SyncHealth.milliseconds(since), forKey: .since)
            try container.encode(rounds, forKey: .rounds)
        }
    }

    /// Whether the engine hears the service's pushes, since when, and why not while it does not.
    public struct Push: Hashable, Sendable, Codable {
        /// Whether the push connection is up.
        public var connected: Bool
        /// When it came up, or went down (or first failed to come up).
        public var since: Date
        /// Why it is down: the last try's failure.
        public var reason: String?

        /// Creates a push report.
        public init(connected: Bool, since: Date, reason: String? = nil) {
            self.connected = connected
            self.since = since
            self.reason = reason
        }

        enum CodingKeys: String, CodingKey {
            case connected, since, reason
        }

        /// Decodes a push report.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            connected = try container.decode(Bool.self, forKey: .connected)
            since = SyncHealth.date(milliseconds: try container.decode(Int64.self, forKey: .since))
            reason = try container.decodeIfPresent(String.self, forKey: .reason)
        }

        /// Encodes the push report in its wire form.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(connected, forKey: .connected)
            try container.encode(SyncHealth.milliseconds(since), forKey: .since)
            try container.encodeIfPresent(reason, forKey: .reason)
        }
    }

    /// When a round last ended with everything sent and brought; `nil` when none has since the engine started.
    public var lastSucceeded: Date?
    /// Why rounds fail, while they do; `nil` once one succeeds (or before any ended).
    public var failure: Failure?
    /// The push connection's state; `nil` when the engine listens to none (a single round, a sync without push).
    public var push: Push?

    /// Creates a health report.
    public init(lastSucceeded: Date? = nil, failure: Failure? = nil, push: Push? = nil) {
        self.lastSucceeded = lastSucceeded
        self.failure = failure
        self.push = push
    }

    /// The report after a round that ended at `time`, failing with `error` (`nil`: in step).
    public func after(roundEndedAt time: Date, failing error: (any Error)?) -> SyncHealth {
        guard let error else { return SyncHealth(lastSucceeded: time, push: push) }
        return SyncHealth(
            lastSucceeded: lastSucceeded,
            failure: Failure(
                message: (error as? ProtocolError)?.message ?? String(describing: error),
                code: (error as? ProtocolError)?.code.rawValue, since: failure?.since ?? time,
                rounds: (failure?.rounds ?? 0) + 1),
            push: push)
    }

    /// The report after the push connection came up (`reason` `nil`) or failed at `time`: a failure while it is
    /// down already keeps the time it went down, with the newer reason.
    public func after(pushAt time: Date, failing reason: String?) -> SyncHealth {
        var next = self
        let connected = reason == nil
        let since = push.flatMap { $0.connected == connected ? $0.since : nil } ?? time
        next.push = Push(connected: connected, since: since, reason: reason)
        return next
    }

    enum CodingKeys: String, CodingKey {
        case lastSucceeded, failure, push
    }

    /// Decodes a report.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lastSucceeded = try container.decodeIfPresent(Int64.self, forKey: .lastSucceeded).map(Self.date(milliseconds:))
        failure = try container.decodeIfPresent(Failure.self, forKey: .failure)
        push = try container.decodeIfPresent(Push.self, forKey: .push)
    }

    /// Encodes the report in its wire form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(lastSucceeded.map(Self.milliseconds), forKey: .lastSucceeded)
        try container.encodeIfPresent(failure, forKey: .failure)
        try container.encodeIfPresent(push, forKey: .push)
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    static func date(milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
