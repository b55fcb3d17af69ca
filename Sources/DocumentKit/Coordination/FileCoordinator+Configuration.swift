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

        /// `$XDG_RUNTIME_DIR/ubiquity-coordination` when `XDG_RUNTIME_DIR` is set, else
        /// `<temporary directory>/ubiquity-coordination-<uid>`, read once per process.
        public static let defaultLockDirectory: String = {
            if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
                return (runtime as NSString).appendingPathComponent("ubiquity-coordination")
            }
            return (NSTemporaryDirectory() as NSString).appendingPathComponent("ubiquity-coordination-\(getuid())")
        }()
    }
}
