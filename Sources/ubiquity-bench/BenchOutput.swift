import Foundation

/// Prints figures as JSON lines: `{"bench":"document.save","case":"4KiB","metric":"ratio_vs_raw","value":1.12}`.
enum BenchOutput {
    static func figure(bench: String, case name: String, metric: String, value: Double) {
        let rounded = (value * 1000).rounded() / 1000  // three decimals are plenty for noisy timings
        let fields = [
            ("bench", quoted(bench)), ("case", quoted(name)), ("metric", quoted(metric)), ("value", "\(rounded)"),
        ]
        let line = "{" + fields.map { "\(quoted($0)):\($1)" }.joined(separator: ",") + "}\n"
        // A reader gone (`| head`) is no reason to stop: the run goes on to stop what it started.
        try? FileHandle.standardOutput.write(contentsOf: Data(line.utf8))
    }

    /// The 50th, 90th and 99th percentiles of `samples` in milliseconds, as `<metric>_p50_ms` and the others.
    static func percentiles(bench: String, case name: String, metric: String, _ samples: [Duration]) {
        for (percent, fraction) in [(50, 0.5), (90, 0.9), (99, 0.99)] {
            figure(
                bench: bench, case: name, metric: "\(metric)_p\(percent)_ms",
                value: Measure.milliseconds(Measure.percentile(samples, fraction)))
        }
    }

    /// `text` as a JSON string.
    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// Timing helpers.
enum Measure {
    /// The median of `samples`.
    static func median(_ samples: [Duration]) -> Duration {
        let sorted = samples.sorted()
        precondition(!sorted.isEmpty, "no samples")
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// `duration` in microseconds.
    static func microseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1_000_000 + Double(attoseconds) / 1_000_000_000_000
    }

    /// The CPU this process has used so far, in milliseconds: in its own code and in the kernel on its behalf.
    static func processCPU() -> (user: Double, system: Double) {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return (0, 0) }
        func milliseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return (milliseconds(usage.ru_utime), milliseconds(usage.ru_stime))
    }
}

/// Bytes that do not compress or deduplicate: SplitMix64 output from `seed`.
func noiseBytes(count: Int, seed: UInt64) -> Data {
    var state = seed
    var data = Data(count: count)
    data.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) in
        var offset = 0
        while offset < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            var word = z ^ (z >> 31)
            for _ in 0..<min(8, count - offset) {
                bytes[offset] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                offset += 1
            }
        }
    }
    return data
}
