import ChildProcess
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `ubiquity` child process: the executable built beside the tests, run with its standard output and error
/// going to files (so a chatty child never blocks on a full pipe).
final class ServerProcess: Sendable {
    private let process: ChildProcess
    /// Where the child's standard output goes.
    let outputFile: URL
    /// Where the child's standard error goes.
    let errorFile: URL

    /// Starts `ubiquity` with `arguments`, logging to `<logs>/<name>.out` and `<logs>/<name>.err`; `input`, when
    /// given, is written to its standard input, which is then closed.
    init(_ arguments: [String], logs: URL, name: String, input: String? = nil) throws {
        outputFile = logs.appendingPathComponent("\(name).out")
        errorFile = logs.appendingPathComponent("\(name).err")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        process = try ChildProcess(
            try Self.executable(), arguments: arguments, standardInput: input == nil ? .nullDevice : .pipe,
            standardOutput: .file(outputFile), standardError: .file(errorFile))
        if let input {
            try process.writeInput(Data(input.utf8))
            process.closeInput()
        }
    }

    /// Starts `ubiquity server` with `arguments` (which should include `--port 0`) and waits (at most `timeout`)
    /// for the line announcing the port it listens on.
    static func startServer(
        _ arguments: [String], logs: URL, name: String, timeout: Duration = .seconds(30)
    ) async throws -> (process: ServerProcess, port: Int) {
        let server = try ServerProcess(["server"] + arguments, logs: logs, name: name)
        do {
            return (server, try await server.waitForPort(timeout: timeout))
        } catch {
            server.killAndWait()
            throw error
        }
    }

    /// The process id.
    var pid: Int32 { process.pid }

    /// Whether the child still runs.
    var isRunning: Bool { process.isRunning }

    /// What the child wrote to standard output and standard error so far.
    var output: String { Self.contents(of: outputFile) }
    var errors: String { Self.contents(of: errorFile) }

    /// Polls the standard output for `ubiquity server listening on http://HOST:PORT` and returns PORT.
    func waitForPort(timeout: Duration) async throws -> Int {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let port = Self.port(in: output) { return port }
            guard process.isRunning else {
                throw ServerProcessFailure(
                    "the server exited (status \(process.terminationStatus)) before listening: \(errors)")
            }
            guard ContinuousClock.now < deadline else {
                throw ServerProcessFailure("the server announced no port within \(timeout): \(output) \(errors)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The port of the `listening on` line in `text`.
    static func port(in text: String) -> Int? {
        for line in text.split(separator: "\n") where line.hasPrefix("ubiquity server listening on ") {
            guard let scheme = line.range(of: "://") else { continue }
            let rest = line[scheme.upperBound...]
            guard let colon = rest.firstIndex(of: ":") else { continue }
            let digits = rest[rest.index(after: colon)...].prefix { $0.isNumber }
            if let port = Int(digits), port > 0 { return port }
        }
        return nil
    }

    /// Sends SIGKILL (when still running) and waits (at most `timeout`) for the child to end; returns whether it
    /// ended by that signal.
    @discardableResult
    func killAndWait(timeout: TimeInterval = 10) -> Bool {
        process.kill()
        return waitForExit(timeout: timeout) && process.endedBySignal && process.terminationStatus == SIGKILL
    }

    /// Waits (at most `timeout`) for the child to end by itself; returns whether it did.
    @discardableResult
    func waitForExit(timeout: TimeInterval = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline { usleep(2_000) }
        return !process.isRunning
    }

    /// Waits (at most `timeout`) for the child to end by itself, on a thread of its own rather than one of the pool
    /// the tests' tasks share; returns whether it did.
    func exited(within timeout: Duration) async -> Bool {
        await process.waitForExit(timeout: timeout)
    }

    /// The exit status of an ended child.
    var terminationStatus: Int32 { process.terminationStatus }

    /// The `ubiquity` executable built beside the test bundle.
    static func executable() throws -> URL {
        #if os(Linux)
            let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let products = URL(fileURLWithPath: own).deletingLastPathComponent()
        #else
            let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
            let products = bundle.bundleURL.deletingLastPathComponent()
        #endif
        let url = products.appendingPathComponent("ubiquity")
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw ServerProcessFailure("ubiquity is not built beside the tests at \(url.path)")
        }
        return url
    }

    private static func contents(of file: URL) -> String {
        (try? String(decoding: Data(contentsOf: file), as: UTF8.self)) ?? ""
    }
}

/// Why a child process could not be used.
struct ServerProcessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
