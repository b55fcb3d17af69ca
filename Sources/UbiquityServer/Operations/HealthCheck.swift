import Foundation
import UbiquityProtocol

/// What `GET /health` answers: whether this node reaches its metadata store and its chunk store, each asked a
/// question that reads (an account no one has, a chunk no one has) within a deadline.
struct HealthCheck: Sendable {
    let store: any MetadataStore
    let chunks: any ChunkStore
    /// How long each store may take to answer.
    var deadline: Duration = .seconds(5)

    /// The answer's body: `status` `ok` when both answered, else `unavailable`; `database` and `chunks` each `ok`
    /// or what went wrong.
    struct Report: Codable, Sendable, Equatable {
        var status: String
        var database: String
        var chunks: String
        var isHealthy: Bool { status == "ok" }
    }

    func report() async -> Report {
        async let database = check { _ = try await store.account(id: AccountID()) }
        async let chunkStore = check {
            _ = try await chunks.contains(try ChunkHash(digest: [UInt8](repeating: 0, count: 32)), of: AccountID())
        }
        let (metadata, bytes) = await (database, chunkStore)
        return Report(
            status: metadata == "ok" && bytes == "ok" ? "ok" : "unavailable", database: metadata, chunks: bytes)
    }

    /// `ok` when `probe` returns within the deadline, else what went wrong.
    private func check(_ probe: @escaping @Sendable () async throws -> Void) async -> String {
        let deadline = deadline
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                do {
                    try await probe()
                    return "ok"
                } catch {
                    return "\(error)"
                }
            }
            group.addTask {
                try? await Task.sleep(for: deadline)
                return Task.isCancelled ? nil : "no answer within \(deadline)"
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? "no answer"
        }
    }
}
