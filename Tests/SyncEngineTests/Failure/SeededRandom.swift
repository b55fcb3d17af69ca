import Crypto
import Foundation
import UbiquityProtocol

/// A small seedable random number generator (SplitMix64): the failure tests draw every random choice from one, so a
/// failing run can be replayed with the seed it printed (`UBIQUITY_TEST_SEED=…`), as far as the interleaving of
/// processes allows.
struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// The seed of this run: `UBIQUITY_TEST_SEED` when it is set, a fresh random one otherwise.
    static func runSeed() -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["UBIQUITY_TEST_SEED"], let seed = UInt64(text) {
            return seed
        }
        return UInt64.random(in: 0...UInt64.max)
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// Another generator, for a task of its own, whose draws do not depend on this one's later draws.
    mutating func split() -> SeededRandom { SeededRandom(seed: next()) }

    /// `count` random bytes.
    mutating func bytes(_ count: Int) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < count {
                var word = next()
                let length = min(8, count - offset)
                withUnsafeBytes(of: &word) { word in
                    buffer.baseAddress!.advanced(by: offset).copyMemory(from: word.baseAddress!, byteCount: length)
                }
                offset += length
            }
        }
        return data
    }
}

/// The SHA-256 of `data`, as the engine names content.
func contentHash(_ data: Data) throws -> ChunkHash {
    try ChunkHash(digest: SHA256.hash(data: data))
}
