import Foundation

/// An item to access and how, for ``FileCoordinator/coordinate(with:queue:byAccessor:)`` — the equivalent of
/// Foundation's `NSFileAccessIntent`.
///
/// ```swift
/// let intent = FileAccessIntent.writingIntent(with: url, options: .forReplacing)
/// coordinator.coordinate(with: [intent], queue: queue) { error in
///     guard error == nil else { return }
///     try? data.write(to: intent.url)
/// }
/// ```
public final class FileAccessIntent: Sendable {
    /// The URL of the item to access; in the accessor, the URL to use.
    public let url: URL
    let reading: FileCoordinator.ReadingOptions?
    let writing: FileCoordinator.WritingOptions?

    private init(url: URL, reading: FileCoordinator.ReadingOptions?, writing: FileCoordinator.WritingOptions?) {
        self.url = url
        self.reading = reading
        self.writing = writing
    }

    /// An intent to read the item at `url` with `options`.
    public class func readingIntent(with url: URL, options: FileCoordinator.ReadingOptions = []) -> FileAccessIntent {
        FileAccessIntent(url: url, reading: options, writing: nil)
    }

    /// An intent to write the item at `url` with `options`.
    public class func writingIntent(with url: URL, options: FileCoordinator.WritingOptions = []) -> FileAccessIntent {
        FileAccessIntent(url: url, reading: nil, writing: options)
    }

    func item() throws(FileCoordinationError) -> CoordinatedAccess.Item {
        if let writing { return try CoordinatedAccess.Item(writing: url, options: writing) }
        return try CoordinatedAccess.Item(reading: url, options: reading ?? [])
    }
}
