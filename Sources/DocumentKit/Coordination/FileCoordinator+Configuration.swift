import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension FileCoordinator {
    /// How long a coordinator waits, and where it keeps the lock files shared with other processes.
    public struct Configuration: Sendable {
        /// How long a coordination waits for its locks before failing with
        /// ``FileCoordinationError/Code/timedOut``. Default 30 s.
        public var accessTimeout: TimeInterval
        /// How long a coordination waits for presenters to answer before failing with
        /// ``FileCoordinationError/Code/presenterTimedOut``. Default 30 s.
        public var presenterTimeout: TimeInterval
        /// The directory of the lock files; every process that should be coordinated with must use the same one.
        /// Default ``defaultLockDirectory``. Created (mode 0700) on first use.
        public var lockDirectory: String

        /// Creates a configuration; every parameter defaults as documented on its property.
        public init(
            accessTimeout: TimeInterval = 30,
            presenterTimeout: TimeInterval = 30,
            lockDirectory: String = Configuration.defaultLockDirectory
        ) {
            self.accessTimeout = accessTimeout
            self.presenterTimeout = presenterTimeout
            self.lockDirectory = lockDirectory
        }

        /// `$XDG_RUNTIME_DIR/ubiquity-coordination` when `XDG_RUNTIME_DIR` is set; else
        /// `/dev/shm/ubiquity-coordination-<uid>` when `/dev/shm` is a directory this user can write to; else
        /// `<temporary directory>/ubiquity-coordination-<uid>`. Worked out once per process.
        ///
        /// Lock files are made and swept as paths are coordinated (one for each path an access names), so they belong
        /// in memory: on a disk, each is an inode allocated and freed, which on some file systems costs more than the
        /// coordination itself.
        public static let defaultLockDirectory: String = {
            if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
                return (runtime as NSString).appendingPathComponent("ubiquity-coordination")
            }
            let name = "ubiquity-coordination-\(getuid())"
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue,
                access("/dev/shm", W_OK | X_OK) == 0
            {
                return "/dev/shm/" + name
            }
            return (NSTemporaryDirectory() as NSString).appendingPathComponent(name)
        }()
    }
}
