import Foundation
import SyncEngine
import UbiquityProtocol

/// An engine in a process of its own — this executable run again as `ubiquity-bench sync.memory` with
/// ``environmentKey`` set — so its memory is measured apart from the service's.
///
/// The child prints its resident memory as figures when its standard input names a moment (one line each), and
/// stops its engine and exits when standard input closes. Its standard output is this process's.
struct EngineProcess {
    /// What the child needs to run the engine of one device's container.
    struct Specification: Codable, Sendable {
        var baseURL: String
        var token: String
        var device: SavingDevice
        var root: String
        var container: String
    }

    static let environmentKey = "UBIQUITY_BENCH_ENGINE"

    private let process: Process
    private let input: Pipe

    /// The specification given to this process, when it is such a child.
    static var specification: Specification? {
        guard let json = ProcessInfo.processInfo.environment[environmentKey] else { return nil }
        return try? JSONDecoder().decode(Specification.self, from: Data(json.utf8))
    }

    /// Starts a child running the engine of `specification`.
    static func launch(_ specification: Specification) throws -> EngineProcess {
        let process = Process()
        process.executableURL = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = [SyncMemoryBenchmark.name]
        var environment = ProcessInfo.processInfo.environment
        environment[environmentKey] = String(decoding: try JSONEncoder().encode(specification), as: UTF8.self)
        process.environment = environment
        let input = Pipe()
        process.standardInput = input
        try process.run()
        return EngineProcess(process: process, input: input)
    }

    /// Asks the child for its memory figures now, labelled `moment`.
    func ask(_ moment: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((moment + "\n").utf8))
    }

    /// Closes the child's input and waits for it to stop its engine and exit.
    func end() async throws {
        try input.fileHandleForWriting.close()
        // Waited for on a Dispatch thread: `waitUntilExit` blocks.
        let status = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
        guard status == 0 else { throw BenchError("the engine process exited with \(status)") }
    }

    /// In the child: runs the engine, answering each line of standard input with memory figures until it closes.
    static func serve(_ specification: Specification) async throws {
        // As `ubiquity sync` does: arenas limited, free memory given back every second.
        AllocatorArenas.limitToCores()
        let trimming = Task { await AllocatorArenas.releaseFreeMemory(every: .seconds(1)) }
        defer { trimming.cancel() }
        let baseline = ProcessMemory.current
        let layout = ContainerLayout(
            root: URL(fileURLWithPath: specification.root, isDirectory: true),
            container: try ContainerID(specification.container))
        let sync = try ContainerSync(
            layout: layout, client: ServiceClient(baseURL: specification.baseURL, token: specification.token),
            device: specification.device, logger: SyncBench.logger)
        var engine = ContainerEngine(sync: sync, pushToken: specification.token, logger: SyncBench.logger)
        engine.pollInterval = .seconds(3600)
        // The engine runs until standard input closes.
        let running = RunningEngine(task: Task { try await engine.run() })
        SyncMemoryBenchmark.figure("process_baseline_VmRSS_MiB", baseline.resident)
        while let moment = await nextLine() {
            let memory = ProcessMemory.current
            SyncMemoryBenchmark.figure("\(moment)_VmRSS_MiB", memory.resident)
            SyncMemoryBenchmark.figure("\(moment)_VmHWM_MiB", memory.peak)
        }
        await running.stop()
    }

    /// The next line of standard input, read on a Dispatch thread (the read blocks); `nil` at its end.
    private static func nextLine() async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: readLine()) }
        }
    }
}

/// This process's resident memory, from `/proc/self/status`, in MiB.
struct ProcessMemory {
    /// `VmRSS`: resident now.
    var resident: Double
    /// `VmHWM`: the most ever resident.
    var peak: Double

    static var current: ProcessMemory {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Double {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
        }
        return ProcessMemory(resident: field("VmRSS"), peak: field("VmHWM"))
    }
}
