import DocumentKit
import Foundation
import Testing

@Suite("FilePresenter messages from coordinators in this process")
struct FilePresenterTests {
    @Test("a reader asks the presenter to save, then to relinquish, and gives the item back after reading")
    func readerMessages() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }

        try sandbox.coordinator().coordinate(readingItemAt: file) { _ in presenter.record("accessor") }
        #expect(eventually { presenter.log.contains("reacquire") })
        #expect(presenter.log == ["save", "relinquishToReader", "accessor", "reacquire"])

        presenter.clearLog()
        try sandbox.coordinator().coordinate(readingItemAt: file, options: .withoutChanges) { _ in
            presenter.record("accessor")
        }
        #expect(eventually { presenter.log.contains("reacquire") })
        #expect(presenter.log == ["relinquishToReader", "accessor", "reacquire"])
    }

    @Test("a writer asks the presenter to relinquish, then tells it the item changed, then gives it back")
    func writerMessages() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        #expect(FileCoordinator.filePresenters.contains { $0 === presenter })

        try sandbox.coordinator().coordinate(writingItemAt: file) { url in
            presenter.record("accessor")
            try Data("changed".utf8).write(to: url)
        }
        #expect(eventually { presenter.log.contains("reacquire") })
        #expect(presenter.log == ["relinquishToWriter", "accessor", "didChange", "reacquire"])
    }

    @Test("a deletion asks to accommodate it first and sends nothing after but the reacquirer")
    func deletionMessages() throws {
        let sandbox = try CoordinationSandbox()
        let folder = try sandbox.directory("folder")
        let file = try sandbox.file("folder/doc.txt")
        let presenter = RecordingPresenter(file)
        let folderPresenter = RecordingPresenter(folder)
        FileCoordinator.addFilePresenter(presenter)
        FileCoordinator.addFilePresenter(folderPresenter)
        defer {
            FileCoordinator.removeFilePresenter(presenter)
            FileCoordinator.removeFilePresenter(folderPresenter)
        }
        try sandbox.coordinator().coordinate(writingItemAt: file, options: .forDeleting) { url in
            presenter.record("accessor")
            try FileManager.default.removeItem(at: url)
        }
        #expect(eventually { presenter.log.contains("reacquire") && folderPresenter.log.contains("reacquire") })
        #expect(presenter.log == ["accommodateDeletion", "relinquishToWriter", "accessor", "reacquire"])
        #expect(folderPresenter.log == ["accommodateSubitemDeletion:doc.txt", "relinquishToWriter", "reacquire"])
    }

    @Test("a move tells presenters where their item went, and their registration follows")
    func moveMessages() throws {
        let sandbox = try CoordinationSandbox()
        let folder = try sandbox.directory("folder")
        let old = try sandbox.file("folder/old.txt")
        let new = sandbox.url("folder/new.txt")
        let presenter = RecordingPresenter(old)
        let folderPresenter = RecordingPresenter(folder)
        FileCoordinator.addFilePresenter(presenter)
        FileCoordinator.addFilePresenter(folderPresenter)
        defer {
            FileCoordinator.removeFilePresenter(presenter)
            FileCoordinator.removeFilePresenter(folderPresenter)
        }
        let coordinator = sandbox.coordinator()
        try coordinator.coordinate(writingItemAt: old, options: .forMoving, writingItemAt: new, options: .forReplacing)
        { from, to in
            coordinator.item(at: from, willMoveTo: to)
            try FileManager.default.moveItem(at: from, to: to)
            coordinator.item(at: from, didMoveTo: to)
        }
        #expect(eventually { presenter.log.contains("reacquire") && folderPresenter.log.contains("reacquire") })
        #expect(presenter.log == ["relinquishToWriter", "didMove:\(new.path)", "reacquire"])
        #expect(presenter.presentedItemURL?.path == new.path)
        #expect(folderPresenter.log == ["relinquishToWriter", "subitemDidMove:old.txt->new.txt", "reacquire"])

        // The presenter is now asked about its item at the new place, and no longer about the old one.
        presenter.clearLog()
        try sandbox.coordinator().coordinate(writingItemAt: old) { url in try Data("unrelated".utf8).write(to: url) }
        try sandbox.coordinator().coordinate(writingItemAt: new) { url in try Data("moved".utf8).write(to: url) }
        #expect(eventually { presenter.log.contains("reacquire") })
        #expect(presenter.log == ["relinquishToWriter", "didChange", "reacquire"])
    }

    @Test("a coordinator does not message its own presenter")
    func ownPresenterIsNotMessaged() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }

        let own = sandbox.coordinator(presenter)
        try own.coordinate(readingItemAt: file) { _ in }
        try own.coordinate(writingItemAt: file) { url in try Data("mine".utf8).write(to: url) }
        // Another coordinator's write is the marker: the log must begin with its messages.
        try sandbox.coordinator().coordinate(writingItemAt: file) { url in
            presenter.record("other accessor")
            try Data("theirs".utf8).write(to: url)
        }
        #expect(eventually { presenter.log.contains("reacquire") })
        #expect(presenter.log == ["relinquishToWriter", "other accessor", "didChange", "reacquire"])
    }

    @Test("a presenter asked to save can coordinate its own write before the reader takes its lock")
    func saveBeforeRead() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt", "on disk")
        let presenter = RecordingPresenter(file)
        let saving = sandbox.coordinator(presenter, accessTimeout: 5)
        presenter.onSave.withLock {
            $0 = { completion in
                do {
                    try saving.coordinate(writingItemAt: file) { url in
                        try Data("unsaved edits".utf8).write(to: url)
                    }
                    completion(nil)
                } catch {
                    completion(error)
                }
            }
        }
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }

        let text = try sandbox.coordinator(accessTimeout: 5).coordinate(readingItemAt: file) { url in
            try String(contentsOf: url, encoding: .utf8)
        }
        #expect(text == "unsaved edits")
        #expect(eventually { presenter.log.contains("reacquire") })
        #expect(presenter.log == ["save", "relinquishToReader", "reacquire"])
    }

    @Test("a presenter that fails to save fails the read")
    func failedSave() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let presenter = RecordingPresenter(file)
        presenter.onSave.withLock { $0 = { completion in completion(CocoaError(.fileWriteNoPermission)) } }
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let error = #expect(throws: FileCoordinationError.self) {
            try sandbox.coordinator().coordinate(readingItemAt: file) { _ in Issue.record("read after failed save") }
        }
        #expect(error?.code == .presenterFailed)
        #expect(error?.message.contains("RecordingPresenter") == true)
    }

    @Test("a presenter that never answers fails the coordination with .presenterTimedOut")
    func presenterTimeout() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let presenter = RecordingPresenter(file, ignoresRelinquish: true)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let error = #expect(throws: FileCoordinationError.self) {
            try sandbox.coordinator(presenterTimeout: 0.3).coordinate(writingItemAt: file) { _ in
                Issue.record("wrote without the presenter's consent")
            }
        }
        #expect(error?.code == .presenterTimedOut)
        #expect(error?.message.contains("RecordingPresenter") == true)
        #expect(error?.message.contains(file.path) == true)
        // Nothing stays locked: once the presenter is gone, writing works.
        FileCoordinator.removeFilePresenter(presenter)
        try sandbox.coordinator(accessTimeout: 2).coordinate(writingItemAt: file) { _ in }
    }

    @Test("presenters of a folder hear of subitems appearing and changing")
    func folderPresenter() throws {
        let sandbox = try CoordinationSandbox()
        let folder = try sandbox.directory("folder")
        let presenter = RecordingPresenter(folder)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let item = sandbox.url("folder/item.txt")
        try sandbox.coordinator().coordinate(writingItemAt: item) { url in try Data("one".utf8).write(to: url) }
        try sandbox.coordinator().coordinate(writingItemAt: item) { url in try Data("two".utf8).write(to: url) }
        #expect(eventually { presenter.count("reacquire") == 2 })
        #expect(
            presenter.log == [
                "relinquishToWriter", "subitemDidAppear:item.txt", "reacquire",
                "relinquishToWriter", "subitemDidChange:item.txt", "reacquire",
            ])
    }

    @Test("a presenter that is deallocated drops out of the registry")
    func weakRegistration() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        var presenter: RecordingPresenter? = RecordingPresenter(file)
        weak let weakPresenter = presenter
        FileCoordinator.addFilePresenter(presenter!)
        #expect(FileCoordinator.filePresenters.contains { $0 === presenter })
        presenter = nil
        #expect(eventually { weakPresenter == nil })
        #expect(!FileCoordinator.filePresenters.contains { $0 === weakPresenter })
        try sandbox.coordinator().coordinate(writingItemAt: file) { _ in }
    }
}
