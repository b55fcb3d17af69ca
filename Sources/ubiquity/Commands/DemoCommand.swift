import ArgumentParser
import Foundation

/// `ubiquity demo`: a first run that shows what the framework does, narrated step by step.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show the document life cycle: autosave, undo, incremental package saves, external changes."
    )

    @Option(help: "Directory to work in (default: a new temporary directory, removed at the end).")
    var directory: String?

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
        try await DocumentDemo(root: root, narrator: Narrator()).run()  // the story runs on the main actor
    }
}
