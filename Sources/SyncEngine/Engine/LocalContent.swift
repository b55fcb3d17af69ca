import Crypto
import Foundation
import UbiquityProtocol

/// The content of a local file or package as an upload needs it: the manifest, the content hash and size, and
/// where each chunk's bytes are on disk (so a missing chunk is read again by its offset, never kept in memory).
///
/// A package's content hash is the SHA-256 of its manifest's canonical JSON (members sorted by path, keys sorted),
/// so two packages with the same members and bytes have the same hash on every device.
public struct LocalContent: Sendable, Hashable {
    /// Where one chunk's bytes are.
    public struct Source: Sendable, Hashable {
        /// The file holding the chunk.
        public var file: URL
        /// The chunk's offset in the file.
        public var offset: Int64
        /// The chunk's length.
        public var size: Int64
    }

    /// The chunks, or the package's members.
    public var manifest: ContentManifest
    /// The SHA-256 of the file's content, or of the package's canonical manifest.
    public var contentHash: ChunkHash
    /// The content's length in bytes.
    public var size: Int64
    /// Where each chunk's bytes are.
    public var sources: [ChunkHash: Source]

    /// The content of the file at `url` on `disk`; each chunk's source is handed to `onChunk` as it is cut (what it
    /// throws ends the read).
    public init(
        file url: URL, chunker: FileChunker, disk: any LocalDisk = PosixDisk(),
        onChunk: ((ChunkHash, Source) throws -> Void)? = nil
    ) throws {
        let chunked =
            if let onChunk {
                try disk.chunksAndContentHash(ofFileAt: url, chunker: chunker) { chunk, offset in
                    try onChunk(chunk.hash, Source(file: url, offset: offset, size: chunk.size))
                }
            } else {
                try disk.chunksAndContentHash(ofFileAt: url, chunker: chunker)
            }
        manifest = chunked.manifest
        contentHash = chunked.contentHash
        size = chunked.size
        sources = Self.sources(of: chunked.chunks, in: url)
    }

    /// The content of the package at `url` on `disk`: every member, files chunked, in path order.
    public init(package url: URL, chunker: FileChunker, disk: any LocalDisk = PosixDisk()) throws {
        var entries: [PackageEntry] = []
        var sources: [ChunkHash: Source] = [:]
        var total: Int64 = 0
        for member in try disk.subpaths(of: url).sorted() where !LocalScanner.isTemporary(member) {
            let memberURL = url.appendingPathComponent(member, isDirectory: false)
            guard let found = try disk.lookUp(memberURL) else { continue }
            let path = try ItemPath(member)
            if found.isDirectory {
                entries.append(PackageEntry(path: path, kind: .directory))
            } else {
                let chunked = try disk.chunksAndContentHash(ofFileAt: memberURL, chunker: chunker)
                entries.append(PackageEntry(path: path, kind: .file, chunks: chunked.chunks))
                sources.merge(Self.sources(of: chunked.chunks, in: memberURL)) { first, _ in first }
                total += chunked.size
            }
        }
        manifest = .package(entries)
        contentHash = try Self.hash(of: manifest)
        size = total
        self.sources = sources
    }

    /// The canonical hash of a package manifest.
    public static func hash(of manifest: ContentManifest) throws -> ChunkHash {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try ChunkHash(digest: SHA256.hash(data: try encoder.encode(manifest)))
    }

    private static func sources(of chunks: [ChunkReference], in file: URL) -> [ChunkHash: Source] {
        var sources: [ChunkHash: Source] = [:]
        var offset: Int64 = 0
        for chunk in chunks {
            if sources[chunk.hash] == nil { sources[chunk.hash] = Source(file: file, offset: offset, size: chunk.size) }
            offset += chunk.size
        }
        return sources
    }
}
