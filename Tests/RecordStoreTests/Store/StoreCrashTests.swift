import ChildProcess
import Foundation
import GRDB
import Testing
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Kills a process that saves in a loop (`record-store-test-helper save-loop`) with SIGKILL at random instants,
/// again and again on one store, and after every kill opens the store in another process and checks that the store
/// and its logs agree: every save in both or in neither, each log whole, nothing a save reported lost.
@Suite("Record store crash safety")
struct StoreCrashTests {
    @Test("after SIGKILL at any instant of a save loop, the store opens and it and its logs agree (100 kills)")
    func storeAndLogsAgree() async throws {
        let helper = try builtProduct("record-store-test-helper")
        try await withTemporaryFolder { folder in
            let store = folder.appendingPathComponent("store.sqlite").path
            let content = folder.appendingPathComponent("TransactionLogs").path
            let problems = try await offPool { () throws -> [String] in
                var problems: [String] = []
                var previous = 0
                for kill in 1...100 where problems.count < 5 {
                    let acknowledged = try Self.killMidSave(helper: helper, arguments: ["save-loop", store, content])
                    let output = try Self.check(helper: helper, store: store, content: content)
                    let line = output.split(separator: "\n").last.map(String.init) ?? ""
                    guard line.hasPrefix("ok "), let saves = Int(line.dropFirst(3)) else {
                        problems.append("kill \(kill): \(output)")
                        continue
                    }
                    if saves < acknowledged {
                        problems.append("kill \(kill): save \(acknowledged) reported, \(saves) kept")
                    }
                    if saves > acknowledged + 1 {
                        problems.append(
                            "kill \(kill): \(saves) saves kept, only \(acknowledged) reported and one under way")
                    }
                    if saves < previous { problems.append("kill \(kill): \(saves) saves after \(previous)") }
                    previous = saves
                }
                return problems
            }
            #expect(problems == [])
        }
    }

    @Test("a torn newest log is written again from the outbox; the check refuses lost or torn logs")
    func checkCatchesDisagreement() async throws {
        let helper = try builtProduct("record-store-test-helper")
        try await withTemporaryFolder { folder in
            let store = folder.appendingPathComponent("store.sqlite").path
            let content = folder.appendingPathComponent("TransactionLogs")
            let outputs = try await offPool { () throws -> [String] in
                _ = try Self.killMidSave(helper: helper, arguments: ["save-loop", store, content.path])
                func check() throws -> String { try Self.check(helper: helper, store: store, content: content.path) }
                let whole = try check()
                let logs = try FileManager.default.subpathsOfDirectory(atPath: content.path)
                    .filter { $0.hasSuffix(".log") }.sorted().map { content.appendingPathComponent($0) }
                let last = try #require(logs.last)
                let bytes = try Data(contentsOf: last)
                // Opened again, the store leaves a whole log as it is: a new file would look like a change to the
                // engine and to every other device.
                let inode = { try FileManager.default.attributesOfItem(atPath: last.path)[.systemFileNumber] as? Int }
                let before = try inode()
                _ = try check()
                let untouched = try inode() == before ? "untouched" : "written again"
                // The outbox keeps the logs not flushed yet (the newest among them), and opening the store writes them again.
                try bytes.prefix(bytes.count / 2).write(to: last)
                let healed = try check()
                let rewritten = try Data(contentsOf: last) == bytes
                // Once the store no longer holds it, a damaged log is found.
                let database = try DatabaseQueue(path: store)
                try database.write { db in try db.execute(sql: "DELETE FROM rs_outbox") }
                try database.close()
                try bytes.prefix(bytes.count / 2).write(to: last)
                let torn = try check()
                try FileManager.default.removeItem(at: last)
                let missing = try check()
                return [whole, untouched, healed, rewritten ? "rewritten" : "left torn", torn, missing]
            }
            #expect(outputs[0].hasPrefix("ok "))
            #expect(outputs[1] == "untouched")
            #expect(outputs[2].hasPrefix("ok ") && outputs[3] == "rewritten", "the outbox wrote its log again")
            #expect(outputs[4].contains("problem:") && outputs[4].contains("digest"))
            #expect(outputs[5].contains("problem:") && outputs[5].contains("items in the store"))
        }
    }

    /// Runs the helper's check of `store` against its logs in `content` and returns what it printed; a check that has
    /// not ended within two minutes is killed, so a stalled one fails the test instead of holding it.
    private static func check(helper: URL, store: String, content: String) throws -> String {
        let process = try ChildProcess(
            helper, arguments: ["check", store, content], standardInput: .nullDevice, standardOutput: .pipe,
            standardError: .sameAsStandardOutput)
        let watchdog = DispatchWorkItem { _ = process.kill() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
        defer {
            watchdog.cancel()
            process.waitUntilExit()
        }
        return String(decoding: try process.readAllOutput(), as: UTF8.self)
    }

    /// Starts the save loop, waits for its first save, kills it 0–30 ms later; returns the last save it reported.
    private static func killMidSave(helper: URL, arguments: [String]) throws -> Int {
        let process = try ChildProcess(
            helper, arguments: arguments, standardInput: .nullDevice, standardOutput: .pipe, standardError: .pipe)
        guard let output = process.standardOutputDescriptor, let errors = process.standardErrorDescriptor else {
            throw ChildProcessError(.invalidConfiguration, "the save loop was started without its output pipes")
        }
        let lines = SavedLines(descriptor: output)
        let started = lines.waitForFirst(timeoutMilliseconds: 60_000)
        // Not a wait for anything: the pause picks the instant of the kill, anywhere in the saves that follow the
        // first (a commit, an export, a rename), which is what the test varies.
        if started { usleep(UInt32.random(in: 0...30_000)) }
        _ = process.kill()
        process.waitUntilExit()
        lines.drain()
        guard started, let last = lines.last else {
            let diagnostics = String(decoding: readAvailable(errors), as: UTF8.self)
            throw ChildProcessError(.io, "the save loop reported no save within a minute: \(diagnostics)")
        }
        return last
    }
}
