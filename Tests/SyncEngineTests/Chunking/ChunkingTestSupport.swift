import Foundation
import Testing

@testable import SyncEngine

/// `count` bytes of SplitMix64 output from `seed`, each 64-bit word little-endian, the last one truncated — the
/// inputs the Python reference's `splitmix_bytes` makes.
func splitMixBytes(count: Int, seed: UInt64) -> [UInt8] {
    var generator = SplitMix64(state: seed)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 8)
    while bytes.count < count {
        let word = generator.next()
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }
    bytes.removeLast(bytes.count - count)
    return bytes
}

/// The folder holding the checked-in vectors and the Python reference.
let vectorsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Vectors")

/// A temporary directory for one chunking test, removed by ``remove()``.
struct ChunkingScratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-chunking-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `bytes` to a new file named `name` and returns its URL.
    func file(_ name: String, _ bytes: [UInt8]) throws -> URL {
        let file = url.appendingPathComponent(name)
        try Data(bytes).write(to: file)
        return file
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

extension FastCDC {
    /// The cut points of `bytes`.
    func cutPoints(in bytes: [UInt8]) -> [Int] { bytes.withUnsafeBytes { cutPoints(in: $0) } }

    /// The chunk lengths of `bytes`.
    func chunkLengths(in bytes: [UInt8]) -> [Int] { bytes.withUnsafeBytes { chunkLengths(in: $0) } }
}

/// The python3 interpreter on `PATH`, if there is one.
let python3Executable: URL? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").lazy
        .map { URL(fileURLWithPath: String($0)).appendingPathComponent("python3") }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}()
