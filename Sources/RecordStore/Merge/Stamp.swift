import Foundation

/// When a change was made, as a hybrid logical clock reads it, and by which device.
///
/// Stamps order every change of every device the same way on every device: by ``time``, then by ``device``. A
/// device's clock never runs behind a stamp it has imported, so a change made after seeing another one is later.
package struct Stamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970 in the high 48 bits, a counter in the low 16.
    package var time: UInt64
    /// The device (the store's replica) that made the change.
    package var device: UUID

    package init(time: UInt64, device: UUID) {
        self.time = time
        self.device = device
    }

    package static func < (lhs: Stamp, rhs: Stamp) -> Bool {
        if lhs.time != rhs.time { return lhs.time < rhs.time }
        return lhs.device.isOrdered(before: rhs.device)
    }

    package var description: String { "\(time >> 16).\(time & 0xFFFF)@\(device.uuidString.prefix(8))" }
}

extension UUID {
    /// Orders UUIDs by their bytes.
    package func isOrdered(before other: UUID) -> Bool {
        // The bytes' order is that of the two big-endian words they spell, compared as numbers.
        let (lhs, rhs) = (bigEndianWords, other.bigEndianWords)
        return lhs.0 != rhs.0 ? lhs.0 < rhs.0 : lhs.1 < rhs.1
    }

    /// The first and last eight bytes, each read as a big-endian number.
    private var bigEndianWords: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid) {
            (
                UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)),
                UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }
}

/// A hybrid logical clock: physical milliseconds where they move forward, a counter where they do not.
///
/// ```swift
/// var clock = HybridLogicalClock()
/// let time = clock.tick(physicalMilliseconds: now)   // later than every time it ticked or observed
/// ```
package struct HybridLogicalClock: Sendable, Hashable {
    /// The latest time the clock gave or observed.
    package private(set) var latest: UInt64

    package init(latest: UInt64 = 0) {
        self.latest = latest
    }

    /// A time later than every time given or observed, close to `physicalMilliseconds` when the wall clock leads.
    package mutating func tick(physicalMilliseconds: UInt64) -> UInt64 {
        let physical = min(physicalMilliseconds, UInt64(1) << 47) << 16
        latest = max(physical, latest &+ 1)
        return latest
    }

    /// Takes note of a time seen in another device's log, so that later ticks come after it.
    package mutating func observe(_ time: UInt64) {
        latest = max(latest, time)
    }
}
