extension FastCDC {
    /// The sizes a ``FastCDC`` chunker aims for.
    ///
    /// The defaults — 16 KiB minimum, 64 KiB average, 256 KiB maximum, normalisation level 2 — sit at the upper end
    /// of DESIGN.md's "average chunks of roughly 32–64 KiB". The evidence, from `ubiquity-bench chunking` (one byte
    /// inserted near the middle of 64 MiB of random data, 16 offsets, minimum = average / 4, maximum = 4 × average):
    ///
    /// | average | chunks changed | bytes changed (mean) | chunks in 64 MiB | full manifest (JSON) |
    /// | --- | --- | --- | --- | --- |
    /// | 16 KiB | 1 | ≈ 20 KB | ≈ 3,600 | ≈ 320 KB |
    /// | 32 KiB | 1 | ≈ 41 KB | ≈ 1,800 | ≈ 160 KB |
    /// | 64 KiB | 1 | ≈ 76 KB | ≈ 900 | ≈ 81 KB |
    /// | 128 KiB | 1 | ≈ 210 KB | ≈ 450 | ≈ 40 KB |
    ///
    /// - One inserted byte re-uploads the one chunk it lands in (rarely its neighbour too): at 64 KiB about 76 KB,
    ///   within DESIGN.md's "about 90 KB for one byte inserted in a 64 MiB file" once the manifest goes as a delta.
    /// - Changed chunks plus a full manifest cost least at 64 KiB (≈ 157 KB against ≈ 200 KB at 32 KiB and
    ///   ≈ 250 KB at 128 KiB), so the choice holds before delta manifests exist too.
    /// - Halving the average doubles the chunk count, and each chunk is a manifest entry, a file and a row in the
    ///   service's chunk store, and a request when nothing deduplicates: 64 KiB keeps a 1 GiB file at about 14,500.
    /// - The minimum is a quarter of the average: no cut there, and those bytes are not hashed, a fifth of the work
    ///   saved. The maximum is four times the average: a run of identical bytes never matches a mask and is cut into
    ///   256 KiB pieces, while no chunk of random data reached it (sizes: mean ≈ 72 KiB, standard deviation
    ///   ≈ 20 KiB, largest ≈ 165 KiB of 905).
    /// - Level 2 normalisation (two bits more in the mask before the average, two fewer after it) is the paper's
    ///   recommended level: it gathers sizes around the average, which narrows what one edit costs.
    ///
    /// ``validate()`` checks the rules; ``FastCDC/init(_:)`` calls it.
    public struct Configuration: Sendable, Hashable, Codable {
        /// No chunk is shorter than this, except the last chunk of the content. Default 16 KiB.
        public var minimumSize: Int
        /// The size the chunker aims at; a power of two, because the masks have `log2(averageSize)` one bits, give
        /// or take the normalisation level. Default 64 KiB.
        public var averageSize: Int
        /// No chunk is longer than this: the chunker cuts here when the content never matched. Default 256 KiB.
        public var maximumSize: Int
        /// How much stricter the mask is before the average and looser after it, in one bits. Default 2.
        public var normalizationLevel: Int

        /// The largest ``maximumSize`` allowed (1 GiB): a streaming chunker holds one maximum-size chunk in memory.
        public static let largestMaximumSize = 1 << 30

        /// Creates a configuration; ``validate()`` checks it.
        /// - Parameters:
        ///   - minimumSize: The shortest chunk but the last, in bytes.
        ///   - averageSize: The size aimed at, a power of two.
        ///   - maximumSize: The longest chunk.
        ///   - normalizationLevel: Extra one bits in the mask before the average, and bits fewer after it.
        public init(
            minimumSize: Int = 16 << 10,
            averageSize: Int = 64 << 10,
            maximumSize: Int = 256 << 10,
            normalizationLevel: Int = 2
        ) {
            self.minimumSize = minimumSize
            self.averageSize = averageSize
            self.maximumSize = maximumSize
            self.normalizationLevel = normalizationLevel
        }

        /// The defaults: 16 KiB / 64 KiB / 256 KiB, level 2.
        public static let `default` = Configuration()

        /// `log2(averageSize)`, the number of one bits an unnormalised mask would have.
        var averageBits: Int { averageSize.trailingZeroBitCount }

        /// Checks the configuration.
        /// - Throws: ``ChunkingError/Code/invalidConfiguration`` unless `0 < minimumSize < averageSize <
        ///   maximumSize ≤ largestMaximumSize`, `averageSize` is a power of two, and `normalizationLevel` leaves
        ///   both masks between 1 and 64 one bits.
        public func validate() throws(ChunkingError) {
            func refuse(_ message: String) -> ChunkingError { ChunkingError(.invalidConfiguration, message) }
            guard minimumSize > 0 else { throw refuse("minimumSize must be positive, not \(minimumSize)") }
            guard minimumSize < averageSize, averageSize < maximumSize else {
                throw refuse(
                    "sizes must grow: minimumSize \(minimumSize) < averageSize \(averageSize) < maximumSize "
                        + "\(maximumSize)")
            }
            guard maximumSize <= Self.largestMaximumSize else {
                throw refuse("maximumSize \(maximumSize) is above \(Self.largestMaximumSize)")
            }
            guard averageSize.nonzeroBitCount == 1 else {
                throw refuse(
                    "averageSize must be a power of two (the masks have log2(averageSize) bits), not \(averageSize)")
            }
            guard normalizationLevel >= 0, averageBits - normalizationLevel >= 1, averageBits + normalizationLevel <= 64
            else {
                throw refuse(
                    "normalizationLevel \(normalizationLevel) needs masks of \(averageBits - normalizationLevel) and "
                        + "\(averageBits + normalizationLevel) bits; both must be within 1...64")
            }
        }
    }
}
