import DocumentKit
import Foundation
import Testing

@Suite("FilePresenter notices of other processes' changes")
struct FilePresenterCrossProcessTests {
    @Test("another process's safe save, move and deletion reach the presenter")
    func changeMoveDelete() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let moved = sandbox.url("renamed.txt")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }

        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, file.path, "from helper"]) == 0)
        #expect(eventually { presenter.count("didChange") == 1 })

        #expect(try HelperProcess.run(["coord-move", sandbox.lockDirectory, file.path, moved.path]) == 0)
        #expect(eventually { presenter.log.contains("didMove:\(moved.path)") })
        #expect(presenter.presentedItemURL?.path == moved.path)

        // The presenter now follows the item at its new place.
        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, moved.path, "again"]) == 0)
        #expect(eventually { presenter.count("didChange") == 2 })

        #expect(try HelperProcess.run(["coord-delete", sandbox.lockDirectory, moved.path]) == 0)
        #expect(eventually { presenter.log.contains("accommodateDeletion") })
        #expect(presenter.log == ["didChange", "didMove:\(moved.path)", "didChange", "accommodateDeletion"])
    }

    @Test("a coordination that reads presenters while a move's notice waits does not send the record back")
    func moveNoticeWaitingOnTheQueue() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let moved = sandbox.url("renamed.txt")
        let presenter = RecordingPresenter(file)
        let marker = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        FileCoordinator.addFilePresenter(marker)
        defer {
            FileCoordinator.removeFilePresenter(presenter)
            FileCoordinator.removeFilePresenter(marker)
        }
        // `presenter` is told nothing until its queue runs again, so its URL still names the old place.
        presenter.presentedItemOperationQueue.isSuspended = true
        #expect(rename(file.path, moved.path) == 0)
        // Both records were reconciled in the same batch: once `marker` hears of the move, `presenter`'s is queued.
        #expect(eventually { marker.log.contains("didMove:\(moved.path)") })
        #expect(presenter.presentedItemURL?.path == file.path)

        // Any coordination in the process reads every presenter's URL; the stale one must not move the record back.
        let other = try sandbox.file("other.txt")
        try sandbox.coordinator().coordinate(readingItemAt: other, options: []) { _ in }

        // Another process's safe save at the new place is a change of the presenter's item.
        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, moved.path, "again"]) == 0)
        #expect(eventually { marker.count("didChange") == 1 })
        presenter.presentedItemOperationQueue.isSuspended = false
        #expect(eventually { presenter.count("didChange") == 1 })
        #expect(presenter.log == ["didMove:\(moved.path)", "didChange"])
        #expect(presenter.presentedItemURL?.path == moved.path)
    }

    @Test("a process does not hear its own coordinated writes again through the file watcher")
    func ownWritesAreNotHeardTwice() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("doc.txt")
        let presenter = RecordingPresenter(file)
        let document = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        FileCoordinator.addFilePresenter(document)
        defer {
            FileCoordinator.removeFilePresenter(presenter)
            FileCoordinator.removeFilePresenter(document)
        }
        // `document` saves its item (a safe save, as a Document does) with its own coordinator.
        for round in 0..<3 {
            try sandbox.coordinator(document).coordinate(writingItemAt: file, options: .forReplacing) { url in
                let temporary = sandbox.url(".save-\(round).tmp")
                try Data("save \(round)".utf8).write(to: temporary)
                _ = rename(temporary.path, url.path)
            }
        }
        // A change by another process is the marker: events are handled in order, so anything the saves above
        // produced has been delivered by the time this one is.
        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, file.path, "helper"]) == 0)
        #expect(eventually { document.count("didChange") == 1 && presenter.count("didChange") == 4 })
        #expect(document.log == ["didChange"])
        #expect(presenter.count("didChange") == 4)
        #expect(presenter.count("relinquishToWriter") == 3)
    }

    @Test("a folder presenter hears of items another process creates, changes and deletes inside")
    func folderNotices() throws {
        let sandbox = try CoordinationSandbox()
        let folder = try sandbox.directory("folder")
        let presenter = RecordingPresenter(folder)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let item = sandbox.url("folder/item.txt")
        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, item.path, "one"]) == 0)
        #expect(eventually { presenter.log.contains("subitemDidAppear:item.txt") })
        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, item.path, "two"]) == 0)
        #expect(eventually { presenter.log.contains("subitemDidChange:item.txt") })
        #expect(try HelperProcess.run(["coord-delete", sandbox.lockDirectory, item.path]) == 0)
        #expect(eventually { presenter.log.contains("accommodateSubitemDeletion:item.txt") })
        #expect(
            presenter.log == [
                "subitemDidAppear:item.txt", "subitemDidChange:item.txt", "accommodateSubitemDeletion:item.txt",
            ])
    }

    @Test("a package presenter hears of another process changing a member as a change of the package")
    func packageNotices() throws {
        DocumentTypeRegistry.default.register(
            DocumentType(
                identifier: "com.example.coordination-test-package",
                conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: ["coordpkg"]))
        let sandbox = try CoordinationSandbox()
        let package = try sandbox.directory("Doc.coordpkg")
        let member = try sandbox.file("Doc.coordpkg/Data/contents.json")
        let presenter = RecordingPresenter(package)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        #expect(try HelperProcess.run(["coord-safe-save", sandbox.lockDirectory, member.path, "{}"]) == 0)
        #expect(eventually { presenter.count("didChange") >= 1 })
    }

    @Test("a package moved aside by a safe save without RENAME_EXCHANGE is a change, not a move to the temporary")
    func packageMovedAsideIsNotAMove() throws {
        DocumentTypeRegistry.default.register(
            DocumentType(
                identifier: "com.example.coordination-test-aside-package",
                conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: ["asidepkg"]))
        let sandbox = try CoordinationSandbox()
        let package = try sandbox.directory("Doc.asidepkg")
        _ = try sandbox.file("Doc.asidepkg/Data/contents.json", "old")
        let marker = try sandbox.file("marker.txt")
        let presenter = RecordingPresenter(package)
        let markerPresenter = RecordingPresenter(marker)
        FileCoordinator.addFilePresenter(presenter)
        FileCoordinator.addFilePresenter(markerPresenter)
        defer {
            FileCoordinator.removeFilePresenter(presenter)
            FileCoordinator.removeFilePresenter(markerPresenter)
        }
        // Events are handled in order: once a change to the marker has been delivered, every event before it has
        // been handled, and what it meant for `presenter` is on its queue.
        var markers = 0
        func settle() throws {
            markers += 1
            try Data("marker \(markers)".utf8).write(to: marker)
            #expect(eventually { markerPresenter.count("didChange") == markers })
            presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
        }

        // What SafeFileWriter does on a file system without RENAME_EXCHANGE, uncoordinated as another process sees
        // it: write the new package under a temporary name, move the old one aside, move the new one in, delete the
        // old one. The presenter's item is briefly at the aside name, and nothing is at its path.
        let new = try sandbox.directory(".Doc.asidepkg.5e1f.tmp")
        _ = try sandbox.file(".Doc.asidepkg.5e1f.tmp/Data/contents.json", "new")
        let aside = sandbox.url(".Doc.asidepkg.c0ffee.tmp")
        #expect(rename(package.path, aside.path) == 0)
        try settle()
        #expect(presenter.log.isEmpty)
        #expect(presenter.presentedItemURL?.path == package.path)

        #expect(rename(new.path, package.path) == 0)
        try settle()
        try FileManager.default.removeItem(at: aside)
        try settle()
        #expect(presenter.count("didChange") >= 1)
        #expect(!presenter.log.contains { $0.hasPrefix("didMove") || $0 == "accommodateDeletion" })
        #expect(presenter.presentedItemURL?.path == package.path)

        // The presenter follows the new package: a change inside it is heard.
        let changes = presenter.count("didChange")
        try Data("newer".utf8).write(to: package.appendingPathComponent("Data/contents.json"))
        #expect(eventually { presenter.count("didChange") > changes })
    }
}
