import Foundation
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import SyncEngine

@Suite("Item requests asked for together go to the service as one batch")
struct ItemRequestBatcherTests {
    /// A service that records each batch it is sent and holds the first until told to answer; it refuses creations
    /// of paths under `Refused/` as a taken path, and fails a batch holding a path under `Down/` as a lost connection.
    final class FakeService: Sendable {
        let batches = Mutex<[[ItemBatchOperation]]>([])
        private let gate: AsyncStream<Void>
        private let opening: AsyncStream<Void>.Continuation
        private let held = Mutex(true)

        init() { (gate, opening) = AsyncStream.makeStream(of: Void.self) }

        func open() { opening.yield() }

        func send(_ operations: [ItemBatchOperation]) async throws -> ItemBatchResponse {
            let first = batches.withLock { batches in
                batches.append(operations)
                return batches.count == 1
            }
            if first, held.withLock({ $0 }) {
                for await _ in gate { break }
            }
            var results: [ItemBatchResult] = []
            for operation in operations {
                guard case .create(let request) = operation else {
                    results.append(.refused(ProtocolError(.itemNotFound, "no such item")))
                    continue
                }
                if request.path.string.hasPrefix("Down/") { throw URLError(.networkConnectionLost) }
                if request.path.string.hasPrefix("Refused/") {
                    results.append(.refused(ProtocolError(.pathCollision, "\(request.path) is taken")))
                } else {
                    let record = ItemRecord(id: request.id, path: request.path, kind: request.kind)
                    results.append(.applied(ItemResponse(item: record, token: ChangeToken("\(results.count)"))))
                }
            }
            return ItemBatchResponse(results: results, token: nil)
        }
    }

    static func create(_ path: String) throws -> CreateItemRequest {
        CreateItemRequest(path: try ItemPath(path), kind: .directory)
    }

    @Test(
        "Requests made while a batch is on its way go together in the next; each caller gets its own answer or its own refusal"
    )
    func concurrentRequestsShareABatch() async throws {
        let service = FakeService()
        let batcher = ItemRequestBatcher(send: { try await service.send($0) })
        let lone = try Self.create("Documents/First")
        let first = Task { try await batcher.createItem(lone) }
        #expect(await eventually { service.batches.withLock { $0.count } == 1 })

        // While the first batch is held, eleven more: ten to create, one refused.
        var requests = try (0..<10).map { try Self.create("Documents/Item \($0)") }
        requests.append(try Self.create("Refused/Taken"))
        let waiting = requests.map { request in Task { try await batcher.createItem(request) } }
        #expect(await eventually { batcher.queuedCount == requests.count })
        #expect(service.batches.withLock { $0.count } == 1, "nothing else went while the first batch was on its way")

        service.open()
        #expect(try await first.value.item.id == lone.id)
        for (request, task) in zip(requests, waiting) {
            let outcome = await task.result
            if request.path.string.hasPrefix("Refused/") {
                #expect(throws: ProtocolError.self) { try outcome.get() }
                #expect((outcome.thrownError as? ProtocolError)?.code == .pathCollision)
            } else {
                #expect(try outcome.get().item.id == request.id, "an answer reached its own caller")
            }
        }
        let sent = service.batches.withLock { $0 }
        #expect(sent.count == 2, "the eleven went as one batch")
        #expect(Set(sent.last ?? []) == Set(requests.map { ItemBatchOperation.create($0) }))

        // A lone request later goes at once, alone.
        let later = try Self.create("Documents/Later")
        #expect(try await batcher.createItem(later).item.id == later.id)
        #expect(service.batches.withLock { $0.count } == 3)
    }

    @Test(
        "A batch that fails as a whole (the service unreachable) throws its failure to every caller in it, and the next batch goes"
    )
    func failedBatchFailsEveryCaller() async throws {
        let service = FakeService()
        let batcher = ItemRequestBatcher(send: { try await service.send($0) })
        let first = Task { try await batcher.createItem(try Self.create("Documents/First")) }
        #expect(await eventually { service.batches.withLock { $0.count } == 1 })
        let doomed = try [Self.create("Documents/Fine"), Self.create("Down/Lost")].map { request in
            Task { try await batcher.createItem(request) }
        }
        #expect(await eventually { batcher.queuedCount == 2 })
        service.open()
        _ = try await first.value
        for task in doomed {
            let outcome = await task.result
            #expect(outcome.thrownError is URLError, "every caller of the failed batch hears of it")
        }
        let after = try Self.create("Documents/After")
        #expect(try await batcher.createItem(after).item.id == after.id)
    }
}

extension Result {
    fileprivate var thrownError: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
