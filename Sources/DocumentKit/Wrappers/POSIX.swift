import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Small wrappers over system calls, throwing ``FileWrapperError``.
enum POSIX {
    /// The wall-clock time in nanoseconds since 1970.
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// `lstat(2)`, or `nil` if nothing is there.
    static func lstatus(_ url: URL) throws(FileWrapperError) -> stat? {
        var status = stat()
        if lstat(url.path, &status) == 0 { return status }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw .posix(.readFailed, "lstat", url: url)
    }

    /// Opens `url`, retrying on `EINTR`.
    static func openFile(_ url: URL, _ flags: Int32, mode: mode_t = 0, failure: FileWrapperError.Code)
        throws(FileWrapperError) -> Int32
    {
        while true {
            let descriptor = open(url.path, flags | O_CLOEXEC, mode)
            if descriptor >= 0 { return descriptor }
            if errno != EINTR { throw .posix(failure, "open", url: url) }
        }
    }

    /// `fsync(2)` on an open descriptor.
    static func sync(_ descriptor: Int32, url: URL) throws(FileWrapperError) {
        while fsync(descriptor) != 0 {
            if errno != EINTR { throw .posix(.writeFailed, "fsync", url: url) }
        }
    }

    /// Reads the whole of an open file, starting from its current offset.
    static func readAll(_ descriptor: Int32, expectedSize: Int, url: URL) throws(FileWrapperError) -> Data {
        var data = Data(count: expectedSize)
        var total = 0
        while total < data.count {
            let count = data.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + total, buffer.count - total)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .posix(.readFailed, "read", url: url)
            }
            if count == 0 { break }
            total += count
        }
        data.count = total
        // The file may have grown since it was measured: read on until the end.
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .posix(.readFailed, "read", url: url)
            }
            if count == 0 { return data }
            data.append(contentsOf: chunk[0..<count])
        }
    }

    /// Writes all of `data` to an open file.
    static func writeAll(_ data: Data, to descriptor: Int32, url: URL) throws(FileWrapperError) {
        var error: FileWrapperError?
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    error = .posix(.writeFailed, "write", url: url)
                    return
                }
                offset += count
            }
        }
        if let error { throw error }
    }
}
