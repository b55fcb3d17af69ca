/// Content-defined chunking with FastCDC and normalised chunking (Xia et al., "FastCDC: a Fast and Efficient
/// Content-Defined Chunking Approach for Data Deduplication", USENIX ATC 2016; IEEE TPDS 2020).
///
/// Cut points depend on the content, not on offsets, so an insertion or deletion changes only the chunks around it
/// and the rest of a file deduplicates against its previous version. For each chunk the chunker
/// - skips the first ``Configuration/minimumSize`` bytes (no cut there, and no hashing either);
/// - rolls a Gear hash over the following bytes, `h = (h << 1) &+ gear[byte]`, where `gear` is a fixed table of 256
///   random 64-bit values (see ``gearTable``), so `h` depends on the last 64 bytes only;
/// - cuts before the first byte at which `h & mask == 0`, with a stricter mask (``Configuration/averageSize``'s
///   `log2` plus ``Configuration/normalizationLevel`` one bits) up to the average size and a looser one (that many
///   bits fewer) after it — normalised chunking, which gathers sizes around the average;
/// - cuts at ``Configuration/maximumSize`` if nothing matched.
///
/// The masks spread their one bits evenly over the 64-bit hash (see ``spreadMask(ones:)``), so every decision
/// depends on the last 64 bytes, not on the last few. A cut at offset `i` (the byte whose hash matched) makes a
/// chunk of `i` bytes, as in the paper's Algorithm 1.
///
/// ```swift
/// let chunker = FastCDC()
/// let lengths = data.withUnsafeBytes { chunker.chunkLengths(in: $0) }
/// ```
///
/// `Tests/SyncEngineTests/Vectors/fastcdc_reference.py` is an independent Python version of the same algorithm; the
/// tests check both agree.
public struct FastCDC: Sendable, Hashable {
    /// The sizes this chunker aims for; always valid.
    public let configuration: Configuration
    /// The mask used up to the average size: `log2(averageSize) + normalizationLevel` one bits.
    public let strictMask: UInt64
    /// The mask used after the average size: `log2(averageSize) - normalizationLevel` one bits.
    public let looseMask: UInt64

    /// A chunker with the ``Configuration/default`` sizes (16 KiB / 64 KiB / 256 KiB).
    public init() {
        self.init(validated: .default)
    }

    /// A chunker with the given sizes.
    /// - Throws: ``ChunkingError/Code/invalidConfiguration`` if `configuration` breaks its rules
    ///   (see ``Configuration/validate()``).
    public init(_ configuration: Configuration) throws(ChunkingError) {
        try configuration.validate()
        self.init(validated: configuration)
    }

    private init(validated configuration: Configuration) {
        self.configuration = configuration
        self.strictMask = Self.spreadMask(ones: configuration.averageBits + configuration.normalizationLevel)
        self.looseMask = Self.spreadMask(ones: configuration.averageBits - configuration.normalizationLevel)
    }

    /// The length of the first chunk of `bytes`.
    ///
    /// `bytes` must hold at least ``Configuration/maximumSize`` bytes unless they are the end of the content: the
    /// length of what follows matters only when it is shorter than the maximum.
    /// - Returns: A length within `minimumSize...maximumSize`, or `bytes.count` if that is shorter than the minimum;
    ///   0 only for empty `bytes`.
    public func firstChunkLength(in bytes: UnsafeRawBufferPointer) -> Int {
        Self.gearTable.withUnsafeBufferPointer { firstChunkLength(in: bytes, gear: $0) }
    }

    /// Algorithm 1 of the paper, with the table already at hand.
    ///
    /// The loop is bound by its dependent arithmetic (one shift and one add per byte, about 2 cycles); computing two
    /// bytes per step does not help, as the optimiser folds it back into the same chain.
    func firstChunkLength(in bytes: UnsafeRawBufferPointer, gear: UnsafeBufferPointer<UInt64>) -> Int {
        let minimum = configuration.minimumSize
        guard bytes.count > minimum, let base = bytes.baseAddress else { return bytes.count }
        let end = min(bytes.count, configuration.maximumSize)
        let normal = min(end, configuration.averageSize)
        let strict = strictMask
        let loose = looseMask
        var hash: UInt64 = 0
        var index = minimum
        while index < normal {
            hash = (hash &<< 1) &+ gear[Int(base.load(fromByteOffset: index, as: UInt8.self))]
            if hash & strict == 0 { return index }
            index &+= 1
        }
        while index < end {
            hash = (hash &<< 1) &+ gear[Int(base.load(fromByteOffset: index, as: UInt8.self))]
            if hash & loose == 0 { return index }
            index &+= 1
        }
        return end
    }
}
