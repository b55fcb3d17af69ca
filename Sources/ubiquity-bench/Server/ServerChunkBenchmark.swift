import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import UbiquityProtocol
import UbiquityServer

/// `server.chunks`: uploading and downloading a 1 GiB item in 4 MiB chunks over loopback (4 connections), with
/// the process's memory watched: it must not grow with the item.
enum ServerChunkBenchmark {
    static let name = "server.chunks"
    static let chunkSize = 4 << 20
    static let chunkCount = 256  // 1 GiB

    static func run(in scratch: URL) async throws {
        let server = try await BenchServer.start(in: scratch.appendingPathComponent("data"), connections: 4)
        let template = noiseBytes(count: chunkSize, seed: 7)
        // One chunk up and down first, so connections and buffers exist before memory is measured.
        let warm = try await server.upload(chunk(template, index: -1))
        _ = try await download(warm, from: server)
        let baseline = Memory.residentBytes
        var peak = baseline

        // The client's hashing is done before the clock starts: the figure is the service's (which hashes every
        // chunk again on arrival), not the load generator's.
        let hashes = try (0..<chunkCount).map { index in
            try ChunkHash(digest: SHA256.hash(data: chunk(template, index: index).readableBytesView))
        }
        var references: [ChunkReference] = []
        let upload = try await ContinuousClock().measure {
            references = try await withThrowingTaskGroup(of: [ChunkReference].self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        var done: [ChunkReference] = []
                        for index in stride(from: lane, to: chunkCount, by: 4) {
                            let bytes = chunk(template, index: index)
                            try await server.send(.PUT, server.url("chunks/\(hashes[index])"), body: bytes)
                            done.append(ChunkReference(hash: hashes[index], size: Int64(bytes.readableBytes)))
                        }
                        return done
                    }
                }
                var all: [ChunkReference] = []
                for try await part in group {
                    all += part
                    peak = max(peak, Memory.residentBytes)
                }
                return all
            }
        }
        peak = max(peak, Memory.residentBytes)

        let uploaded = references
        let download = try await ContinuousClock().measure {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        var bytes = 0
                        for index in stride(from: lane, to: uploaded.count, by: 4) {
                            bytes += try await Self.download(uploaded[index], from: server)
                        }
                        return bytes
                    }
                }
                var total = 0
                for try await bytes in group {
                    total += bytes
                    peak = max(peak, Memory.residentBytes)
                }
                guard total == chunkCount * chunkSize else { throw BenchError("downloaded \(total) bytes") }
            }
        }
        peak = max(peak, Memory.residentBytes)
        try await server.stop()
        let raw = try await rawWrites(template, in: scratch.appendingPathComponent("raw"))

        let megabytes = Double(chunkCount * chunkSize) / 1_000_000
        BenchOutput.figure(
            bench: name, case: "1GiB in 4MiB chunks, 4 connections", metric: "upload_MB_per_s",
            value: megabytes / seconds(upload))
        BenchOutput.figure(
            bench: name, case: "1GiB in 4MiB chunks, 4 connections", metric: "download_MB_per_s",
            value: megabytes / seconds(download))
        BenchOutput.figure(
            bench: name, case: "1GiB in 4MiB chunks, 4 lanes", metric: "raw_write_fsync_MB_per_s",
            value: megabytes / seconds(raw))
        BenchOutput.figure(
            bench: name, case: "1GiB in 4MiB chunks, 4 connections", metric: "upload_ratio_vs_raw_write",
            value: seconds(raw) / seconds(upload))
        BenchOutput.figure(
            bench: name, case: "1GiB in 4MiB chunks, 4 connections", metric: "rss_growth_MiB",
            value: Double(peak - baseline) / Double(1 << 20))
    }

    /// The baseline: the same chunks written by hand, 4 at a time, each to a temporary file that is flushed with
    /// `fsync` and renamed into place — what storing a chunk durably costs without HTTP or hashing.
    static func rawWrites(_ template: Data, in folder: URL) async throws -> Duration {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try await ContinuousClock().measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        for index in stride(from: lane, to: chunkCount, by: 4) {
                            let bytes = chunk(template, index: index)
                            let temporary = folder.appendingPathComponent("\(index).tmp")
                            let handle = try FileHandle(forWritingTo: try createEmpty(temporary))
                            try handle.write(contentsOf: bytes.readableBytesView)
                            try handle.synchronize()
                            try handle.close()
                            try FileManager.default.moveItem(
                                at: temporary, to: folder.appendingPathComponent("\(index)"))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    private static func createEmpty(_ url: URL) throws -> URL {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchError("cannot create \(url.path)")
        }
        return url
    }

    /// The template with its first bytes replaced by `index`, so every chunk has its own hash.
    static func chunk(_ template: Data, index: Int) -> ByteBuffer {
        var buffer = ByteBuffer(bytes: template)
        buffer.setInteger(Int64(index), at: 0)
        return buffer
    }

    /// Downloads a chunk, streaming, checking its hash; returns its length.
    static func download(_ reference: ChunkReference, from server: BenchServer) async throws -> Int {
        var request = HTTPClientRequest(url: server.url("chunks/\(reference.hash)"))
        request.headers.add(name: "Authorization", value: "Bearer \(server.token)")
        let response = try await server.client.execute(request, timeout: .seconds(120))
        guard response.status == .ok else { throw BenchError("GET chunk: \(response.status)") }
        var hasher = SHA256()
        var count = 0
        for try await piece in response.body {
            piece.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            count += piece.readableBytes
        }
        guard try ChunkHash(digest: hasher.finalize()) == reference.hash else { throw BenchError("chunk hash differs") }
        return count
    }
}
