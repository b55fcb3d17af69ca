import ChildProcess
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `ubiquity` child process, run as a user would run it: the executable built beside the tests, with the test's
/// own configuration and data folders, its standard output and error going to a log file (so a chatty child never
/// blocks on a full pipe). Waiting for it happens on a Dispatch thread, never on Swift concurrency's shared ones.
public final class UbiquityProcess: Sendable {
    private let child: ChildProcess
    /// Where the child's standard output and error go.
    public let log: URL

    /// Starts `program` (an executable of the package: `ubiquity`, `grocery`) with `arguments`; `environment` is
    /// added to this process's own; `input`, when given, is written to its standard input, which is then closed.
    public init(
        _ arguments: [String], program: String = "ubiquity", environment: [String: String] = [:], log: URL,
        input: String? = nil
    ) throws {
        self.log = log
        try FileManager.default.createDirectory(at: log.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        child = try ChildProcess(
            try Self.executable(program), arguments: arguments,
            environment: ChildProcess.environment(adding: environment),
            standardInput: input == nil ? .nullDevice : .pipe, standardOutput: .file(log),
            standardError: .sameAsStandardOutput)
        if let input {
            try child.writeInput(Data(input.utf8))
            child.closeInput()
        }
    }

    /// Runs `program` with `arguments` to its end (at most `timeout`) and returns its exit status and output.
    public static func run(
        _ arguments: [String], program: String = "ubiquity", environment: [String: String] = [:], log: URL,
        input: String? = nil, timeout: TimeInterval = 60
    ) async throws -> (status: Int32, output: String) {
        let child = try UbiquityProcess(arguments, program: program, environment: environment, log: log, input: input)
        guard await child.waitForExit(timeout: timeout) else {
            await child.killAndWait()
            throw ChildProcessFailure("\(program) \(arguments.joined(separator: " ")) ran over \(timeout) s")
        }
        return (child.terminationStatus, child.output)
    }

    /// The process id.
    public var pid: Int32 { child.pid }

    /// Whether the child still runs.
    public var isRunning: Bool { child.isRunning }

    /// The exit status (or the signal) of an ended child.
    public var terminationStatus: Int32 { child.terminationStatus }

    /// Whether an ended child ended by a signal.
    public var endedBySignal: Bool { child.endedBySignal }

    /// What the child wrote so far.
    public var output: String { (try? String(decoding: Data(contentsOf: log), as: UTF8.self)) ?? "" }

    /// The last `count` characters the child wrote.
    public func outputTail(_ count: Int = 2_000) -> String { String(output.suffix(count)) }

    /// Sends SIGKILL (when still running) and waits for the child to end; returns whether it died of that signal.
    @discardableResult
    public func killAndWait() async -> Bool {
        await stop(with: SIGKILL)
    }

    /// Sends `signal` (when still running) and waits (at most `timeout`) for the child to end; returns whether it
    /// ended.
    @discardableResult
    public func stop(with signal: Int32, timeout: TimeInterval = 30) async -> Bool {
        child.signal(signal)
        return await waitForExit(timeout: timeout)
    }

    /// Waits (at most `timeout`) for the child to end; returns whether it did.
    public func waitForExit(timeout: TimeInterval) async -> Bool {
        await child.waitForExit(timeout: .seconds(timeout))
    }

    /// The executable `program` built beside the test bundle.
    public static func executable(_ program: String = "ubiquity") throws -> URL {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let url = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(program)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw ChildProcessFailure("\(program) is not built beside the tests at \(url.path)")
        }
        return url
    }
}

/// Why a child process could not be used.
public struct ChildProcessFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
