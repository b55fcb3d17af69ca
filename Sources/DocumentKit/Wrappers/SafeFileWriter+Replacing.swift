import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension SafeFileWriter {
    /// The signature of glibc's `renameat2(2)`, which Swift's Glibc module does not import.
    private typealias RenameAt2 =
        @convention(c) (
            Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32
        ) -> Int32

    /// `RENAME_EXCHANGE` from `<linux/fs.h>`: atomically exchange the two paths.
    private static let renameExchange: UInt32 = 1 << 1

    /// Moves the item at `source` to `destination`, replacing whatever is there, as atomically as the
    /// file system allows (see ``replaceItem(at:synchronizesContents:writingWith:)``).
    static func moveIntoPlace(_ source: URL, over destination: URL) throws(FileWrapperError) {
        guard let sourceStatus = try POSIX.lstatus(source) else {
            throw .posix(.writeFailed, "lstat", url: source, errno: ENOENT)
        }
        let destinationStatus = try POSIX.lstatus(destination)
        let isDirectory = { (status: stat) in status.st_mode & S_IFMT == S_IFDIR }
        guard let destinationStatus, isDirectory(sourceStatus) || isDirectory(destinationStatus) else {
            if let destinationStatus, destinationStatus.st_dev == sourceStatus.st_dev,
                destinationStatus.st_ino == sourceStatus.st_ino
            {
                // Hard links to one file: rename(2) would do nothing and leave `source` behind.
                if unlink(source.path) != 0 { throw .posix(.writeFailed, "unlink", url: source) }
                return
            }
            // rename(2) replaces a non-directory, or creates, atomically.
            if rename(source.path, destination.path) != 0 { throw .posix(.writeFailed, "rename", url: destination) }
            return
        }
        if exchange(source, destination) {
            // `source` now holds the old item; the directory sync in the caller makes the swap durable.
            removeTree(at: source)
            return
        }
        // No exchange on this file system: move the old item aside, then the new one in. A crash between
        // the two renames leaves nothing at `destination` and the old item at `aside`.
        let aside = temporarySibling(of: destination)
        if rename(destination.path, aside.path) != 0 { throw .posix(.writeFailed, "rename", url: destination) }
        if rename(source.path, destination.path) != 0 {
            let error = FileWrapperError.posix(.writeFailed, "rename", url: destination)
            _ = rename(aside.path, destination.path)
            throw error
        }
        removeTree(at: aside)
    }

    /// Exchanges the items at `first` and `second` with `renameat2(RENAME_EXCHANGE)`; `false` if the
    /// system or file system does not support it.
    private static func exchange(_ first: URL, _ second: URL) -> Bool {
        guard let symbol = dlsym(nil, "renameat2") else { return false }
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        return renameat2(AT_FDCWD, first.path, AT_FDCWD, second.path, renameExchange) == 0
    }
}
