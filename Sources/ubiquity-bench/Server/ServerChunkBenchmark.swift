import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import UbiquityProtocol
import UbiquityServer

/// `server.chunks`: uploading and downloading a 1 GiB item in 4 MiB chunks over loopback (4 connections) to a
/// service whose chunks are in its data folder, with the process's memory watched: it must not grow with the item.
/// When `UBIQUITY_S3_URL` names an S3-compatible bucket, the same 1 GiB again with the service's chunks in that
/// bucket (under a key prefix of the run's own, its objects deleted afterwards), and each of its rates as a share of
/// the folder's in the same run.
enum ServerChunkBenchmark {
    static let name = "server.chunks"
    static let chunkSize = 4 << 20
    static let chunkCount = 256  // 1 GiB

    /// One run's upload and download times, and how far the process's resident memory grew meanwhile.
    struct Transfer {
        var upload: Duration
        var download: Duration
        var residentGrowth: Int
    }

    static func run(in scratch: URL) async throws {
        let template = noiseBytes(count: chunkSize, seed: 7)
        let server = try await BenchServer.start(in: scratch.appendingPathComponent("data"), connections: 4)
        let folder = try await transfer(chunkCount, template, through: server)
        try await server.stop()
        let raw = try await rawWrites(template, in: scratch.appendingPathComponent("raw"))

        let label = "1GiB in 4MiB chunks, 4 connections"
        let megabytes = Double(chunkCount * chunkSize) / 1_000_000
        BenchOutput.figure(
            bench: name, case: label, metric: "upload_MB_per_s", value: megabytes / seconds(folder.upload))
        BenchOutput.figure(
            bench: name, case: label, metric: "download_MB_per_s", value: megabytes / seconds(folder.download))
        BenchOutput.figure(
            bench: name, case: "1GiB in 4MiB chunks, 4 lanes", metric: "raw_write_fsync_MB_per_s",
            value: megabytes / seconds(raw))
        BenchOutput.figure(
            bench: name, case: label, metric: "upload_ratio_vs_raw_write", value: seconds(raw) / seconds(folder.upload))
        BenchOutput.figure(
            bench: name, case: label, metric: "rss_growth_MiB", value: Double(folder.residentGrowth) / Double(1 << 20))

        guard let url = ProcessInfo.processInfo.environment["UBIQUITY_S3_URL"], !url.isEmpty else { return }
        let prefix = "bench/chunks-\(UUID().uuidString.prefix(8).lowercased())"
        let bucket = try S3Client.Configuration(url: url)
        let location = url + (url.contains("?") ? "&" : "?") + "prefix=\(bucket.prefix)\(prefix)"
        let s3Server = try await BenchServer.start(
            in: scratch.appendingPathComponent("s3"), connections: 4, chunkStore: location)
        let s3: Transfer
        do {
            s3 = try await transfer(chunkCount, template, through: s3Server)
        } catch {
            try? await s3Server.stop()
            try? await removeObjects(under: bucket.prefix + prefix + "/", in: bucket)
            throw error
        }
        try await s3Server.stop()
        try await removeObjects(under: bucket.prefix + prefix + "/", in: bucket)

        let s3Label = "S3, 1GiB in 4MiB chunks, 4 connections"
        BenchOutput.figure(
            bench: name, case: s3Label, metric: "upload_MB_per_s", value: megabytes / seconds(s3.upload))
        BenchOutput.figure(
            bench: name, case: s3Label, metric: "download_MB_per_s", value: megabytes / seconds(s3.download))
        BenchOutput.figure(
            bench: name, case: s3Label, metric: "rss_growth_MiB", value: Double(s3.residentGrowth) / Double(1 << 20))
        BenchOutput.figure(
            bench: name, case: s3Label, metric: "upload_share_of_folder_rate",
            value: seconds(folder.upload) / seconds(s3.upload))
        BenchOutput.figure(
            bench: name, case: s3Label, metric: "download_share_of_folder_rate",
            value: seconds(folder.download) / seconds(s3.download))
    }

    /// Uploads `count` chunks made from `template` to `server` over 4 connections, then downloads them again
    /// (hashes checked on both ends), with the process's resident memory watched from after a warm-up chunk.
    static func transfer(_ count: Int, _ template: Data, through server: BenchServer) async throws -> Transfer {
        // One chunk up and down first, so connections and buffers exist before memory is measured.
        let warm = try await server.upload(chunk(template, index: -1))
        _ = try await download(warm, from: server)
        let baseline = Memory.residentBytes
        var peak = baseline

        // The client's hashing is done before the clock starts: the figure is the service's (which hashes every
        // chunk again on arrival), not the load generator's.
        let hashes = try (0..<count).map { index in
            try ChunkHash(digest: SHA256.hash(data: chunk(template, index: index).readableBytesView))
        }
        var references: [ChunkReference] = []
        let upload = try await ContinuousClock().measure {
            references = try await withThrowingTaskGroup(of: [ChunkReference].self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        var done: [ChunkReference] = []
                        for index in stride(from: lane, to: count, by: 4) {
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
                guard total == count * chunkSize else { throw BenchError("downloaded \(total) bytes") }
            }
        }
        peak = max(peak, Memory.residentBytes)
        return Transfer(upload: upload, download: download, residentGrowth: peak - baseline)
    }

    /// Deletes every object whose key starts with `prefix`.
    static func removeObjects(under prefix: String, in bucket: S3Client.Configuration) async throws {
        let client = S3Client(bucket)
        var keys: [String] = []
        var next: String?
        repeat {
            let page = try await client.list(prefix: prefix, after: next)
            keys += page.keys
            next = page.next
        } while next != nil
        for key in keys { try await client.delete(key) }
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
