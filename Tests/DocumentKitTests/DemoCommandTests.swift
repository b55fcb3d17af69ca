import Foundation
import Testing

@Suite("ubiquity demo --documents")
struct DemoCommandTests {
    @Test("`ubiquity demo --documents` runs every step, checks what it narrates, and exits 0")
    func demoRuns() async throws {
        let executable = try builtProduct("ubiquity")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["demo", "--documents"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The demo takes seconds: wait for it on a Dispatch thread, not on one the other tests share.
        let data = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: data)
            }
        }
        let text = String(decoding: data, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        for step in 1...6 { #expect(text.contains("[\(step)]"), "step \(step) is narrated") }
        #expect(text.contains("99 of 99 unchanged pages were hard-linked"))
        #expect(text.contains("All steps done."))
    }
}

/// An executable this package builds, beside the test binary.
func builtProduct(_ name: String) throws -> URL {
    let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let url = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(name)
    guard FileManager.default.isExecutableFile(atPath: url.path) else {
        throw TestFailure("\(name) is not built beside the tests at \(url.path)")
    }
    return url
}
