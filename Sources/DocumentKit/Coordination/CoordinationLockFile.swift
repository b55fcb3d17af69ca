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
        var fd = reusableDescriptor(for: path) ?? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 && errno == ENOENT {
            // The lock directory was removed (a runtime directory cleaned at logout, say): make it again.
            prepared.withLock { _ = $0.remove(directory) }
            try prepare(directory: directory)
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else {
            throw FileCoordinationError(.io, "Cannot open the lock file \(path) for \(lock.key): \(errnoText())")
        }
        descriptors.withLock { $0.record(fd, path: path) }
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
                release(fd)
                throw FileCoordinationError(.io, "Cannot lock \(path) for \(lock.key): \(errnoText(error))")
            }
            if cancellation.isCancelled {
                release(fd)
                throw FileCoordinationError(.cancelled, "Coordinated access to \(lock.item) was cancelled")
            }
            if Date() >= deadline {
                release(fd)
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

    /// Releases a lock taken by ``acquire(_:directory:deadline:cancellation:)``: unlocks the descriptor and keeps it
    /// open for the next acquisition of the same lock file (an open and a close fewer per lock). Every descriptor is
    /// unlocked and then used by one acquisition at a time, so OFD locks still exclude between threads.
    static func release(_ fd: Int32) {
        var request = flock()
        request.l_type = Int16(F_UNLCK)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = 0
        request.l_len = 0
        request.l_pid = 0
        guard fcntl(fd, LinuxSystem.setOFDLock, &request) == 0 else {
            descriptors.withLock { $0.forget(fd) }
            return _ = close(fd)
        }
        let kept = descriptors.withLock { $0.giveBack(fd) }
        if !kept { close(fd) }
    }

    /// A kept descriptor for `path`, if one still names the lock file there: one whose file was deleted (the lock
    /// directory cleaned) would lock nothing any other process sees, so it is closed instead.
    private static func reusableDescriptor(for path: String) -> Int32? {
        while let fd = descriptors.withLock({ $0.take(path) }) {
            var held = stat()
            // A deleted lock file (nlink 0) is what a cleaned lock directory leaves behind.
            if fstat(fd, &held) == 0, held.st_nlink > 0 {
                return fd
            }
            descriptors.withLock { $0.forget(fd) }
            close(fd)
        }
        return nil
    }

    /// Open lock-file descriptors: those in use (by path) and those free for reuse.
    private struct DescriptorPool {
        var free: [String: [Int32]] = [:]
        var pathOfDescriptor: [Int32: String] = [:]
        var freeCount = 0

        mutating func take(_ path: String) -> Int32? {
            guard let fd = free[path]?.popLast() else { return nil }
            freeCount -= 1
            return fd
        }

        /// Keeps `fd` for reuse; `false` when the pool is full (the caller closes it).
        mutating func giveBack(_ fd: Int32) -> Bool {
            guard let path = pathOfDescriptor[fd], freeCount < 256 else {
                pathOfDescriptor[fd] = nil
                return false
            }
            free[path, default: []].append(fd)
            freeCount += 1
            return true
        }

        mutating func forget(_ fd: Int32) {
            pathOfDescriptor[fd] = nil
        }

        mutating func record(_ fd: Int32, path: String) {
            pathOfDescriptor[fd] = path
        }
    }
    private static let descriptors = Mutex(DescriptorPool())

    static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
