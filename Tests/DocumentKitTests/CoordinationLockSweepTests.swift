import Foundation
import SyncSimulation
import Synchronization
import Testing
import UbiquityTestSupport

@testable import DocumentKit

#if canImport(Glibc)
    import Glibc
#endif

/// The lock directory does not grow with every path ever coordinated: lock files no one holds are swept away, and
/// sweeping never lets two holders in.
@Suite("Coordination lock files: swept when unheld, never at the cost of exclusion")
struct CoordinationLockSweepTests {
    /// A new lock directory (made here, so that no first-use sweep of this process runs in it).
    private static func lockDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-lock-sweep-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }

    private static func lock(_ key: String, _ mode: CoordinationLockMode = .exclusive) -> CoordinationLockPlan.Lock {
        CoordinationLockPlan.Lock(key: key, mode: mode, item: key)
    }

    private static func acquire(_ key: String, in directory: String) throws -> Int32 {
        try CoordinationLockFile.acquire(
            lock(key), directory: directory, deadline: Date(timeIntervalSinceNow: 60),
            cancellation: CoordinationCancellation())
    }

    /// Whether another open file description could lock the file at `key`'s path exclusively now.
    private static func isFree(_ key: String, in directory: String) -> Bool {
        let fd = open(directory + "/" + CoordinationPath.lockFileName(forKey: key), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(fd) }
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        return fcntl(fd, LinuxSystem.setOFDLock, &request) == 0
    }

    @Test("Past the pool's capacity of distinct locks, the locks taken again and again keep their descriptors")
    func hotLocksKeepTheirDescriptors() throws {
        let directory = try Self.lockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let capacity = CoordinationLockFile.DescriptorPool.capacity
        // Many files coordinated one after another fill the pool of kept descriptors with theirs.
        for number in 0..<(capacity * 2) {
            CoordinationLockFile.release(try Self.acquire("file \(number)", in: directory))
        }
        // Then the container's lock, shared by several accesses at once (each holds a descriptor of its own), again
        // and again as every access in a large container does.
        func shared() throws -> [Int32] {
            try (0..<4).map { _ in
                try CoordinationLockFile.acquire(
                    Self.lock("container", .shared), directory: directory, deadline: Date(timeIntervalSinceNow: 60),
                    cancellation: CoordinationCancellation())
            }
        }
        let first = try shared()
        // Marks each open file description (a status flag is the description's, not the number's): a descriptor
        // opened anew for the file, even under the same number, lacks the mark.
        for fd in first { #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0) }
        for fd in first { CoordinationLockFile.release(fd) }
        for round in 0..<3 {
            let again = try shared()
            #expect(
                again.allSatisfy { fcntl($0, F_GETFL) & O_NONBLOCK != 0 },
                "round \(round): the container's lock file was opened again")
            for fd in again { CoordinationLockFile.release(fd) }
        }
        #expect(Self.isFree("container", in: directory))
        // A lock whose descriptor was closed to make room opens its file anew, and still locks.
        let old = try Self.acquire("file 0", in: directory)
        #expect(!Self.isFree("file 0", in: directory))
        CoordinationLockFile.release(old)
    }

    @Test(
        "The pool of kept descriptors closes the one given back longest ago, as a search of them all would",
        arguments: 0..<20)
    func poolEvictsLeastRecentlyGivenBack(seed: UInt64) {
        var random = SeededGenerator(seed: seed &+ 90_000)
        var pool = CoordinationLockFile.DescriptorPool()
        let paths = (0..<(CoordinationLockFile.DescriptorPool.capacity * 2)).map { "lock \($0)" }
        // The model: descriptors in use by path, and free ones with when each was given back.
        var inUse: [Int32: String] = [:]
        var free: [(fd: Int32, path: String, time: Int)] = []
        var time = 0
        var nextDescriptor: Int32 = 3
        for step in 0..<4_000 {
            let path = paths[Int(random.next() % UInt64(paths.count))]
            if random.next() % 2 == 0, !inUse.isEmpty {
                // A release: the descriptor is kept, and past the capacity the least recently given back is closed.
                let fd = inUse.keys.sorted()[Int(random.next() % UInt64(inUse.count))]
                let evicted = pool.giveBack(fd)
                let expected =
                    free.count >= CoordinationLockFile.DescriptorPool.capacity
                    ? free.min { $0.time < $1.time }?.fd : nil
                #expect(evicted == expected, "seed \(seed), step \(step)")
                free.removeAll { $0.fd == expected }
                time += 1
                free.append((fd, inUse.removeValue(forKey: fd)!, time))
            } else if let fd = pool.take(path) {
                // An acquisition reusing a kept descriptor of its path: the most recently given back of them.
                let kept = free.filter { $0.path == path }
                #expect(fd == kept.max { $0.time < $1.time }?.fd, "seed \(seed), step \(step)")
                free.removeAll { $0.fd == fd }
                inUse[fd] = path
            } else {
                #expect(!free.contains { $0.path == path }, "seed \(seed), step \(step): a kept descriptor missed")
                // A new descriptor, opened for the path; numbers of closed ones are not reused here.
                let fd = nextDescriptor
                nextDescriptor += 1
                pool.record(fd, path: path)
                inUse[fd] = path
            }
        }
    }

    @Test("Unheld lock files are swept away, a held one stays, and a lock taken again after the sweep still excludes")
    func sweepKeepsWhatIsHeld() throws {
        let directory = try Self.lockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = (0..<300).map { "/sweep/Documents/File \($0).txt" }
        for key in keys { CoordinationLockFile.release(try Self.acquire(key, in: directory)) }
        let held = try Self.acquire("/sweep/Documents/Held.txt", in: directory)

        CoordinationLockFile.sweep(directory: directory, sparingReusable: false)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory)
                == [CoordinationPath.lockFileName(forKey: "/sweep/Documents/Held.txt")],
            "only the held lock's file is left")
        #expect(!Self.isFree("/sweep/Documents/Held.txt", in: directory), "the held lock still excludes")

        // The descriptors kept for reuse name deleted files now: a lock taken again must be on the file at the path,
        // or another process opening the path would take the same lock beside it.
        for key in keys.prefix(20) {
            let fd = try Self.acquire(key, in: directory)
            #expect(!Self.isFree(key, in: directory), "\(key) locked again, but not on the file at its path")
            CoordinationLockFile.release(fd)
            #expect(Self.isFree(key, in: directory))
        }
        CoordinationLockFile.release(held)
        CoordinationLockFile.sweep(directory: directory, sparingReusable: false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test("Threads taking one lock exclusively while another thread sweeps its file away never hold it together")
    func sweepingNeverLetsTwoHoldersIn() async throws {
        let directory = try Self.lockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let counts = Counts()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await offPool {
                        defer { counts.working.subtract(1, ordering: .sequentiallyConsistent) }
                        for _ in 0..<400 {
                            let fd = try Self.acquire("/sweep/Shared.txt", in: directory)
                            if counts.inside.add(1, ordering: .sequentiallyConsistent).newValue != 1 {
                                counts.overlaps.add(1, ordering: .relaxed)
                            }
                            sched_yield()
                            counts.inside.subtract(1, ordering: .sequentiallyConsistent)
                            CoordinationLockFile.release(fd)
                        }
                    }
                }
            }
            group.addTask {
                try await offPool {
                    while counts.working.load(ordering: .sequentiallyConsistent) > 0 {
                        CoordinationLockFile.sweep(directory: directory, sparingReusable: false)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(counts.overlaps.load(ordering: .relaxed) == 0, "two threads held the lock at once")
        CoordinationLockFile.sweep(directory: directory, sparingReusable: false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    /// Who is inside the lock, how often two were, and how many threads still take it.
    private final class Counts: Sendable {
        let inside = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let working = Atomic<Int>(4)
    }
}
