import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@Suite("Content-defined chunking on the wire")
struct DeltaUploadTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    @Test(
        "One byte inserted in the middle of a 64 MiB file uploads at most 3 chunks, and the other device gets it whole")
    func oneByteInsertUploadsFewChunks() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-delta-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client,
                device: SavingDevice(id: DeviceID(), name: name), configuration: .init(eagerDownloadLimit: 128 << 20))
        }
        let laptop = try await device("laptop")
        let desktop = try await device("desktop")

        // 64 MiB made on a Dispatch thread: seconds of work in a debug build, kept off the threads other tests share.
        var bytes: [UInt8] = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var generator = SplitMix(seed: 42)
                let words = (0..<(8 << 20)).map { _ in generator.next() }
                continuation.resume(returning: words.withUnsafeBytes { Array($0) })
            }
        }
        let file = laptop.layout.documents.appendingPathComponent("Big.bin")
        try Data(bytes).write(to: file)
        try await laptop.syncOnce()
        let chunksBefore = service.figure("ubiquity_chunks_in_total")
        let bytesBefore = service.figure("ubiquity_chunk_bytes_in_total")
        #expect(chunksBefore > 100, "64 MiB went up in many chunks")

        bytes.insert(0x2A, at: bytes.count / 2)
        try Data(bytes).write(to: file)
        try await laptop.syncOnce()
        let chunks = service.figure("ubiquity_chunks_in_total") - chunksBefore
        let uploaded = service.figure("ubiquity_chunk_bytes_in_total") - bytesBefore
        #expect((1...3).contains(chunks), "\(chunks) chunks (\(uploaded) bytes) uploaded for a one-byte insertion")

        try await desktop.syncOnce()
        #expect(try Data(contentsOf: desktop.layout.documents.appendingPathComponent("Big.bin")) == Data(bytes))
        await service.remove()
    }

    @Test(
        "A large file's first version goes up while it is cut: each chunk sent once, a copy of it sends none, the other device gets both whole"
    )
    func pipelinedFirstUpload() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-pipelined-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client, device: SavingDevice(id: DeviceID(), name: name),
                configuration: .init(eagerDownloadLimit: 64 << 20, pipelinedUploadBytes: 1 << 20))
        }
        let laptop = try await device("laptop")
        let desktop = try await device("desktop")
        // 12 MiB: three batches of chunks and more.
        var generator = SplitMix(seed: 7)
        let bytes = (0..<(3 << 19)).map { _ in generator.next() }.withUnsafeBytes { Data($0) }
        try bytes.write(to: laptop.layout.documents.appendingPathComponent("Big.bin"))
        try await laptop.syncOnce()
        let path = try ItemPath("Documents/Big.bin")
        let version = try #require(try await laptop.versions(of: path).versions.first)
        let distinct = Set(version.manifest.chunks.map(\.hash)).count
        #expect(distinct > 100)
        #expect(service.figure("ubiquity_chunks_in_total") == distinct, "each chunk went up once")
        #expect(try await laptop.item(at: path)?.uploadError == nil)

        try bytes.write(to: laptop.layout.documents.appendingPathComponent("Copy.bin"))
        try await laptop.syncOnce()
        #expect(service.figure("ubiquity_chunks_in_total") == distinct, "the copy's chunks were all there")

        try await desktop.syncOnce()
        for name in ["Big.bin", "Copy.bin"] {
            #expect(try Data(contentsOf: desktop.layout.documents.appendingPathComponent(name)) == bytes)
        }
        await service.remove()
    }

    @Test("A pipelined upload the service refuses (over quota) stops, and its error is recorded on the item")
    func pipelinedUploadRefused() async throws {
        let service = try await LocalService.start(quota: 4 << 20)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-pipelined-quota-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let client = try await service.signIn(account: "ada", device: "laptop")
        let laptop = try ContainerSync(
            layout: ContainerLayout(root: root.appendingPathComponent("laptop"), container: Self.container),
            client: client, device: SavingDevice(id: DeviceID(), name: "laptop"),
            configuration: .init(pipelinedUploadBytes: 1 << 20))
        var generator = SplitMix(seed: 9)
        let bytes = (0..<(3 << 20)).map { _ in generator.next() }.withUnsafeBytes { Data($0) }
        try bytes.write(to: laptop.layout.documents.appendingPathComponent("Big.bin"))
        try await laptop.syncOnce()
        let item = try #require(try await laptop.item(at: try ItemPath("Documents/Big.bin")))
        #expect(item.uploadError?.code == .quotaExceeded)
        #expect(item.baseVersion == nil, "no version was committed")
        #expect(service.figure("ubiquity_chunk_bytes_in_total") <= 4 << 20, "nothing past the quota was stored")
        await service.remove()
    }
}

/// SplitMix64: reproducible bytes that neither compress nor repeat.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
