import Crypto
import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Chunks a file while reading it, in fixed-size reads, with memory bounded by one maximum-size chunk plus one
/// read — never by the file's size.
///
/// Each chunk's bytes are handed to a closure as soon as the chunk is cut, so an uploader can send them without
/// reading the file twice. The chunks are the ones ``FastCDC/chunkReferences(in:)`` finds in the same bytes in
/// memory, whatever the read size.
///
/// ```swift
/// let content = try FileChunker().chunksAndContentHash(ofFileAt: url) { chunk, bytes in
///     if !server.has(chunk.hash) { try upload(chunk, bytes) }
/// }
/// ```
public struct FileChunker: Sendable {
    /// The default read size: 1 MiB.
    public static let defaultReadSize = 1 << 20

    /// The chunker that finds the cut points.
    public let chunker: FastCDC
    /// How many bytes each `read` asks for.
    public let readSize: Int

    /// Creates a file chunker.
    /// - Parameters:
    ///   - chunker: The chunker that finds the cut points; default sizes unless given.
    ///   - readSize: How many bytes each `read` asks for; positive. The chunker holds
    ///     `chunker.configuration.maximumSize + readSize` bytes while it runs.
    public init(chunker: FastCDC = FastCDC(), readSize: Int = FileChunker.defaultReadSize) {
        precondition(readSize > 0, "readSize must be positive, not \(readSize)")
        self.chunker = chunker
        self.readSize = readSize
    }

    /// Chunks what `file` holds from its current offset to its end.
    /// - Parameters:
    ///   - file: The file, open for reading; it is read to the end and left open.
    ///   - body: Called with each chunk in order and its bytes, which are valid only during the call.
    /// - Returns: The chunks, in order.
    /// - Throws: ``ChunkingError/Code/readFailed`` if reading fails, or what `body` throws.
    public func chunks(
        of file: FileHandle, body: (ChunkReference, UnsafeRawBufferPointer) throws -> Void = { _, _ in }
    ) throws -> [ChunkReference] {
        var hasher: SHA256? = nil
        return try chunks(
            of: file.fileDescriptor, source: "file descriptor \(file.fileDescriptor)", contentHasher: &hasher,
            body: body
        ).chunks
    }

    /// Chunks what `file` holds from its current offset to its end, and hashes the whole of it in the same pass.
    /// - Parameters:
    ///   - file: The file, open for reading; it is read to the end and left open.
    ///   - body: Called with each chunk in order and its bytes, which are valid only during the call.
    /// - Returns: The chunks, the length read and the SHA-256 of everything read.
    /// - Throws: ``ChunkingError/Code/readFailed`` if reading fails, or what `body` throws.
    public func chunksAndContentHash(
        of file: FileHandle, body: (ChunkReference, UnsafeRawBufferPointer) throws -> Void = { _, _ in }
    ) throws -> ChunkedContent {
        var hasher: SHA256? = SHA256()
        let (chunks, size) = try chunks(
            of: file.fileDescriptor, source: "file descriptor \(file.fileDescriptor)", contentHasher: &hasher,
            body: body)
        return ChunkedContent(chunks: chunks, size: size, contentHash: ChunkHash(hasher!.finalize()))
    }

    /// Chunks the file at `url` and hashes its whole content in the same pass.
    /// - Parameters:
    ///   - url: A file URL.
    ///   - body: Called with each chunk in order and its bytes, which are valid only during the call.
    /// - Returns: The chunks, the file's length and the SHA-256 of its content.
    /// - Throws: ``ChunkingError/Code/readFailed`` if the file cannot be opened or read, or what `body` throws.
    public func chunksAndContentHash(
        ofFileAt url: URL, body: (ChunkReference, UnsafeRawBufferPointer) throws -> Void = { _, _ in }
    ) throws -> ChunkedContent {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ChunkingError(.readFailed, "cannot open \(url.path) for reading: \(reason)")
        }
        defer { close(descriptor) }
        var hasher: SHA256? = SHA256()
        let (chunks, size) = try chunks(of: descriptor, source: url.path, contentHasher: &hasher, body: body)
        return ChunkedContent(chunks: chunks, size: size, contentHash: ChunkHash(hasher!.finalize()))
    }

    /// Chunks `bytes` held in memory and hashes them in the same pass, cutting where a file of those bytes is cut.
    public func chunksAndContentHash(of bytes: UnsafeRawBufferPointer) -> ChunkedContent {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        var chunks: [ChunkReference] = []
        var start = 0
        FastCDC.gearTable.withUnsafeBufferPointer { gear in
            while start < bytes.count {
                let available = UnsafeRawBufferPointer(rebasing: bytes[start...])
                let length = chunker.firstChunkLength(in: available, gear: gear)
                chunks.append(ChunkReference(of: UnsafeRawBufferPointer(rebasing: available[..<length])))
                start += length
            }
        }
        return ChunkedContent(chunks: chunks, size: Int64(bytes.count), contentHash: ChunkHash(hasher.finalize()))
    }

    /// The loop: keep at least a maximum-size chunk's worth of bytes in the window (or what is left of the file),
    /// cut the first chunk, hand it over, drop it.
    private func chunks(
        of descriptor: Int32, source: String, contentHasher: inout SHA256?,
        body: (ChunkReference, UnsafeRawBufferPointer) throws -> Void
    ) throws -> (chunks: [ChunkReference], size: Int64) {
        let maximum = chunker.configuration.maximumSize
        var status = stat()
        let expected = fstat(descriptor, &status) == 0 ? Int64(status.st_size) : Int64(maximum + readSize)
        var window = ReadWindow(retaining: maximum, readSize: readSize, expecting: expected)
        var chunks: [ChunkReference] = []
        var size: Int64 = 0
        try FastCDC.gearTable.withUnsafeBufferPointer { gear in
            while true {
                try window.fill(toAtLeast: maximum, from: descriptor, source: source)
                let available = window.bytes
                guard !available.isEmpty else { break }
                let length = chunker.firstChunkLength(in: available, gear: gear)
                let bytes = UnsafeRawBufferPointer(rebasing: available[..<length])
                let chunk = ChunkReference(of: bytes)
                contentHasher?.update(bufferPointer: bytes)
                try body(chunk, bytes)
                chunks.append(chunk)
                size += Int64(length)
                window.consume(length)
            }
        }
        return (chunks, size)
    }
}
