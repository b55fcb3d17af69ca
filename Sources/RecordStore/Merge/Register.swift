import Foundation

/// A value with the stamp of the change that set it; of two, the later stamp wins.
///
/// Merging registers is commutative, associative and idempotent, so a property holds the same value on every device
/// that imported the same changes, in whatever order and however many times they came.
package struct Register<Value: Sendable & Hashable>: Sendable, Hashable {
    package var value: Value
    package var stamp: Stamp

    package init(_ value: Value, stamp: Stamp) {
        self.value = value
        self.stamp = stamp
    }

    /// Takes `other` if it is later.
    /// - Returns: Whether the value changed.
    @discardableResult
    package mutating func merge(_ other: Register) -> Bool {
        guard stamp < other.stamp else { return false }
        let changed = value != other.value
        self = other
        return changed
    }
}

extension Optional {
    /// Merges `other` into an optional register, taking it when there was none.
    /// - Returns: Whether the value changed.
    @discardableResult
    package mutating func merge<Value>(_ other: Register<Value>) -> Bool where Wrapped == Register<Value> {
        guard var current = self else {
            self = other
            return true
        }
        let changed = current.merge(other)
        self = current
        return changed
    }
}
