import Foundation
import Glibc
import Synchronization

/// A child process started with `posix_spawn`.
///
/// Foundation's `Process.run()` on Linux closes the parent's descriptors one by one before it runs the child, reading
/// `/proc/self/fd` to find them, and has crashed the parent while doing so. This type hands the whole start to
/// `posix_spawn`: the child's standard input, output and error are set up by file actions, every descriptor the parent
/// keeps is close-on-exec from its creation, and the child closes the rest of what it inherited before it runs
/// the executable. A failure to start is a ``ChildProcessError``, never a crash of the parent.
///
/// ```swift
/// let child = try ChildProcess(
///     URL(fileURLWithPath: "/usr/bin/env"), arguments: ["sort"], standardInput: .pipe, standardOutput: .pipe)
/// try child.writeInput(Data("b\na\n".utf8))
/// child.closeInput()
/// let sorted = try child.readAllOutput()  // "a\nb\n"
/// child.waitUntilExit()
/// ```
///
/// The child is reaped (its exit status collected) by ``isRunning``, ``waitUntilExit()`` or
/// ``waitForExit(timeout:)``; one still running when the value is released is reaped by a thread of its own when it
/// ends. The parent's pipe ends are closed when the value is released.
public final class ChildProcess: Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// The read end of the pipe carrying the child's standard output (and its standard error, for
    /// ``Output/sameAsStandardOutput``), when standard output is ``Output/pipe``. Owned by this value, which closes it:
    /// read from it, never close it.
    public let standardOutputDescriptor: Int32?
    /// The read end of the pipe carrying the child's standard error, when standard error is ``Output/pipe``. Owned by
    /// this value, which closes it: read from it, never close it.
    public let standardErrorDescriptor: Int32?
    /// The write end of the standard input pipe until ``closeInput()``.
    let input: Mutex<Int32?>
    /// How the child ended, once reaped. Only a holder of this lock reaps the child or signals it, so its process
    /// id cannot have been reused by another process while the lock is held and this is `nil`.
    private let ending: Mutex<Termination?>

    /// How a child ended.
    private enum Termination {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Starts `executable` with `arguments`.
    ///
    /// - Parameters:
    ///   - executable: The program's file; it becomes the child's `argv[0]`.
    ///   - arguments: The arguments after `argv[0]`.
    ///   - environment: The child's whole environment as `KEY=value` strings; `nil` passes this process's own
    ///     (``environment(adding:)`` makes one with changes).
    ///   - standardInput: Where the child's standard input comes from.
    ///   - standardOutput: Where its standard output goes.
    ///   - standardError: Where its standard error goes.
    /// - Throws: ``ChildProcessError`` with ``ChildProcessError/Code/spawnFailed`` and the C library's text for the
    ///   error when the child could not be started (missing executable, a file that cannot be opened, …), or
    ///   ``ChildProcessError/Code/invalidConfiguration`` for standard output set to ``Output/sameAsStandardOutput``.
    public init(
        _ executable: URL, arguments: [String] = [], environment: [String]? = nil,
        standardInput: Input = .nullDevice, standardOutput: Output = .inherit, standardError: Output = .inherit
    ) throws(ChildProcessError) {
        let started = try Spawn(
            executable: executable, arguments: arguments, environment: environment ?? Self.environment(),
            input: standardInput, output: standardOutput, error: standardError
        ).run()
        pid = started.pid
        input = Mutex(started.input)
        standardOutputDescriptor = started.output
        standardErrorDescriptor = started.error
        ending = Mutex(nil)
    }

    deinit {
        if let descriptor = standardOutputDescriptor { close(descriptor) }
        if let descriptor = standardErrorDescriptor { close(descriptor) }
        closeInput()
        guard reapIfEnded() == nil else { return }
        // Nothing else can wait for the child any more: a thread of its own collects it when it ends, so it does
        // not stay a zombie until the test process ends.
        let pid = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
    }

    /// This process's environment with `changes` set, as the `KEY=value` strings the `environment` parameter of
    /// ``init(_:arguments:environment:standardInput:standardOutput:standardError:)`` takes.
    public static func environment(adding changes: [String: String] = [:]) -> [String] {
        ProcessInfo.processInfo.environment.merging(changes) { _, changed in changed }.map { "\($0.key)=\($0.value)" }
    }

    /// Whether the child still runs; collects its exit status (without waiting) once it has ended.
    public var isRunning: Bool { reapIfEnded() == nil }

    /// The exit code of a child that exited, or the number of the signal that ended it; -1 while it runs.
    public var terminationStatus: Int32 {
        switch reapIfEnded() {
        case .exited(let code), .signalled(let code): code
        case nil: -1
        }
    }

    /// Whether the child ended by a signal; `false` while it runs.
    public var endedBySignal: Bool {
        if case .signalled = reapIfEnded() { true } else { false }
    }

    /// Sends `number` to the child unless it has already been reaped; returns whether the signal was sent.
    @discardableResult
    public func signal(_ number: Int32) -> Bool {
        ending.withLock { ending in ending == nil && Glibc.kill(pid, number) == 0 }
    }

    /// Sends SIGKILL (see ``signal(_:)``).
    @discardableResult
    public func kill() -> Bool { signal(SIGKILL) }

    /// Sends SIGTERM (see ``signal(_:)``).
    @discardableResult
    public func terminate() -> Bool { signal(SIGTERM) }

    /// Blocks the calling thread until the child ends. Call it from a thread of your own or a Dispatch queue, never
    /// from a task on Swift concurrency's shared threads.
    public func waitUntilExit() {
        while reapIfEnded() == nil {
            // Waits without reaping (WNOWAIT), outside the lock: the child stays a zombie, so its process id is not
            // reused, until `reapIfEnded` collects it under the lock.
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno != EINTR && errno != ECHILD {
                // waitid itself failed (not the child's end): a short pause before asking again, not a wait for it.
                usleep(2_000)
            }
        }
    }

    /// Waits (at most `timeout`) for the child to end; returns whether it did. The waiting happens on a thread of
    /// its own, polling every 2 ms: not on a Dispatch global queue, which on Linux is the pool Swift concurrency's
    /// tasks share (tests waiting for children there held its threads, and work queued behind them — NIO's name
    /// lookups for a connection to `localhost` among it — waited past its deadlines).
    public func waitForExit(timeout: Duration) async -> Bool {
        guard isRunning else { return true }
        return await withCheckedContinuation { continuation in
            Thread {
                let deadline = ContinuousClock.now + timeout
                // Polling: no wait for a child's end takes a time limit (waitid has none), and the limit is what
                // lets a test report a hung child instead of hanging itself.
                while self.isRunning && ContinuousClock.now < deadline { usleep(2_000) }
                continuation.resume(returning: !self.isRunning)
            }.start()
        }
    }

    /// How the child ended, collecting its status without waiting; `nil` while it runs.
    private func reapIfEnded() -> Termination? {
        ending.withLock { ending in
            if let ending { return ending }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, WNOHANG) } while result == -1 && errno == EINTR
            if result == pid {
                // The <sys/wait.h> macros: the low 7 bits are the signal (0 for an exit), the next 8 the exit code.
                let signal = status & 0x7f
                ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            } else if result == -1 {
                // ECHILD: something else in this process reaped the child; its status is lost.
                ending = .exited(-1)
            }
            return ending
        }
    }
}
