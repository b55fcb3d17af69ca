import Foundation
import Testing
import UbiquityKit
import UbiquityTestSupport

/// The README's code sample, compiled and run: the document class as written, the rest as written but for the
/// lines ``ReadmeSampleTests/adapted`` lists (another device's profile and an end to the loop).
enum ReadmeSample {
    final class NoteDocument: Document {
        var text = ""

        override func contents(forType typeName: String) throws -> Any {
            Data(text.utf8)
        }

        override func load(fromContents contents: Any, ofType typeName: String?) throws {
            text = String(decoding: contents as? Data ?? Data(), as: UTF8.self)
        }
    }

    /// The record of container folders set up on the device of `profile`, beside its root.
    static func register(of profile: DeviceProfile) -> ContainerFolderRegister {
        ContainerFolderRegister(folder: profile.rootURL.deletingLastPathComponent().appendingPathComponent("register"))
    }

    /// The sample on the device of `profile`; returns the names the query's updates told of once `expected` is
    /// among them, and `madeElsewhere` is called once the query runs.
    @MainActor
    static func run(
        profile: DeviceProfile, expecting expected: String, madeElsewhere: () async throws -> Void
    ) async throws -> (note: URL, told: [String]) {
        // Once, at launch: the app's container, and the device signed in with `ubiquity login`.
        var configuration = UbiquityConfiguration(
            containers: [try ContainerID("TEAM.com.example.notes")], profile: profile)
        configuration.containerFolders = register(of: profile)
        let ubiquity = Ubiquity(configuration: configuration)
        defer { Task { await ubiquity.shutdown() } }

        let documents = try await ubiquity.containerURL(forIdentifier: nil)!.appendingPathComponent("Documents")
        let note = NoteDocument(fileURL: documents.appendingPathComponent("Shopping.txt"))
        note.text = "milk, eggs"
        await note.save(to: note.fileURL, for: .forCreating)  // goes up to the service, and on to every device

        let query = MetadataQuery(ubiquity: ubiquity)
        query.predicate = #Predicate<MetadataItem> { $0.contentType == "public.plain-text" }
        let updates = query.updates()
        query.start()
        try await madeElsewhere()
        var told: [String] = []
        for await event in updates {
            if case .didUpdate(let added, _, _) = event { told += added.map(\.fileName) }
            if told.contains(expected) { break }
        }
        query.stop()
        _ = await note.close()
        return (note.fileURL, told)
    }
}

@Suite("README sample", .timeLimit(.minutes(3)))
struct ReadmeSampleTests {
    /// The README's lines that the run above changes: the profile of a test device instead of the default one, the
    /// loop that ends, and where the query starts (its updates are listened to first, so none is missed).
    static let adapted = [
        "let ubiquity = Ubiquity.configure(",
        "UbiquityConfiguration(containers: [try ContainerID(\"TEAM.com.example.notes\")], profile: try DeviceProfile.load()))",
        "query.start()",
        "for await event in query.updates() {",
        "if case .didUpdate(let added, _, _) = event { print(\"new on some device:\", added.map(\\.fileName)) }",
        "}",
    ]

    @Test("Every line of the README's code sample is the one compiled here, or one of the few adapted")
    func sampleIsTheCompiledOne() throws {
        let here = URL(fileURLWithPath: #filePath)
        let readme = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let block = try #require(text.components(separatedBy: "```swift\n").dropFirst().first)
        let sample = block.components(separatedBy: "```").first ?? ""
        let compiled = Set(
            try String(contentsOf: here, encoding: .utf8).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) })
        let lines = sample.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("import ") }
        #expect(lines.count > 20)
        for line in lines where !Self.adapted.contains(line) {
            let found = compiled.contains(line)
            #expect(found, "README line not in the compiled sample: \(line)")
        }
    }

    @Test("The README's sample saves a note that reaches another device, and its query hears of that device's note")
    @MainActor
    func sampleRuns() async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-readme-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        func profile(_ device: String) async throws -> DeviceProfile {
            let client = try await service.signIn(account: "ada", device: device)
            return DeviceProfile(
                server: service.baseURL, account: "ada", token: try #require(client.token),
                device: SavingDevice(id: DeviceID(), name: device), root: home.appendingPathComponent(device).path)
        }
        let laptop = try await profile("laptop")
        let desktopProfile = try await profile("desktop")
        let desktop = Ubiquity(
            configuration: UbiquityConfiguration(
                containers: [try ContainerID("TEAM.com.example.notes")], profile: desktopProfile,
                engine: .embedded, containerFolders: ReadmeSample.register(of: desktopProfile)))
        let desktopDocuments = try #require(try await desktop.containerURL(forIdentifier: nil))
            .appendingPathComponent("Documents")

        let (note, told) = try await ReadmeSample.run(profile: laptop, expecting: "Groceries.txt") {
            try Data("bread".utf8).write(to: desktopDocuments.appendingPathComponent("Groceries.txt"))
        }
        #expect(told.contains("Groceries.txt"))
        #expect(note.lastPathComponent == "Shopping.txt")
        let arrived = desktopDocuments.appendingPathComponent("Shopping.txt")
        #expect(await eventually { (try? String(contentsOf: arrived, encoding: .utf8)) == "milk, eggs" })
        await desktop.shutdown()
        await service.remove()
    }
}
