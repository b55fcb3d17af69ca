extension FastCDC {
    /// The state SplitMix64 starts from to make ``gearTable``: the ASCII bytes of "Ubiquity", `0x5562697175697479`.
    public static let gearSeed: UInt64 = 0x5562_6971_7569_7479

    /// The Gear hash's table: 256 consecutive outputs of SplitMix64 (Steele, Lea and Flood, 2014) from
    /// ``gearSeed``, one per byte value.
    ///
    /// Any table of random 64-bit values works; this one is generated rather than copied so that it is reproducible
    /// from one documented constant. Changing it changes every cut point, and so every chunk id of every file.
    public static let gearTable: [UInt64] = {
        var generator = SplitMix64(state: gearSeed)
        return (0..<256).map { _ in generator.next() }
    }()

    /// A 64-bit mask with `ones` one bits spread evenly from bit 63 down: bit `63 - k * 64 / ones` for each `k` in
    /// `0..<ones` (integer division).
    ///
    /// Bit `j` of a Gear hash depends on the last `j + 1` bytes only, so a mask of low bits would decide cuts on a
    /// window of a few bytes; spreading the bits, as the paper's zero-padded masks do, makes every decision depend
    /// on the last 64 bytes.
    /// - Parameter ones: The number of one bits, 1...64.
    public static func spreadMask(ones: Int) -> UInt64 {
        precondition((1...64).contains(ones), "a 64-bit mask has 1...64 one bits, not \(ones)")
        var mask: UInt64 = 0
        for k in 0..<ones { mask |= 1 << UInt64(63 - k * 64 / ones) }
        return mask
    }
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): the Gear
/// table's generator, and the tests' source of reproducible bytes.
struct SplitMix64: RandomNumberGenerator {
    /// The generator's state; each call to ``next()`` advances it.
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
