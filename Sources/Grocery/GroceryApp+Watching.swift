import Foundation
import UbiquityKit

extension GroceryApp {
    /// The list now and after every change, on this device or another, as a live query sees it — until the task
    /// that iterates it is cancelled.
    public func watch() async throws -> AsyncStream<[GroceryEntry]> {
        _ = try await documents()
        let query = makeQuery()
        let events = query.updates()
        guard query.start() else { throw UbiquityError(.notSignedIn, "the query could not start") }
        let (stream, continuation) = AsyncStream.makeStream(of: [GroceryEntry].self)
        let task = Task { @MainActor [weak self] in
            for await event in events {
                guard let self else { break }
                switch event {
                case .didFinishGathering, .didUpdate:
                    continuation.yield(self.sorted(query.results.map(GroceryEntry.init)))
                default: break
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            task.cancel()
            query.stop()
        }
        return stream
    }
}
