import Testing

@testable import SyncEngine

@Suite("FastCDC: configuration, masks and the Gear table")
struct FastCDCConfigurationTests {
    @Test("The defaults are 16 KiB / 64 KiB / 256 KiB at normalisation level 2, and valid")
    func defaults() throws {
        let configuration = FastCDC.Configuration.default
        #expect(configuration.minimumSize == 16384)
        #expect(configuration.averageSize == 65536)
        #expect(configuration.maximumSize == 262144)
        #expect(configuration.normalizationLevel == 2)
        try configuration.validate()
        #expect(FastCDC().configuration == configuration)
    }

    @Test(
        "Invalid configurations are refused with invalidConfiguration",
        arguments: [
            (0, 1024, 4096, 2),  // no minimum
            (-5, 1024, 4096, 2),
            (1024, 1024, 4096, 2),  // minimum not below the average
            (256, 4096, 4096, 2),  // maximum not above the average
            (256, 3000, 8192, 2),  // average not a power of two
            (256, 1024, (1 << 30) + 1, 2),  // maximum too large
            (256, 1024, 4096, -1),  // negative level
            (256, 1024, 4096, 10),  // the loose mask would have no bits
            (1 << 10, 1 << 29, 1 << 30, 40),  // the strict mask would need 69 bits
        ])
    func refused(minimum: Int, average: Int, maximum: Int, level: Int) {
        let configuration = FastCDC.Configuration(
            minimumSize: minimum, averageSize: average, maximumSize: maximum, normalizationLevel: level)
        #expect(throws: ChunkingError.self) { try configuration.validate() }
        do {
            _ = try FastCDC(configuration)
            Issue.record("accepted \(configuration)")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(!error.message.isEmpty)
        }
    }

    @Test("Sizes need not be powers of two except the average; level 0 is plain FastCDC without normalisation")
    func accepted() throws {
        let chunker = try FastCDC(
            .init(minimumSize: 1000, averageSize: 4096, maximumSize: 10000, normalizationLevel: 0))
        #expect(chunker.strictMask == chunker.looseMask)
        #expect(chunker.strictMask.nonzeroBitCount == 12)
    }

    @Test("Masks have log2(average) ± level one bits, spread from bit 63 down")
    func masks() {
        let chunker = FastCDC()
        #expect(chunker.strictMask.nonzeroBitCount == 18)
        #expect(chunker.looseMask.nonzeroBitCount == 14)
        #expect(chunker.strictMask == 0x9122_4488_9122_4488)
        #expect(chunker.looseMask == 0x8844_2210_8844_2210)
        #expect(FastCDC.spreadMask(ones: 1) == 1 << 63)
        #expect(FastCDC.spreadMask(ones: 64) == .max)
        for ones in 1...64 { #expect(FastCDC.spreadMask(ones: ones).nonzeroBitCount == ones) }
    }

    @Test("The Gear table is SplitMix64 from the documented seed: 256 distinct values")
    func gearTable() {
        #expect(FastCDC.gearSeed == 0x5562_6971_7569_7479)
        #expect(Array("Ubiquity".utf8).reduce(0) { $0 << 8 | UInt64($1) } == FastCDC.gearSeed)
        #expect(FastCDC.gearTable.count == 256)
        #expect(Set(FastCDC.gearTable).count == 256)
        #expect(FastCDC.gearTable[0] == 0xde2d_8a6b_c8a4_fa5d)
    }
}
