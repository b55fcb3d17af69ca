import DocumentKit
import Foundation
import Testing

/// A flat-file document holding text, recording what the life cycle told it.
@MainActor
final class NoteDocument: Document {
    var text = ""
    var loads: [String] = []
    var handledErrors: [any Error] = []
    var editingDisabledCalls = 0
    var editingEnabledCalls = 0
    /// When set, the background write waits for it: lets a test edit while a save is in flight.
    nonisolated(unsafe) var writeGate: DispatchSemaphore?
    nonisolated(unsafe) var writeStarted: DispatchSemaphore?

    override func contents(forType typeName: String) throws -> Any {
        Data(text.utf8)
    }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let data = contents as? Data else { throw TestFailure("expected Data, got \(type(of: contents))") }
        text = String(decoding: data, as: UTF8.self)
        loads.append(text)
    }

    override func handleError(_ error: any Error, userInteractionPermitted: Bool) {
        handledErrors.append(error)
        super.handleError(error, userInteractionPermitted: userInteractionPermitted)
    }

    override func disableEditing() { editingDisabledCalls += 1 }
    override func enableEditing() { editingEnabledCalls += 1 }

    nonisolated override func writeContents(
        _ contents: Any,
        to url: URL,
        for saveOperation: SaveOperation,
        originalContentsURL: URL?
    ) throws {
        writeStarted?.signal()
        writeGate?.wait()
        try super.writeContents(contents, to: url, for: saveOperation, originalContentsURL: originalContentsURL)
    }

    /// Edits the text and reports the change, as an app's editing code does.
    func edit(_ newText: String) {
        text = newText
        updateChangeCount(.done)
    }
}

/// A package document: a name member and an optional image member.
@MainActor
final class ItemDocument: Document {
    var name = ""
    var image: Data?
    private var wrapper: FileWrapper?

    override func contents(forType typeName: String) throws -> Any {
        let root = wrapper ?? FileWrapper(directoryWithFileWrappers: [:])
        if let old = root.fileWrappers?["name.txt"] { root.removeFileWrapper(old) }
        root.addRegularFile(withContents: Data(name.utf8), preferredFilename: "name.txt")
        if let image, root.fileWrappers?["image.png"]?.regularFileContents != image {
            if let old = root.fileWrappers?["image.png"] { root.removeFileWrapper(old) }
            root.addRegularFile(withContents: image, preferredFilename: "image.png")
        }
        wrapper = root
        return root
    }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let root = contents as? FileWrapper, root.isDirectory else { throw TestFailure("expected a package") }
        wrapper = root
        name = String(decoding: root.fileWrappers?["name.txt"]?.regularFileContents ?? Data(), as: UTF8.self)
        image = root.fileWrappers?["image.png"]?.regularFileContents
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh directory under the system's temporary directory, removed when the test is done with it.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("documentkit-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Waits, on the main actor, until `condition` holds; fails the test after `seconds`: a hang guard, not a timing
/// assertion, so generous enough for a two-core machine running the whole suite at once.
@MainActor
func waitUntil(
    _ what: String,
    seconds: Double = 120,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline {
            Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
}

/// Records every state a document announces through `Document.stateChangedNotification`.
@MainActor
final class StateRecorder {
    private(set) var states: [Document.State] = []
    private var observer: (any NSObjectProtocol)?

    init(_ document: Document) {
        observer = NotificationCenter.default.addObserver(
            forName: Document.stateChangedNotification, object: document, queue: nil
        ) { [weak self] note in
            let document = note.object as? Document
            MainActor.assumeIsolated { () -> Void in
                guard let document else { return }
                self?.states.append(document.documentState)
            }
        }
    }

    isolated deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }
}
