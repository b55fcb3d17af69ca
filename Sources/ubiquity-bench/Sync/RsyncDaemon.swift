import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `rsync --daemon` on 127.0.0.1 (a free port) with a generated configuration and one writable module, the
/// baseline the sync benchmarks compare with; `nil` from ``start(in:)`` when rsync is not installed.
struct RsyncDaemon {
    /// The `rsync` executable.
    let executable: URL
    /// The module's directory, where transfers land.
    let module: URL
    let port: Int
    private let process: Process

    /// The `rsync` on `PATH`, if any.
    static var installed: URL? {
        InstalledProgram.named("rsync")
    }

    /// Starts a daemon whose files live in `directory`; `nil` when rsync is not installed.
    static func start(in directory: URL) async throws -> RsyncDaemon? {
        guard let executable = installed else { return nil }
        let module = directory.appendingPathComponent("module", isDirectory: true)
        try FileManager.default.createDirectory(at: module, withIntermediateDirectories: true)
        let port = try Loopback.freePort()
        let configuration = directory.appendingPathComponent("rsyncd.conf")
        try """
        use chroot = no
        address = 127.0.0.1
        port = \(port)
        uid = \(getuid())
        gid = \(getgid())
        pid file = \(directory.path)/rsyncd.pid
        log file = \(directory.path)/rsyncd.log

        [bench]
            path = \(module.path)
            read only = no

        """.write(to: configuration, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--daemon", "--no-detach", "--config=\(configuration.path)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let daemon = RsyncDaemon(executable: executable, module: module, port: port, process: process)
        try await Measure.poll(every: .milliseconds(10), for: .seconds(10)) { Loopback.canConnect(port) }
        return daemon
    }

    /// `rsync <options> <file> rsync://127.0.0.1:<port>/bench/` from a client process.
    /// - Returns: How long the client ran, and what it printed.
    func send(_ file: URL, options: [String] = ["-a"]) async throws -> (Duration, String) {
        let client = Process()
        client.executableURL = executable
        client.arguments = options + [file.path, "rsync://127.0.0.1:\(port)/bench/"]
        let output = Pipe()
        client.standardOutput = output
        client.standardError = output
        let start = ContinuousClock.now
        try client.run()
        let printed = await InstalledProgram.output(of: client, on: output)
        let duration = ContinuousClock.now - start
        guard client.terminationStatus == 0 else {
            throw BenchError("rsync exited with \(client.terminationStatus): \(printed)")
        }
        return (duration, printed)
    }

    /// Stops the daemon.
    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
