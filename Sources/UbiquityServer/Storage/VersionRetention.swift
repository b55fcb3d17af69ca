import Foundation

/// How long an item's old versions are kept: the operator's retention.
///
/// Only history is pruned — versions that are neither current nor unresolved conflict versions. After each commit
/// or replace, history versions beyond ``maximumCount`` (oldest first) and those modified more than
/// ``maximumAge`` ago are removed, each announced in the feed as a removed version.
public struct VersionRetention: Hashable, Sendable {
    /// The most history versions kept per item.
    public var maximumCount: Int
    /// The oldest a history version may be, by its modification date; `nil` for no age limit.
    public var maximumAge: TimeInterval?

    /// Creates a retention. The default keeps 50 versions of each item for 30 days.
    public init(maximumCount: Int = 50, maximumAge: TimeInterval? = 30 * 86_400) {
        self.maximumCount = max(0, maximumCount)
        self.maximumAge = maximumAge
    }
}
