import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `ubiquity demo`: a first run that shows what Ubiquity does — a sync service and two devices in step — narrated
/// step by step.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show two devices kept in step: a shared grocery list, an image, a conflict resolved, tags merged.",
        discussion: """
            Starts the sync service in a temporary directory, signs in two devices ("laptop" and "desktop"), and
            narrates what happens as the Grocery sample runs on both. Then it keeps running, so that you can go on
            with `grocery --device …` in another terminal, until interrupted (or exits with --once).
            """
    )

    @Option(help: "Directory to work in (default: a new temporary directory, removed at the end).")
    var directory: String?
    @Flag(help: "Exit when the scripted part is done.") var once = false
    @Flag(help: "Show the document life cycle instead: autosave, undo, incremental package saves, external changes.")
    var documents = false

    func run() async throws {
        let root: URL
        let removeAtEnd: Bool
        if let directory {
            root = URL(fileURLWithPath: directory, isDirectory: true)
            removeAtEnd = false
        } else {
            root = FileManager.default.temporaryDirectory
                .appendingPathComponent("ubiquity-demo-\(UUID().uuidString.prefix(8))", isDirectory: true)
            removeAtEnd = true
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if removeAtEnd { try? FileManager.default.removeItem(at: root) } }
        if documents {
            try await DocumentDemo(root: root, narrator: Narrator()).run()  // the story runs on the main actor
            return
        }
        try await Self.runSyncDemo(in: root, once: once)
    }

    @MainActor
    private static func runSyncDemo(in root: URL, once: Bool) async throws {
        let narrator = Narrator()
        let demo = SyncDemo(directory: root, narrator: narrator)
        do {
            try await demo.run()
        } catch {
            await demo.close()
            throw error
        }
        demo.printWhereThingsAre(keepRunning: !once)
        if once {
            await demo.close()
            narrator.say("\nAll steps done.")
            return
        }
        await interrupted()
        narrator.say("\nstopping")
        await demo.close()
    }

    /// Returns when the process is asked to stop (SIGINT or SIGTERM).
    private static func interrupted() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
        for await _ in stream { break }
        for source in sources { source.cancel() }
    }
}
