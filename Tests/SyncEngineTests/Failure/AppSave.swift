import DocumentKit
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The ways an application writes a file into a container, as the engine finds them on disk.
enum AppSave: String, CaseIterable, Sendable {
    /// What `Document` does: under a coordinated write, a hidden temporary sibling (`.<name>.<random>.tmp`) is
    /// written and flushed, renamed over the file, and the folder flushed.
    case coordinatedReplace
    /// The same temporary file and rename, without coordination (most editors and tools).
    case replace
    /// The file truncated and written in place, uncoordinated (`echo > file`): a reader may see it half-written.
    case overwrite

    /// Writes `contents` to `url` this way (the folder is made when missing). Blocking: call it off the shared
    /// concurrency threads.
    func write(_ contents: Data, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        switch self {
        case .coordinatedReplace:
            try FileCoordinator().coordinate(writingItemAt: url, options: .forReplacing) { url in
                try Self.replace(url, with: contents)
            }
        case .replace:
            try Self.replace(url, with: contents)
        case .overwrite:
            try contents.write(to: url)
        }
    }

    private static func replace(_ url: URL, with contents: Data) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.lastPathComponent).\(UUID().uuidString.prefix(8).lowercased()).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let written = contents.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return true }
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(descriptor, base + offset, bytes.count - offset)
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        let flushed = fsync(descriptor) == 0
        close(descriptor)
        guard written, flushed, rename(temporary.path, url.path) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            unlink(temporary.path)
            throw error
        }
        let folder = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }
}
