import Foundation

/// The synchronous forms: the accessor runs on the calling thread, which waits for presenters and locks.
extension FileCoordinator {
    // MARK: Throwing forms

    /// Runs `reader` with coordinated read access to the item at `url` and returns what it returns.
    ///
    /// - Throws: ``FileCoordinationError`` when access cannot be had (then `reader` does not run), or what `reader`
    ///   throws.
    @discardableResult
    public func coordinate<T>(
        readingItemAt url: URL,
        options: ReadingOptions = [],
        byAccessor reader: (URL) throws -> T
    ) throws -> T {
        let items = [try CoordinatedAccess.Item(reading: url, options: options)]
        return try perform(items) { try reader($0[0]) }
    }

    /// Runs `writer` with coordinated write access to the item at `url` and returns what it returns.
    ///
    /// - Throws: ``FileCoordinationError`` when access cannot be had (then `writer` does not run), or what `writer`
    ///   throws.
    @discardableResult
    public func coordinate<T>(
        writingItemAt url: URL,
        options: WritingOptions = [],
        byAccessor writer: (URL) throws -> T
    ) throws -> T {
        let items = [try CoordinatedAccess.Item(writing: url, options: options)]
        return try perform(items) { try writer($0[0]) }
    }

    /// Runs `accessor` with read access to `readingURL` and write access to `writingURL`, both taken together (in
    /// the one lock order every coordinator uses, so that opposite pairs cannot deadlock).
    ///
    /// - Throws: ``FileCoordinationError`` when access cannot be had, or what `accessor` throws.
    @discardableResult
    public func coordinate<T>(
        readingItemAt readingURL: URL,
        options readingOptions: ReadingOptions = [],
        writingItemAt writingURL: URL,
        options writingOptions: WritingOptions = [],
        byAccessor accessor: (URL, URL) throws -> T
    ) throws -> T {
        let items = [
            try CoordinatedAccess.Item(reading: readingURL, options: readingOptions),
            try CoordinatedAccess.Item(writing: writingURL, options: writingOptions),
        ]
        return try perform(items) { try accessor($0[0], $0[1]) }
    }

    /// Runs `accessor` with write access to two items, taken together — to move `url1` to `url2`, for example
    /// (`.forMoving` and `.forReplacing`, calling ``item(at:didMoveTo:)`` after the move).
    ///
    /// - Throws: ``FileCoordinationError`` when access cannot be had, or what `accessor` throws.
    @discardableResult
    public func coordinate<T>(
        writingItemAt url1: URL,
        options options1: WritingOptions = [],
        writingItemAt url2: URL,
        options options2: WritingOptions = [],
        byAccessor accessor: (URL, URL) throws -> T
    ) throws -> T {
        let items = [
            try CoordinatedAccess.Item(writing: url1, options: options1),
            try CoordinatedAccess.Item(writing: url2, options: options2),
        ]
        return try perform(items) { try accessor($0[0], $0[1]) }
    }

    /// Runs `accessor` with coordinated access to every item of `intents`, taken together on the calling thread,
    /// and returns what it returns; use each intent's `url` in the accessor.
    ///
    /// The items share the locks of the folders they are in: reading a hundred files of one folder takes the
    /// folder's locks once, where a hundred coordinations would take them a hundred times. A writer of any of the
    /// items holds up all of them.
    ///
    /// ```swift
    /// let intents = files.map { FileAccessIntent.readingIntent(with: $0) }
    /// let texts = try coordinator.coordinate(with: intents) {
    ///     try intents.map { try String(contentsOf: $0.url, encoding: .utf8) }
    /// }
    /// ```
    ///
    /// - Throws: ``FileCoordinationError`` when access cannot be had (then `accessor` does not run), or what
    ///   `accessor` throws.
    @discardableResult
    public func coordinate<T>(with intents: [FileAccessIntent], byAccessor accessor: () throws -> T) throws -> T {
        let items = try intents.map { intent throws(FileCoordinationError) in try intent.item() }
        return try perform(items) { _ in try accessor() }
    }

    // MARK: Apple's error-pointer forms

    /// Runs `reader` with coordinated read access to the item at `url`; on failure sets `outError` to an `NSError`
    /// in domain `DocumentKit.FileCoordinationError` and does not run it.
    public func coordinate(
        readingItemAt url: URL,
        options: ReadingOptions = [],
        error outError: NSErrorPointer,
        byAccessor reader: (URL) -> Void
    ) {
        report(outError) { try coordinate(readingItemAt: url, options: options, byAccessor: reader) }
    }

    /// Runs `writer` with coordinated write access to the item at `url`; on failure sets `outError` and does not run
    /// it.
    public func coordinate(
        writingItemAt url: URL,
        options: WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor writer: (URL) -> Void
    ) {
        report(outError) { try coordinate(writingItemAt: url, options: options, byAccessor: writer) }
    }

    /// Runs `accessor` with read access to `readingURL` and write access to `writingURL`; on failure sets `outError`
    /// and does not run it.
    public func coordinate(
        readingItemAt readingURL: URL,
        options readingOptions: ReadingOptions = [],
        writingItemAt writingURL: URL,
        options writingOptions: WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor accessor: (URL, URL) -> Void
    ) {
        report(outError) {
            try coordinate(
                readingItemAt: readingURL, options: readingOptions, writingItemAt: writingURL,
                options: writingOptions, byAccessor: accessor)
        }
    }

    /// Runs `accessor` with write access to two items; on failure sets `outError` and does not run it.
    public func coordinate(
        writingItemAt url1: URL,
        options options1: WritingOptions = [],
        writingItemAt url2: URL,
        options options2: WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor accessor: (URL, URL) -> Void
    ) {
        report(outError) {
            try coordinate(
                writingItemAt: url1, options: options1, writingItemAt: url2, options: options2, byAccessor: accessor)
        }
    }

    private func report(_ outError: NSErrorPointer, _ body: () throws -> Void) {
        do {
            try body()
        } catch let error as FileCoordinationError {
            outError?.pointee = error.nsError
        } catch {
            outError?.pointee = error as NSError
        }
    }
}
