import Foundation
import Glibc

extension ChildProcess {
    /// Writes all of `data` to the child's standard input, blocking while the pipe is full.
    ///
    /// - Throws: ``ChildProcessError`` with ``ChildProcessError/Code/inputClosed`` when the child no longer reads
    ///   its standard input (the write raises no SIGPIPE in this process),
    ///   ``ChildProcessError/Code/invalidConfiguration`` when standard input is not ``Input/pipe`` or was closed,
    ///   ``ChildProcessError/Code/io`` for another failure.
    public func writeInput(_ data: Data) throws(ChildProcessError) {
        try input.withLock { descriptor throws(ChildProcessError) in
            guard let descriptor else {
                throw ChildProcessError(.invalidConfiguration, "the child's standard input is not an open pipe")
            }
            try Self.write(data, to: descriptor)
        }
    }

    /// Closes the child's standard input, so it reads end of file; does nothing when it is already closed or not a
    /// pipe.
    public func closeInput() {
        input.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    /// Reads the standard output pipe to its end (the child, and any child it started, closed it or ended) and
    /// returns what it carried. Blocks: call it from a thread of your own or a Dispatch queue.
    ///
    /// - Throws: ``ChildProcessError`` with ``ChildProcessError/Code/invalidConfiguration`` when standard output is
    ///   not ``Output/pipe``, ``ChildProcessError/Code/io`` when reading fails.
    public func readAllOutput() throws(ChildProcessError) -> Data {
        guard let descriptor = standardOutputDescriptor else {
            throw ChildProcessError(.invalidConfiguration, "the child's standard output is not a pipe")
        }
        return try Self.readToEnd(descriptor)
    }

    /// Reads the standard error pipe to its end, like ``readAllOutput()``.
    ///
    /// - Throws: ``ChildProcessError`` with ``ChildProcessError/Code/invalidConfiguration`` when standard error is
    ///   not ``Output/pipe``, ``ChildProcessError/Code/io`` when reading fails.
    public func readAllErrorOutput() throws(ChildProcessError) -> Data {
        guard let descriptor = standardErrorDescriptor else {
            throw ChildProcessError(.invalidConfiguration, "the child's standard error is not a pipe of its own")
        }
        return try Self.readToEnd(descriptor)
    }

    private static func readToEnd(_ descriptor: Int32) throws(ChildProcessError) -> Data {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                result.append(contentsOf: buffer[..<count])
            } else if count == 0 {
                return result
            } else if errno == EAGAIN {
                // Someone made the descriptor non-blocking: wait until it is readable.
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, -1)
            } else if errno != EINTR {
                throw ChildProcessError(.io, "reading the child's output", errno: errno)
            }
        }
    }

    /// Writes `data` with SIGPIPE blocked on this thread, so a reader that is gone fails the write with EPIPE
    /// instead of killing this process; the SIGPIPE the write raised is taken before the mask is restored.
    private static func write(_ data: Data, to descriptor: Int32) throws(ChildProcessError) {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let failure = data.withUnsafeBytes { buffer -> Int32 in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno != EINTR {
                    return errno
                }
            }
            return 0
        }
        switch failure {
        case 0:
            return
        case EPIPE:
            if sigismember(&previous, SIGPIPE) == 0 {
                var now = timespec()
                _ = sigtimedwait(&pipeSignal, nil, &now)
            }
            throw ChildProcessError(.inputClosed, "the child no longer reads its standard input")
        default:
            throw ChildProcessError(.io, "writing the child's standard input", errno: failure)
        }
    }
}
