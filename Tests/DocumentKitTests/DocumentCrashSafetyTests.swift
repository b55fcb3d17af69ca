import ChildProcess
import Foundation
import Testing
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Kills a process that saves a document in a loop (`document-test-helper doc-save-loop`) with SIGKILL at random
/// instants, hundreds of times, and checks after every kill that the document on disk is exactly one whole generation:
/// the last one the process reported saved, or the one it was saving. A writer that replaced the item non-atomically
/// (truncating, rewriting members in place, deleting before moving) leaves a torn, mixed or missing item that these
/// checks reject; ``inPlaceWriterIsCaught()`` shows the harness catching such a writer.
///
/// SIGKILL loses nothing already in the page cache, so these tests prove atomic replacement, not durability against
/// power loss (the fsyncs).
@Suite("Document crash safety", .ownThread())
struct DocumentCrashSafetyTests {
    @Test("a flat document is whole after SIGKILL at any instant of a save loop")
    func flatDocumentSurvivesKills() async throws {
        let report = try await KillCycles(kind: .flat, mode: "flat").run(kills: 200)
        #expect(report.problems == [])
        #expect(report.kills == 200)
    }

    @Test("a package is whole, every member from one generation, after SIGKILL at any instant of a save loop")
    func packageSurvivesKills() async throws {
        let report = try await KillCycles(kind: .package, mode: "package").run(kills: 200)
        #expect(report.problems == [])
        #expect(report.kills == 200)
    }

    @Test("the harness catches a writer that rewrites the file in place")
    func inPlaceWriterIsCaught() async throws {
        let report = try await KillCycles(kind: .flat, mode: "flat-in-place").run(kills: 100, stopAtFirstProblem: true)
        #expect(!report.problems.isEmpty)
    }

    @Test("the checker accepts whole generations and rejects torn, mixed and incomplete items")
    func checkerRejectsDamagedItems() throws {
        let directory = try makeCrashScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let flat = directory.appendingPathComponent("doc.flat")
        let whole = ExpectedGeneration.member("flat", generation: 7)
        try whole.write(to: flat)
        #expect(try ItemChecker.generation(of: flat, kind: .flat).get() == 7)
        try whole.prefix(whole.count - 1).write(to: flat)
        #expect(throws: CrashCheckFailure.self) { try ItemChecker.generation(of: flat, kind: .flat).get() }
        var mixed = ExpectedGeneration.member("flat", generation: 8)
        mixed.replaceSubrange(0..<12, with: whole.prefix(12))
        try mixed.write(to: flat)
        #expect(throws: CrashCheckFailure.self) { try ItemChecker.generation(of: flat, kind: .flat).get() }

        let package = directory.appendingPathComponent("doc.package")
        try writePackage(at: package, generation: 9)
        #expect(try ItemChecker.generation(of: package, kind: .package).get() == 9)
        let current = ExpectedGeneration.lastChange("b.bin", upTo: 9)
        for damage in PackageDamage.allCases {
            try? FileManager.default.removeItem(at: package)
            try writePackage(at: package, generation: 9)
            switch damage {
            case .missingMember: try FileManager.default.removeItem(at: package.appendingPathComponent("c.bin"))
            case .extraMember: try Data().write(to: package.appendingPathComponent(".c.bin.1.tmp"))
            case .tornMember: try Data("b.bin gen".utf8).write(to: package.appendingPathComponent("b.bin"))
            case .memberFromOtherGeneration:
                let other = ExpectedGeneration.member("b.bin", generation: current == 9 ? 8 : 9)
                try other.write(to: package.appendingPathComponent("b.bin"))
            }
            #expect(throws: CrashCheckFailure.self, "\(damage)") {
                try ItemChecker.generation(of: package, kind: .package).get()
            }
        }
    }

    private enum PackageDamage: CaseIterable { case missingMember, extraMember, tornMember, memberFromOtherGeneration }

    private func writePackage(at url: URL, generation: Int) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        for name in ExpectedGeneration.packageMembers {
            let contents = ExpectedGeneration.member(
                name, generation: ExpectedGeneration.lastChange(name, upTo: generation))
            try contents.write(to: url.appendingPathComponent(name))
        }
    }
}

/// What the crash tests found.
struct KillReport: Sendable {
    var kills = 0
    var leftoverTemporaries = 0
    var problems: [String] = []
}

/// Runs the save loop in a child process and kills it, again and again, on the same document.
struct KillCycles: Sendable {
    var kind: ItemKind
    var mode: String

    func run(kills: Int, stopAtFirstProblem: Bool = false) async throws -> KillReport {
        let helper = try helperExecutable()
        let directory = try makeCrashScratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let document = directory.appendingPathComponent(kind == .flat ? "doc.flat" : "doc.package")
        // The cycles block on pipes and child processes; run them on a thread of their own, not on the test's pool.
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    returning: cycles(
                        kills: kills, helper: helper, document: document, stopAtFirstProblem: stopAtFirstProblem))
            }
            thread.start()
        }
    }

    private func cycles(kills: Int, helper: URL, document: URL, stopAtFirstProblem: Bool) -> KillReport {
        var report = KillReport()
        var previous = 0
        while report.kills < kills && report.problems.count < (stopAtFirstProblem ? 1 : 5) {
            do {
                let reported = try killMidSave(helper: helper, document: document)
                report.kills += 1
                let onDisk = try ItemChecker.generation(of: document, kind: kind).get()
                if onDisk != reported && onDisk != reported + 1 {
                    report.problems.append("kill \(report.kills): generation \(onDisk) on disk, \(reported) reported")
                }
                if onDisk < previous {
                    report.problems.append("kill \(report.kills): generation went back from \(previous) to \(onDisk)")
                }
                previous = onDisk
                report.leftoverTemporaries += try removeLeftovers(next: document)
            } catch {
                report.problems.append("kill \(report.kills): \(error)")
            }
        }
        return report
    }

    /// Starts the save loop, waits for its first save, kills it 0–40 ms later and returns the last generation it
    /// reported saved.
    private func killMidSave(helper: URL, document: URL) throws -> Int {
        // The pipes' read ends are closed when `process` is released, at the end of this call.
        let process = try ChildProcess(
            helper, arguments: ["doc-save-loop", document.path, mode], standardInput: .nullDevice,
            standardOutput: .pipe, standardError: .pipe)
        guard let output = process.standardOutputDescriptor, let errors = process.standardErrorDescriptor else {
            throw CrashCheckFailure("the save loop was started without its output pipes")
        }
        let lines = SavedLines(descriptor: output)
        let started = lines.waitForFirst(timeoutMilliseconds: 30_000)
        if started { usleep(UInt32.random(in: 0...40_000)) }
        process.kill()
        process.waitUntilExit()
        lines.drain()
        let diagnostics = String(decoding: readAvailable(errors), as: UTF8.self)
        guard process.endedBySignal, process.terminationStatus == SIGKILL else {
            throw CrashCheckFailure(
                "the save loop ended by itself (status \(process.terminationStatus)): \(diagnostics)")
        }
        guard started, let last = lines.last else {
            throw CrashCheckFailure("the save loop reported no save within 30 s: \(diagnostics)")
        }
        return last
    }

    /// Removes what killed saves left beside the document, after checking that all of it is hidden temporary items
    /// (`.<name>.<random>.tmp`) and none sits at the document's own name; returns how many there were.
    private func removeLeftovers(next document: URL) throws -> Int {
        let name = document.lastPathComponent
        var count = 0
        for entry in try FileManager.default.contentsOfDirectory(atPath: document.deletingLastPathComponent().path)
        where entry != name {
            guard entry.hasPrefix(".\(name).") && entry.hasSuffix(".tmp") && entry.count > name.count + 6 else {
                throw CrashCheckFailure("unexpected item \(entry.debugDescription) beside the document")
            }
            try FileManager.default.removeItem(at: document.deletingLastPathComponent().appendingPathComponent(entry))
            count += 1
        }
        return count
    }
}

enum ItemKind: Sendable { case flat, package }

struct CrashCheckFailure: Error, CustomStringConvertible, Equatable {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Checks that an item on disk is exactly one generation of the save loop.
enum ItemChecker {
    static func generation(of url: URL, kind: ItemKind) -> Result<Int, CrashCheckFailure> {
        Result { () throws(CrashCheckFailure) -> Int in
            switch kind {
            case .flat: return try flatGeneration(of: url)
            case .package: return try packageGeneration(of: url)
            }
        }
    }

    private static func flatGeneration(of url: URL) throws(CrashCheckFailure) -> Int {
        let data = try contents(of: url)
        return try wholeMember(data, tag: "flat", at: url)
    }

    private static func packageGeneration(of url: URL) throws(CrashCheckFailure) -> Int {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
        } catch {
            throw CrashCheckFailure("\(url.path) is not a readable directory: \(error)")
        }
        guard names == ExpectedGeneration.packageMembers else {
            throw CrashCheckFailure("\(url.lastPathComponent) holds \(names), not \(ExpectedGeneration.packageMembers)")
        }
        let first = ExpectedGeneration.packageMembers[0]
        let generation = try wholeMember(try contents(of: url.appendingPathComponent(first)), tag: first, at: url)
        for name in ExpectedGeneration.packageMembers.dropFirst() {
            let member = url.appendingPathComponent(name)
            let expected = ExpectedGeneration.lastChange(name, upTo: generation)
            let found = try wholeMember(try contents(of: member), tag: name, at: member)
            guard found == expected else {
                throw CrashCheckFailure(
                    "generation \(generation) of the package has \(name) of \(found), not \(expected)")
            }
        }
        return generation
    }

    private static func contents(of url: URL) throws(CrashCheckFailure) -> Data {
        do { return try Data(contentsOf: url) } catch { throw CrashCheckFailure("cannot read \(url.path): \(error)") }
    }

    /// The generation of `data` if it is byte for byte the member `tag` of the generation its header names.
    private static func wholeMember(_ data: Data, tag: String, at url: URL) throws(CrashCheckFailure) -> Int {
        guard let generation = ExpectedGeneration.stamp(of: data, tag: tag), generation > 0 else {
            throw CrashCheckFailure("\(url.path) (\(data.count) bytes) has no \(tag) header")
        }
        guard data == ExpectedGeneration.member(tag, generation: generation) else {
            throw CrashCheckFailure("\(url.path) is a torn generation \(generation) (\(data.count) bytes)")
        }
        return generation
    }
}

/// The test's own copy of the save loop's contents specification (`GenerationContents` in
/// Tests/DocumentTestHelper/DocumentCommands.swift): a member is `"<tag> gen <N>\n"` followed by 1 KiB to 300 KiB of
/// SplitMix64 bytes seeded by tag and generation; `a.txt` changes every generation, `b.bin` and `c.bin` in some.
enum ExpectedGeneration {
    static let packageMembers = ["a.txt", "b.bin", "c.bin"]

    static func member(_ tag: String, generation: Int) -> Data {
        var state = seed(tag, generation)
        let length = 1024 + Int(next(&state) % UInt64(299 * 1024))
        var data = Data("\(tag) gen \(generation)\n".utf8)
        data.reserveCapacity(data.count + length)
        var remaining = length
        while remaining > 0 {
            var word = next(&state)
            for _ in 0..<min(8, remaining) {
                data.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
            remaining -= min(8, remaining)
        }
        return data
    }

    /// The last generation up to `generation` in which member `tag` got new contents.
    static func lastChange(_ tag: String, upTo generation: Int) -> Int {
        var candidate = generation
        while candidate > 1 && !changes(tag, generation: candidate) { candidate -= 1 }
        return candidate
    }

    static func changes(_ tag: String, generation: Int) -> Bool {
        if generation <= 1 || tag == packageMembers[0] { return true }
        var state = seed(tag, -generation)
        return next(&state) % 3 == 0
    }

    static func stamp(of data: Data, tag: String) -> Int? {
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let header = String(decoding: data[data.startIndex..<newline], as: UTF8.self)
        let prefix = "\(tag) gen "
        guard header.hasPrefix(prefix) else { return nil }
        return Int(header.dropFirst(prefix.count))
    }

    private static func seed(_ tag: String, _ generation: Int) -> UInt64 {
        var state = UInt64(bitPattern: Int64(generation)) &* 0x9E37_79B9_7F4A_7C15
        for byte in tag.utf8 { state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return state
    }

    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A fresh directory under the system temporary directory; the caller removes it.
func makeCrashScratchDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("DocumentCrashSafetyTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    return url
}
