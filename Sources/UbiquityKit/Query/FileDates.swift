import DocumentKit
import Foundation

/// A file's content change and creation dates, as ``MetadataItem`` reports them: the modification time, and the
/// birth time where the file system keeps it (``FileStatus``, from `statx(2)`).
struct FileDates: Sendable, Equatable {
    /// The last change of the content (`st_mtim`).
    var contentChange: Date?
    /// The birth time, when the file system keeps it.
    var creation: Date?

    /// No dates (a placeholder).
    init() {}

    /// The dates of the item at `path` (not following a symbolic link); none when it is not there.
    init(ofItemAt path: String) {
        guard let status = FileStatus.of(path: path) else { return }
        contentChange = Self.date(status.modified)
        creation = status.born.map(Self.date)
    }

    private static func date(_ nanoseconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(nanoseconds) / 1_000_000_000)
    }
}
