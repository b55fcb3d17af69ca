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
/// each other more than needed.
///
/// Lock files are swept away when no one holds them (``sweep(directory:sparingReusable:)``, run in the background
/// after a process's first use of the directory and after every 4,096 lock files it opened), so the directory holds
/// about as many files as there are locks in use, not one for every path ever coordinated. Deleting a lock file
/// that another acquisition has opened but not yet locked would let two holders in (one on the deleted file, one on
/// its successor), so the sweep deletes only a file it holds exclusively and still finds at its path, and every
/// acquisition, once granted, checks that its file is still the one at the path, and opens the path again if not.
enum CoordinationLockFile {
    /// Creates `directory` (mode 0700) if it does not exist.
    static func prepare(directory: String) throws(FileCoordinationError) {
        if prepared.withLock({ $0.contains(directory) }) { return }
        try create(directory: directory)
        let first = prepared.withLock { $0.insert(directory).inserted }
        // What other processes left behind (they sweep only as they go) is swept once per process.
        if first && swept.withLock({ $0.insert(directory).inserted }) { sweepInBackground(directory) }
    }

    /// Directories this process has swept at its first use of them.
    private static let swept = Mutex<Set<String>>([])

    /// Lock directories already made in this process (they are never deleted).
    private static let prepared = SleepingLock<Set<String>>([])

    private static func create(directory: String) throws(FileCoordinationError) {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            } catch {
                if !FileManager.default.fileExists(atPath: directory) {
                    throw FileCoordinationError(.io, "Cannot create the lock directory \(directory): \(error)")
                }
            }
        }
        try checkOwnership(of: directory)
    }

    /// Checks that `directory` is a directory of this user's own that no other user can write to: the default one is
    /// in a folder every user shares (`/dev/shm`, `/tmp`), where another user could make it first and then hold or
    /// delete the locks.
    private static func checkOwnership(of directory: String) throws(FileCoordinationError) {
        var status = stat()
        guard lstat(directory, &status) == 0 else {
            throw FileCoordinationError(.io, "Cannot read the lock directory \(directory): \(errnoText())")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw FileCoordinationError(.io, "The lock directory \(directory) is not a directory (a link, say)")
        }
        guard status.st_uid == geteuid() else {
            throw FileCoordinationError(
                .io, "The lock directory \(directory) belongs to user \(status.st_uid), not to this user (\(geteuid()))"
            )
        }
        guard status.st_mode & S_IWOTH == 0 else {
            throw FileCoordinationError(.io, "The lock directory \(directory) can be written by any user")
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
        var fd: Int32
        if let kept = reusableDescriptor(for: path) {
            fd = kept
        } else {
            fd = try openLockFile(path, lock: lock, directory: directory)
        }
        var request = flock()
        request.l_type = Int16(lock.mode == .shared ? F_RDLCK : F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = 0
        request.l_len = 0
        request.l_pid = 0
        var backoff: UInt32 = 500  // microseconds
        while true {
            if fcntl(fd, LinuxSystem.setOFDLock, &request) == 0 {
                if isCurrent(fd, path: path) { return fd }
                // Swept away between the open and the lock: the lock guards nothing. Take the file now at the path.
                discard(fd)
                fd = try openLockFile(path, lock: lock, directory: directory)
                continue
            }
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

    /// Opens (creating it if need be) the lock file at `path`, remaking the lock directory if it was removed.
    private static func openLockFile(
        _ path: String, lock: CoordinationLockPlan.Lock, directory: String
    ) throws(FileCoordinationError) -> Int32 {
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
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
        if opened.add(1, ordering: .relaxed).newValue % sweepInterval == 0 { sweepInBackground(directory) }
        return fd
    }

    /// Whether `fd` is the file at `path` (not one deleted since it was opened).
    private static func isCurrent(_ fd: Int32, path: String) -> Bool {
        var held = stat()
        var named = stat()
        guard fstat(fd, &held) == 0, stat(path, &named) == 0 else { return false }
        return held.st_dev == named.st_dev && held.st_ino == named.st_ino
    }

    /// Closes a descriptor that will not be used again (its lock, if any, goes with it).
    private static func discard(_ fd: Int32) {
        descriptors.withLock { $0.forget(fd) }
        close(fd)
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
        if let closing = descriptors.withLock({ $0.giveBack(fd) }) { close(closing) }
    }

    /// A kept descriptor for `path`, if there is one (whether its file is still the one at the path is checked once
    /// it is locked, as for a new one).
    private static func reusableDescriptor(for path: String) -> Int32? {
        descriptors.withLock { $0.take(path) }
    }

    /// Open lock-file descriptors: those in use (by path) and those free for reuse, at most ``capacity`` of them, the
    /// least recently given back closed first. (Keeping the first 256 for good meant that once a process had
    /// coordinated 256 paths, the lock files of the folders every access goes through — the container, `Documents`
    /// — were opened and closed again for each access.)
    ///
    /// The least recently given back is the first still-current entry of a queue in the order of giving back, not a
    /// search of every free descriptor: once more than ``capacity`` paths had been coordinated, every release searched
    /// all 256 under the pool's lock, which every coordination in the process takes, and threads spun waiting for it
    /// (a tenth of the engines' CPU while thousands of files arrived at once).
    struct DescriptorPool {
        static let capacity = 256
        var free: [String: [Int32]] = [:]
        var pathOfDescriptor: [Int32: String] = [:]
        /// When each free descriptor was given back, by a counter.
        var givenBack: [Int32: UInt64] = [:]
        var clock: UInt64 = 0
        /// Descriptors in the order they were given back, with when: an entry is current while ``givenBack`` still
        /// holds its time (a descriptor taken, or given back again since, leaves a stale entry behind).
        private var order: [(fd: Int32, time: UInt64)] = []
        /// Where the entries not yet passed over begin.
        private var head = 0

        mutating func take(_ path: String) -> Int32? {
            guard var kept = free[path], let fd = kept.popLast() else { return nil }
            free[path] = kept.isEmpty ? nil : kept
            givenBack[fd] = nil
            return fd
        }

        /// Keeps `fd` for reuse; returns a descriptor to close: the least recently given back one when the pool is
        /// full, or `fd` itself when it is not known.
        mutating func giveBack(_ fd: Int32) -> Int32? {
            guard let path = pathOfDescriptor[fd] else { return fd }
            let evicted = givenBack.count >= Self.capacity ? evictLeastRecent() : nil
            free[path, default: []].append(fd)
            clock += 1
            givenBack[fd] = clock
            order.append((fd, clock))
            // Stale entries are dropped once they outnumber the current ones (at most `capacity`) three to one.
            if order.count - head > 4 * Self.capacity {
                order = order[head...].filter { givenBack[$0.fd] == $0.time }
                head = 0
            }
            return evicted
        }

        /// Forgets the free descriptor given back longest ago, and returns it.
        private mutating func evictLeastRecent() -> Int32? {
            while head < order.count {
                let (fd, time) = order[head]
                head += 1
                guard givenBack[fd] == time else { continue }
                givenBack[fd] = nil
                if let path = pathOfDescriptor.removeValue(forKey: fd) {
                    free[path]?.removeAll { $0 == fd }
                    if free[path]?.isEmpty == true { free[path] = nil }
                }
                return fd
            }
            return nil
        }

        mutating func forget(_ fd: Int32) {
            pathOfDescriptor[fd] = nil
        }

        mutating func record(_ fd: Int32, path: String) {
            pathOfDescriptor[fd] = path
        }
    }
    private static let descriptors = SleepingLock(DescriptorPool())

    // MARK: Sweeping

    /// Lock files opened by this process; every ``sweepInterval``-th starts a sweep.
    private static let opened = Atomic<Int>(0)
    static let sweepInterval = 4096
    /// Directories being swept now (one sweep of a directory at a time per process).
    private static let sweeping = Mutex<Set<String>>([])
    /// Held by every sweep while it runs (see ``sweep(directory:sparingReusable:)``).
    private static let oneSweepAtATime = NSLock()

    /// Sweeps `directory` on a thread of its own, unless a sweep of it is under way.
    private static func sweepInBackground(_ directory: String) {
        guard sweeping.withLock({ $0.insert(directory).inserted }) else { return }
        let thread = Thread {
            sweep(directory: directory)
            _ = sweeping.withLock { $0.remove(directory) }
        }
        thread.name = "DocumentKit.LockSweep"
        thread.start()
    }

    /// Deletes the lock files of `directory` that no one holds, and returns how many it deleted.
    ///
    /// A file is deleted only while this sweep holds it exclusively and finds it still at its path, so no holder
    /// loses its lock, and an acquisition that opened the file before it was deleted finds, once granted, that the
    /// path names another file or none, and opens the path again. Files this process keeps open for reuse are spared
    /// when `sparingReusable` (a reused descriptor whose file was deleted is noticed and replaced, but costs an open).
    ///
    /// One sweep runs at a time in a process: a sweep that skipped a file because another sweep held it at that
    /// moment would otherwise return before that file is gone, and a caller listing the directory after it would
    /// find the file still there.
    @discardableResult
    static func sweep(directory: String, sparingReusable: Bool = true) -> Int {
        oneSweepAtATime.lock()
        defer { oneSweepAtATime.unlock() }
        guard let stream = opendir(directory) else { return 0 }
        defer { closedir(stream) }
        let spared = sparingReusable ? descriptors.withLock { Set($0.free.keys) } : []
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        var deleted = 0
        // Entries deleted while the directory is read are simply not seen again (POSIX leaves it open whether
        // readdir returns an entry added or removed since opendir; either is harmless here).
        while let entry = readdir(stream) {
            let name = String(decoding: LinuxSystem.nameBytes(of: entry), as: UTF8.self)
            guard name.utf8.count == 16, name.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            else { continue }
            let path = directory + "/" + name
            if spared.contains(path) { continue }
            let fd = open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { continue }
            if fcntl(fd, LinuxSystem.setOFDLock, &request) == 0, isCurrent(fd, path: path), unlink(path) == 0 {
                deleted += 1
            }
            close(fd)
        }
        return deleted
    }

    static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
