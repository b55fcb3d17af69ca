import ChildProcess
import Foundation
import Testing
import UbiquityTestSupport

@Suite("ubiquity demo --documents")
struct DemoCommandTests {
    @Test("`ubiquity demo --documents` runs every step, checks what it narrates, and exits 0")
    func demoRuns() async throws {
        let executable = try builtProduct("ubiquity")
        let process = try ChildProcess(
            executable, arguments: ["demo", "--documents"], standardInput: .nullDevice, standardOutput: .pipe,
            standardError: .sameAsStandardOutput)
        // The demo takes seconds: wait for it on a thread of its own, not on one the other tests share.
        let data = try await offPool {
            let data = Result { try process.readAllOutput() }
            process.waitUntilExit()
            return try data.get()
        }
        let text = String(decoding: data, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        for step in 1...6 { #expect(text.contains("[\(step)]"), "step \(step) is narrated") }
        #expect(text.contains("99 of 99 unchanged pages were hard-linked"))
        #expect(text.contains("All steps done."))
    }
}
