import Crypto
import Foundation
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import SyncEngine

@Suite("Item requests asked for together go to the service as one batch")
struct ItemRequestBatcherTests {
    /// A service that records each batch it is sent and holds the first `held` until told to answer, one at a time;
    /// it refuses creations of paths under `Refused/` as a taken path, fails a batch holding a path under `Down/` as a
    /// lost connection, and refuses a batch of more than one holding a path under `Large/` as too large a body.
    final class FakeService: Sendable {
        let batches = Mutex<[[ItemBatchOperation]]>([])
        private let gate: AsyncStream<Void>
        private let opening: AsyncStream<Void>.Continuation
        private let held: Int

        init(holding held: Int = 1) {
            (gate, opening) = AsyncStream.makeStream(of: Void.self)
            self.held = held
        }

        func open() { opening.yield() }

        /// The chunks each request brought, in the order sent.
        let broughtChunks = Mutex<[[ChunkHash]]>([])

        /// Records the chunks `request` brings, then answers its operations as ``send(_:)-([ItemBatchOperation])``.
        func send(_ request: ItemBatchRequest) async throws -> ItemBatchResponse {
            broughtChunks.withLock { $0.append(request.chunks.map(\.hash)) }
            return try await send(request.operations)
        }

        func send(_ operations: [ItemBatchOperation]) async throws -> ItemBatchResponse {
            let number = batches.withLock { batches in
                batches.append(operations)
                return batches.count
            }
            if number <= held {
                for await _ in gate { break }
            }
            let large = operations.contains { operation in
                if case .create(let request) = operation { return request.path.string.hasPrefix("Large/") }
                return false
            }
            if large, operations.count > 1 { throw ProtocolError(.bodyTooLarge, "the body is too large") }
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
        let batcher = ItemRequestBatcher(send: { try await service.send($0.operations) })
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

    @Test("The sender returns once its own batch is answered; the next batch goes from the oldest waiting caller")
    func senderDoesNotSendForOthers() async throws {
        let service = FakeService(holding: 2)
        let batcher = ItemRequestBatcher(send: { try await service.send($0.operations) })
        let first = Task { try await batcher.createItem(try Self.create("Documents/First")) }
        #expect(await eventually { service.batches.withLock { $0.count } == 1 })
        let requests = try (0..<3).map { try Self.create("Documents/Next \($0)") }
        let others = requests.map { request in Task { try await batcher.createItem(request) } }
        #expect(await eventually { batcher.queuedCount == 3 })

        service.open()
        _ = try await first.value
        // The first caller is back while the second batch is still on its way, sent by one of the others.
        #expect(await eventually { service.batches.withLock { $0.count } == 2 })
        #expect(service.batches.withLock { $0.last?.count } == 3)
        service.open()
        for (request, task) in zip(requests, others) { #expect(try await task.value.item.id == request.id) }
    }

    @Test(
        "A batch the service finds too large is sent again one operation a request, each answered as before and bringing only its own chunks"
    )
    func tooLargeBatchIsSentOneByOne() async throws {
        let service = FakeService()
        let batcher = ItemRequestBatcher(send: { try await service.send($0) })
        let first = Task { try await batcher.createItem(try Self.create("Documents/First")) }
        #expect(await eventually { service.batches.withLock { $0.count } == 1 })
        let requests = try [Self.create("Large/One"), Self.create("Large/Two"), Self.create("Refused/Three")]
        let chunks = try (0..<3).map { index in
            let data = Data("chunk \(index)".utf8)
            return InlineChunk(hash: try ChunkHash(digest: SHA256.hash(data: data)), data: data)
        }
        // The first two bring a chunk each and one they share; the third brings none.
        let brought = [[chunks[0], chunks[1]], [chunks[1], chunks[2]], []]
        let others = zip(requests, brought).map { request, chunks in
            Task { try await batcher.createItem(request, bringing: chunks) }
        }
        #expect(await eventually { batcher.queuedCount == 3 })
        service.open()
        _ = try await first.value
        #expect(try await others[0].value.item.id == requests[0].id)
        #expect(try await others[1].value.item.id == requests[1].id)
        #expect((await others[2].result.thrownError as? ProtocolError)?.code == .pathCollision)
        // The refused batch of three, then each of its operations alone.
        #expect(service.batches.withLock { $0.map(\.count) } == [1, 3, 1, 1, 1])
        // The batch of three brought each chunk once; each operation sent alone brought only its own.
        let sent = service.broughtChunks.withLock { $0 }
        #expect(Set(sent[1]) == Set(chunks.map(\.hash)) && sent[1].count == 3)
        #expect(sent[2...].map(Set.init) == brought.map { Set($0.map(\.hash)) })
    }

    @Test(
        "A batch that fails as a whole (the service unreachable) throws its failure to every caller in it, and the next batch goes"
    )
    func failedBatchFailsEveryCaller() async throws {
        let service = FakeService()
        let batcher = ItemRequestBatcher(send: { try await service.send($0.operations) })
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

@Suite("A batcher may keep several batches on their way")
struct RequestBatcherConcurrencyTests {
    /// A service of numbers that answers each with ten times itself, holding every batch until told to answer one,
    /// and counting the batches on their way at once.
    final class HeldService: Sendable {
        struct Log {
            var batches: [[Int]] = []
            var onTheirWay = 0
            var mostOnTheirWay = 0
        }
        let log = Mutex(Log())
        private let gate: AsyncStream<Void>
        private let opening: AsyncStream<Void>.Continuation

        init() { (gate, opening) = AsyncStream.makeStream(of: Void.self) }

        func answerOne() { opening.yield() }

        func send(_ numbers: [Int]) async -> [Result<Int, any Error>] {
            log.withLock { log in
                log.batches.append(numbers)
                log.onTheirWay += 1
                log.mostOnTheirWay = max(log.mostOnTheirWay, log.onTheirWay)
            }
            for await _ in gate { break }
            log.withLock { $0.onTheirWay -= 1 }
            return numbers.map { .success($0 * 10) }
        }
    }

    @Test("Two batches on their way at once, never three; each operation goes once and each caller gets its own answer")
    func twoBatchesAtOnce() async throws {
        let service = HeldService()
        let batcher = RequestBatcher<Int, Int>(maximumCount: 4, maximumBytes: 1 << 20, concurrency: 2, size: { _ in 1 })
        {
            await service.send($0)
        }
        let first = Task { try await batcher.submit(0) }
        #expect(await eventually { service.log.withLock { $0.batches.count } == 1 })
        let second = Task { try await batcher.submit(1) }
        #expect(await eventually { service.log.withLock { $0.batches.count } == 2 }, "a second batch goes at once")
        let others = (2..<12).map { number in Task { try await batcher.submit(number) } }
        #expect(await eventually { batcher.queuedCount == 10 })
        #expect(service.log.withLock { $0.batches.count } == 2, "no third batch while two are on their way")

        for _ in 0..<5 { service.answerOne() }
        #expect(try await first.value == 0)
        #expect(try await second.value == 10)
        for (number, task) in zip(2..., others) { #expect(try await task.value == number * 10) }
        let log = service.log.withLock { $0 }
        #expect(log.mostOnTheirWay == 2)
        #expect(log.batches.flatMap { $0 }.sorted() == Array(0..<12), "each operation went once")
        #expect(log.batches.dropFirst(2).allSatisfy { $0.count <= 4 })
        #expect(log.batches.count == 5, "the ten waiting went in three batches of at most four")
    }
}

extension Result {
    fileprivate var thrownError: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
