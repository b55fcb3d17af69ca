import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The cross-process half of coordination locking: an open-file-description record lock on one lock file per key.
///
/// OFD locks belong to the open file description, so every acquisition opens its own descriptor and two acquisitions
/// exclude each other whether they come from two processes or two threads. Waiting polls the non-blocking
/// `F_OFD_SETLK` with a backoff of at most 10 ms. Two keys whose hashes collide share a lock file and merely exclude
/// each other more than needed; lock files are never deleted (deleting one while another process waits on it would
/// let two holders in).
enum CoordinationLockFile {
    /// Creates `directory` (mode 0700) if it does not exist.
    static func prepare(directory: String) throws(FileCoordinationError) {
        if prepared.withLock({ $0.contains(directory) }) { return }
        try create(directory: directory)
        prepared.withLock { _ = $0.insert(directory) }
    }

    /// Lock directories already made in this process (they are never deleted).
    private static let prepared = Mutex<Set<String>>([])

    private static func create(directory: String) throws(FileCoordinationError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue {
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            if FileManager.default.fileExists(atPath: directory) { return }
            throw FileCoordinationError(.io, "Cannot create the lock directory \(directory): \(error)")
        }
    }

    /// Locks `lock.key` in `lock.mode`, waiting until `deadline`; returns the descriptor that holds the lock.
    static func acquire(
        _ lock: CoordinationLockPlan.Lock,
        directory: String,
        deadline: Date,
        cancellation: CoordinationCancellation
    ) throws(FileCoordinationError) -> Int32 {
        let path = directory + "/" + CoordinationPath.lockFileName(forKey: lock.key)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw FileCoordinationError(.io, "Cannot open the lock file \(path) for \(lock.key): \(errnoText())")
        }
        var request = flock()
        request.l_type = Int16(lock.mode == .shared ? F_RDLCK : F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = 0
        request.l_len = 0
        request.l_pid = 0
        var backoff: UInt32 = 500  // microseconds
        while true {
            if fcntl(fd, LinuxSystem.setOFDLock, &request) == 0 { return fd }
            let error = errno
            guard error == EAGAIN || error == EACCES || error == EINTR else {
                close(fd)
                throw FileCoordinationError(.io, "Cannot lock \(path) for \(lock.key): \(errnoText(error))")
            }
            if cancellation.isCancelled {
                close(fd)
                throw FileCoordinationError(.cancelled, "Coordinated access to \(lock.item) was cancelled")
            }
            if Date() >= deadline {
                close(fd)
                throw FileCoordinationError(
                    .timedOut,
                    "Timed out waiting for \(lock.mode == .shared ? "read" : "write") access to \(lock.key) "
                        + "(for \(lock.item)), held by another process"
                )
            }
            usleep(backoff)
            backoff = min(backoff * 2, 10_000)
        }
    }

    /// Releases a lock taken by ``acquire(_:directory:deadline:cancellation:)``.
    static func release(_ fd: Int32) {
        close(fd)
    }

    static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
