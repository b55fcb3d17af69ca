import Foundation
import Synchronization
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The lock in `.ubiquity/engine.lock` that keeps one engine per container on a machine. It is an OFD lock on
/// an open file, so the kernel lets it go when the engine's process ends, however it ends.
///
/// A ``ContainerSync`` takes it when it opens the container and holds it until ``ContainerSync/releaseLock()`` (or until
/// it is freed): nothing is served, scanned or written by an engine that does not hold it.
public final class EngineLock: Sendable {
    /// The locked file's descriptor; `nil` once released.
    private let descriptor: Mutex<Int32?>

    /// Takes the lock of `layout`'s container.
    /// - Throws: ``ProtocolError`` with ``ProtocolError/Code/engineAlreadyRunning`` naming the container when another
    ///   engine holds it, or the system's error.
    public init(_ layout: ContainerLayout) throws {
        let path = layout.lockFile.path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(descriptor, Self.setOFDLock, &lock) == 0 else {
            let failure = errno
            close(descriptor)
            guard failure == EAGAIN || failure == EACCES else {
                throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
            }
            throw ProtocolError(
                .engineAlreadyRunning,
                "another engine is running for container \(layout.container) (\(path) is locked)")
        }
        self.descriptor = Mutex(descriptor)
    }

    /// Lets the lock go (once; later calls do nothing).
    ///
    /// Unlocked before it is closed: a child process another thread is starting holds a copy of the descriptor
    /// until it runs its program, and closing alone would leave the lock held by that copy until then.
    public func release() {
        descriptor.withLock { descriptor in
            if let open = descriptor {
                var lock = flock()
                lock.l_type = Int16(F_UNLCK)
                lock.l_whence = Int16(SEEK_SET)
                _ = fcntl(open, Self.setOFDLock, &lock)
                close(open)
            }
            descriptor = nil
        }
    }

    deinit { release() }

    /// `F_OFD_SETLK`, the same on every Linux architecture; Glibc's module does not export it.
    private static let setOFDLock: Int32 = 37
}
