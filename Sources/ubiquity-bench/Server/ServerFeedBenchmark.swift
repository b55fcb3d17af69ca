import Foundation
import UbiquityProtocol
import UbiquityServer

/// `server.feed`: reading a change feed of 100,000 changes from the start, page by page over HTTP.
enum ServerFeedBenchmark {
    static let name = "server.feed"

    static func run(in scratch: URL) async throws {
        let server = try await BenchServer.start(in: scratch.appendingPathComponent("data"))
        let key = ContainerKey(account: try await ServerCommitBenchmark.account(server), container: server.container)
        let total = 100_000
        // Filled straight through the store: each created folder item is one change.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    for index in stride(from: lane, to: total, by: 4) {
                        let request = CreateItemRequest(
                            path: try ItemPath("Folders/\(index / 1000)/\(index)"), kind: .directory)
                        _ = try await server.service.store.createItem(request, in: key)
                    }
                }
            }
            try await group.waitForAll()
        }

        var samples: [Duration] = []
        for _ in 0..<3 {
            var read = 0
            samples.append(
                try await ContinuousClock().measure {
                    var since: ChangeToken?
                    while true {
                        let query = "changes?limit=1000" + (since.map { "&since=\($0)" } ?? "")
                        let page = try JSONDecoder().decode(
                            ChangePage.self, from: try await server.send(.GET, server.url(query)))
                        read += page.changes.count
                        since = page.nextToken
                        if !page.hasMore { break }
                    }
                })
            guard read == total else { throw BenchError("read \(read) changes, expected \(total)") }
        }
        try await server.stop()
        let median = Measure.median(samples)
        BenchOutput.figure(
            bench: name, case: "100000 changes, pages of 1000", metric: "seconds", value: seconds(median))
        BenchOutput.figure(
            bench: name, case: "100000 changes, pages of 1000", metric: "changes_per_second",
            value: Double(total) / seconds(median))
    }
}
