import Foundation
import Testing
import UbiquityTestSupport

@Suite("ubiquity demo")
struct DemoTests {
    @Test("`ubiquity demo --once` runs the service and two devices through every step, reports each done, and exits 0")
    func demoRunsToTheEnd() async throws {
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-demo-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: logs) }
        let (status, output) = try await UbiquityProcess.run(
            ["demo", "--once"], log: logs.appendingPathComponent("demo.log"), timeout: 300)
        #expect(status == 0, "\(output)")
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for step in 1...8 {
            // Each step is narrated, and its last line reports it done.
            let start = try #require(lines.firstIndex { $0.hasPrefix("[\(step)]") }, "step \(step): \(output)")
            let end = lines[(start + 1)...].firstIndex { $0.hasPrefix("[") || $0 == "Where things are" } ?? lines.count
            #expect(lines[(start + 1)..<end].last?.hasPrefix("✓") == true, "step \(step) is reported done: \(output)")
        }
        #expect(output.contains("desktop's store: [\"Milk\", \"Eggs\"]"))
        #expect(output.contains("the desktop's query lists [\"Bread\", \"Milk\", \"Zucchini\"]"))
        let retouch = try #require(lines.first { $0.hasPrefix("✓ retouched") })
        let figures = retouch.split(separator: " ").compactMap { Int($0) }
        // "retouched (a band of 24 rows): N of M chunks uploaded": fewer chunks than the whole image went up again.
        #expect(figures.count >= 3 && figures[1] < figures[2], "\(retouch)")
        #expect(output.contains("conflict: \"Rye bread\" saved on desktop"))
        #expect(output.contains("green on both devices"))
        // Tags (chapter 8): each desktop edit made before it had the laptop's, then both devices alike.
        #expect(output.contains("laptop tagged Milk \"Dairy\"; desktop, without that yet, tagged Milk \"Weekly\""))
        #expect(output.contains("✓ tags added on both: both devices show Milk with Dairy, Weekly"))
        #expect(output.contains("laptop made Dairy blue; desktop, without that yet, tagged Eggs \"Dairy\""))
        #expect(output.contains("✓ different properties: both devices show Dairy (blue): Eggs, Milk"))
        #expect(output.contains("laptop made Weekly green; desktop, without that yet, made Weekly red"))
        let settled = try #require(lines.first { $0.hasPrefix("✓ the same property: both devices show Weekly ") })
        #expect(
            settled.hasSuffix("the desktop saved it later, so its red wins on both")
                || settled.contains("both saved in the same millisecond"), "\(settled)")
        #expect(output.contains("All steps done."))
    }
}
