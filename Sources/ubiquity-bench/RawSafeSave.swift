import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The hand-written baseline for a safe save: write a temporary sibling, `fsync` it, `rename` it over the file,
/// `fsync` the directory — the minimum a crash-safe replacement needs, and what ``Document`` promises to do.
enum RawSafeSave {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func replace(_ url: URL, with contents: Data) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).raw.tmp")
        let descriptor = Glibc.open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("open", temporary) }
        do {
            try contents.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { throw failure("write", temporary) }
                    offset += written
                }
            }
            guard fsync(descriptor) == 0 else { throw failure("fsync", temporary) }
        } catch {
            Glibc.close(descriptor)
            unlink(temporary.path)
            throw error
        }
        Glibc.close(descriptor)
        guard rename(temporary.path, url.path) == 0 else { throw failure("rename", url) }
        let directory = Glibc.open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw failure("open", url.deletingLastPathComponent()) }
        defer { Glibc.close(directory) }
        guard fsync(directory) == 0 else { throw failure("fsync", url.deletingLastPathComponent()) }
    }

    private static func failure(_ call: String, _ url: URL) -> Failure {
        Failure(description: "\(call) \(url.path): \(String(cString: strerror(errno)))")
    }
}
