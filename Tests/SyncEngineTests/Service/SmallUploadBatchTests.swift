import Crypto
import Foundation
import NIOCore
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import SyncEngine

@Suite("Small chunk uploads of concurrent operations go up together")
struct SmallUploadBatchTests {
    /// Forwards uploads to a live service, recording each request's chunks and holding the first until opened.
    final class HeldUploads: Sendable {
        let requests = Mutex<[[ChunkHash]]>([])
        private let gate: AsyncStream<Void>
        private let opening: AsyncStream<Void>.Continuation
        let client: ServiceClient
        let container: ContainerID

        init(client: ServiceClient, container: ContainerID) {
            (gate, opening) = AsyncStream.makeStream(of: Void.self)
            self.client = client
            self.container = container
        }

        func open() { opening.yield() }

        func upload(_ chunks: [ContainerSync.UploadChunk]) async throws {
            let number = requests.withLock { requests in
                requests.append(chunks.map(\.hash))
                return requests.count
            }
            if number == 1 {
                for await _ in gate { break }
            }
            try await client.uploadChunks(chunks, in: container)
        }
    }

    static func chunk(_ text: String) throws -> ContainerSync.UploadChunk {
        let bytes = Data(text.utf8)
        return (try ChunkHash(digest: SHA256.hash(data: bytes)), ByteBuffer(bytes: bytes))
    }

    @Test(
        "Files' chunks asked for while a request is on its way go up in one request; a chunk whose bytes are not its hash's refuses only its own upload, and every other chunk is stored"
    )
    func smallUploadsShareARequest() async throws {
        let local = try await LocalService.start()
        do {
            try await Self.run(on: local)
        } catch {
            await local.remove()
            throw error
        }
        await local.remove()
    }

    private static func run(on local: LocalService) async throws {
        let client = try await local.signIn(account: "ada", device: "laptop")
        let container = try ContainerID("TEAM.com.example.grocery")
        let uploads = HeldUploads(client: client, container: container)
        let batcher = ContainerSync.uploadBatcher { try await uploads.upload($0) }

        let lone = try chunk("the first file")
        let first = Task { try await batcher.submit([lone]) }
        #expect(await eventually { uploads.requests.withLock { $0.count } == 1 })
        // While it is held, twenty files' chunks, and one whose bytes were saved over since they were hashed.
        let files = try (0..<20).map { [try chunk("file \($0)")] }
        let forged = (hash: try chunk("what was hashed").hash, bytes: ByteBuffer(string: "what is there now"))
        let operations = files + [[forged]]
        let waiting = operations.map { operation in Task { try await batcher.submit(operation) } }
        #expect(await eventually { batcher.queuedCount == operations.count })
        #expect(uploads.requests.withLock { $0.count } == 1, "nothing else went while the first was on its way")

        uploads.open()
        try await first.value
        for task in waiting.dropLast() { try await task.value }
        let refused = try #require(waiting.last)
        await #expect(throws: ProtocolError.self) { try await refused.value }
        do {
            try await refused.value
        } catch let error as ProtocolError {
            #expect(error.code == .chunkHashMismatch)
        }
        // The held one, the twenty-one together (refused for the forged chunk), then each alone.
        let sizes = uploads.requests.withLock { $0.map(\.count) }
        #expect(sizes == [1, operations.count] + Array(repeating: 1, count: operations.count))

        let stored = try await client.downloadChunks(
            ([lone] + files.joined()).map { ChunkReference(hash: $0.hash, size: Int64($0.bytes.readableBytes)) },
            in: container)
        for upload in [lone] + files.joined() {
            #expect(stored[upload.hash] == Data(upload.bytes.readableBytesView), "every file's chunk is stored")
        }
        let forgedStored = try await client.downloadChunks(
            [ChunkReference(hash: forged.hash, size: Int64(forged.bytes.readableBytes))], in: container)
        #expect(forgedStored.isEmpty, "the forged chunk is not")
    }
}
