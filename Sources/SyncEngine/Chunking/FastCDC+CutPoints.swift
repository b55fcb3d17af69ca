import UbiquityProtocol

extension FastCDC {
    /// The end offset of every chunk of `bytes`, in order: the last one is `bytes.count` (none for empty input).
    ///
    /// ```swift
    /// let points = data.withUnsafeBytes { FastCDC().cutPoints(in: $0) }  // e.g. [43442, 63644, …, data.count]
    /// ```
    public func cutPoints(in bytes: UnsafeRawBufferPointer) -> [Int] {
        var points: [Int] = []
        points.reserveCapacity(bytes.count / configuration.averageSize + 1)
        Self.gearTable.withUnsafeBufferPointer { gear in
            var start = 0
            while start < bytes.count {
                start += firstChunkLength(in: UnsafeRawBufferPointer(rebasing: bytes[start...]), gear: gear)
                points.append(start)
            }
        }
        return points
    }

    /// The length of every chunk of `bytes`, in order; they add up to `bytes.count`.
    public func chunkLengths(in bytes: UnsafeRawBufferPointer) -> [Int] {
        var previous = 0
        return cutPoints(in: bytes).map { point in
            defer { previous = point }
            return point - previous
        }
    }

    /// Every chunk of `bytes` as a ``ChunkReference`` (SHA-256 and size), in order.
    ///
    /// The same chunks ``FileChunker`` finds when it reads the same bytes from a file.
    public func chunkReferences(in bytes: UnsafeRawBufferPointer) -> [ChunkReference] {
        var start = 0
        return cutPoints(in: bytes).map { end in
            defer { start = end }
            return ChunkReference(of: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        }
    }
}
