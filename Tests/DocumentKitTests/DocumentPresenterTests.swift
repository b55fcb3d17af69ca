import DocumentKit
import Foundation
import Testing

/// The document as a file presenter: what it does when other coordinators (in this process or in another one) read,
/// write, move or delete its file, and what it does when sync tells it about versions.
///
/// Coordinations run off the main actor: the document answers coordinators on the main actor, so a coordination that
/// blocked the main thread would wait for itself. Documents use the default lock directory, and so do the helper
/// processes, so that their locks meet.
@Suite("Document as a file presenter")
@MainActor
struct DocumentPresenterTests {
    // MARK: Other writers

    @Test("a document without unsaved changes reverts to what another coordinated writer wrote")
    func cleanDocumentReverts() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }

        try await coordinatedReplace(document.fileURL, with: "two")
        await waitUntil("the document reverts to the new contents") { document.text == "two" }
        await presenterSettled(document)
        #expect(document.loads == ["one", "two"])
        #expect(!document.hasUnsavedChanges)
        #expect(document.documentState == .normal)

        try await coordinatedReplace(document.fileURL, with: "three")
        await waitUntil("the document reverts again") { document.text == "three" }
        await presenterSettled(document)
        #expect(document.loads == ["one", "two", "three"], "one load per write")
        #expect(document.handledErrors.isEmpty)
        #expect(await document.close())
    }

    @Test("a document with unsaved changes keeps them, and its next save writes them over the other writer's")
    func dirtyDocumentKeepsItsChanges() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        document.edit("mine")

        try await coordinatedReplace(document.fileURL, with: "theirs")
        await presenterSettled(document)
        #expect(document.text == "mine")
        #expect(document.hasUnsavedChanges)
        #expect(document.loads == ["one"])
        #expect(try contents(of: document.fileURL) == "theirs")

        #expect(await document.autosave())
        #expect(try contents(of: document.fileURL) == "mine")
        #expect(!document.hasUnsavedChanges)
        await presenterSettled(document)
        #expect(document.loads == ["one"], "its own save does not reload it")
        #expect(await document.close())
    }

    @Test("another process's safe save reverts the document; its own saves never do")
    func otherProcessRevertsOwnSavesDoNot() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let path = document.fileURL.path

        #expect(try await helper(["coord-safe-save", lockDirectory, path, "from helper"]) == 0)
        await waitUntil("the document reverts to the helper's save") { document.text == "from helper" }
        #expect(document.loads == ["one", "from helper"])

        for round in 1...5 {
            document.edit("own save \(round)")
            #expect(await document.save(to: document.fileURL, for: .forOverwriting))
        }
        document.autosaveDelay = .milliseconds(10)
        document.edit("autosaved")
        await waitUntil("the edit is autosaved") { !document.hasUnsavedChanges }
        // Another process's change is the sentinel: file events are handled in order, so whatever the saves above
        // produced has been handled by the time the document has loaded this.
        #expect(try await helper(["coord-safe-save", lockDirectory, path, "sentinel"]) == 0)
        await waitUntil("the document reverts to the sentinel") { document.text == "sentinel" }
        await presenterSettled(document)
        #expect(document.loads == ["one", "from helper", "sentinel"])
        #expect(document.handledErrors.isEmpty)
        #expect(await document.close())
    }

    @Test("another process's write right after the document's save is not taken for that save")
    func writerRightAfterOwnSave() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        document.writeGate = gate
        document.writeStarted = started

        document.edit("mine")
        let saving = Task { await document.save(to: document.fileURL, for: .forOverwriting) }
        #expect(await wait(for: started), "the save starts writing")
        // The other process waits for the document's coordinated write. It gets in the moment that write ends, which
        // may be before the document has done its bookkeeping on the main actor; hold the main actor until the other
        // process is done to make that happen every time.
        let other = try HelperProcess(["coord-safe-save", lockDirectory, document.fileURL.path, "right after"])
        other.release()
        gate.signal()
        #expect(other.wait() == 0)
        #expect(await saving.value)
        document.writeGate = nil  // only now: the write reads it after signalling writeStarted
        document.writeStarted = nil

        await waitUntil("the document reverts to the other process's save") { document.text == "right after" }
        #expect(document.loads == ["one", "right after"])
        #expect(await document.close())
    }

    // MARK: Readers

    @Test("a coordinated reader makes the document save first; one reading without changes does not")
    func readerSeesUnsavedEdit() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        document.edit("unsaved edit")
        let url = document.fileURL

        let withoutChanges = try await offMain {
            try FileCoordinator().coordinate(readingItemAt: url, options: .withoutChanges) { try contents(of: $0) }
        }
        #expect(withoutChanges == "one")
        #expect(document.hasUnsavedChanges)

        let read = try await offMain { try FileCoordinator().coordinate(readingItemAt: url) { try contents(of: $0) } }
        #expect(read == "unsaved edit")
        #expect(!document.hasUnsavedChanges)
        #expect(document.text == "unsaved edit")
        await presenterSettled(document)
        #expect(document.loads == ["one"], "the save for the reader does not reload the document")
        #expect(await document.close())
    }

    @Test("a package document reverts when another writer changes a member, in this process or another")
    func packageMemberChanged() async throws {
        let sandbox = try CoordinationSandbox()
        DocumentTypeRegistry.default.register(
            DocumentType(
                identifier: "com.example.item", conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: ["item"]))
        let url = sandbox.url("Groceries.item")
        let document = ItemDocument(fileURL: url)
        defer { FileCoordinator.removeFilePresenter(document) }
        document.autosaveDelay = .seconds(3600)
        document.name = "Milk"
        #expect(await document.save(to: url, for: .forCreating))
        let member = url.appendingPathComponent("name.txt")

        // In this process, rewriting the member in place (the package folder itself does not change).
        try await offMain {
            try FileCoordinator().coordinate(writingItemAt: member) { try Data("Oat milk".utf8).write(to: $0) }
        }
        await waitUntil("the document reverts to the member written in place") { document.name == "Oat milk" }

        #expect(try await helper(["coord-safe-save", lockDirectory, member.path, "Soy milk"]) == 0)
        await waitUntil("the document reverts to the member another process saved") { document.name == "Soy milk" }
        #expect(!document.hasUnsavedChanges)
        #expect(await document.close())
    }

    // MARK: Moves

    @Test("a coordinated move in this process: the document follows, and saves at the new place")
    func inProcessMove() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let old = document.fileURL
        let new = sandbox.url("Renamed.txt")

        try await offMain {
            let coordinator = FileCoordinator()
            try coordinator.coordinate(
                writingItemAt: old, options: .forMoving, writingItemAt: new, options: .forReplacing
            ) { from, to in
                coordinator.item(at: from, willMoveTo: to)
                try FileManager.default.moveItem(at: from, to: to)
                coordinator.item(at: from, didMoveTo: to)
            }
        }
        await waitUntil("the document follows the move") { document.fileURL.path == new.path }
        try await expectSavesAtNewPlace(document, old: old, new: new)
    }

    @Test("a move by another process, into another folder: the document follows, and saves at the new place")
    func otherProcessMove() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let old = document.fileURL
        let new = try sandbox.directory("Archive").appendingPathComponent("Renamed.txt")

        #expect(try await helper(["coord-move", lockDirectory, old.path, new.path]) == 0)
        await waitUntil("the document follows the move") { document.fileURL.path == new.path }
        try await expectSavesAtNewPlace(document, old: old, new: new)
    }

    /// After a move to `new`: the document presents `new`, an autosave writes there and nothing appears at `old`,
    /// and other writers of `new` still reach the document.
    private func expectSavesAtNewPlace(_ document: NoteDocument, old: URL, new: URL) async throws {
        #expect(document.presentedItemURL?.path == new.path)
        #expect(document.localizedName == "Renamed")
        #expect(document.text == "one")
        document.autosaveDelay = .milliseconds(10)
        document.edit("after the move")
        await waitUntil("the edit is autosaved") { !document.hasUnsavedChanges }
        #expect(try contents(of: new) == "after the move")
        #expect(!FileManager.default.fileExists(atPath: old.path), "nothing is recreated at the old place")

        #expect(try await helper(["coord-safe-save", lockDirectory, new.path, "theirs, at the new place"]) == 0)
        await waitUntil("the document hears of changes at its new place") {
            document.text == "theirs, at the new place"
        }
        #expect(await document.close())
        #expect(!FileManager.default.fileExists(atPath: old.path))
        #expect(document.handledErrors.isEmpty)
    }

    @Test("an autosave asked for while the file is being moved saves at the new place")
    func autosaveDuringMove() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let old = document.fileURL
        let new = sandbox.url("Renamed.txt")
        document.edit("unsaved")

        let mover = HeldMove(from: old, to: new)
        #expect(await wait(for: mover.inAccessor), "the mover is in its accessor: the document has let go")
        let saving = Task { await document.autosave() }
        await mainActorTurn()  // the autosave has asked for its file-access turn
        mover.proceed.signal()
        #expect(try await mover.result())
        #expect(await saving.value)

        #expect(document.fileURL.path == new.path)
        #expect(!FileManager.default.fileExists(atPath: old.path), "nothing is recreated at the old place")
        #expect(await document.close())
    }

    @Test("a reader's save asked for while the file is being moved saves at the new place")
    func readerSaveDuringMove() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let witness = RecordingPresenter(document.fileURL)
        FileCoordinator.addFilePresenter(witness)  // registered after the document, so it is asked after it
        defer { FileCoordinator.removeFilePresenter(witness) }
        let old = document.fileURL
        let new = sandbox.url("Renamed.txt")
        document.edit("unsaved")

        let mover = HeldMove(from: old, to: new)
        #expect(await wait(for: mover.inAccessor), "the mover is in its accessor: the document has let go")
        let reader = TestThread { _ = try? FileCoordinator().coordinate(readingItemAt: old) { try contents(of: $0) } }
        await waitUntil("the reader asks presenters to save") { witness.log.contains("save") }
        await presenterSettled(document, fileAccess: false)  // the document has asked for its turn to save
        mover.proceed.signal()
        #expect(try await mover.result())
        #expect(await offMain { reader.join() })

        await waitUntil("the document follows the move") { document.fileURL.path == new.path }
        await presenterSettled(document)
        #expect(!document.hasUnsavedChanges)
        #expect(try contents(of: new) == "unsaved")
        #expect(!FileManager.default.fileExists(atPath: old.path), "nothing is recreated at the old place")
        #expect(document.fileURL.path == new.path)
        #expect(await document.close())
    }

    // MARK: Deletion

    @Test("a coordinated deletion in this process closes the document, unsaved changes and all")
    func inProcessDeletion() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let recorder = StateRecorder(document)
        let url = document.fileURL
        document.autosaveDelay = .milliseconds(200)
        document.edit("unsaved")

        try await offMain {
            try FileCoordinator().coordinate(writingItemAt: url, options: .forDeleting) {
                try FileManager.default.removeItem(at: $0)
            }
        }
        #expect(document.documentState == .closed, "closed before the deletion went ahead")
        try await expectClosedForGood(document, recorder: recorder, url: url, in: sandbox)
    }

    @Test("a deletion by another process closes the document, unsaved changes and all")
    func otherProcessDeletion() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let recorder = StateRecorder(document)
        let url = document.fileURL
        document.autosaveDelay = .milliseconds(500)
        document.edit("unsaved")

        #expect(try await helper(["coord-delete", lockDirectory, url.path]) == 0)
        await waitUntil("the document closes") { document.documentState.contains(.closed) }
        try await expectClosedForGood(document, recorder: recorder, url: url, in: sandbox)
    }

    /// The document closed because its file was deleted: it says so once, stops presenting, and never writes the
    /// file again — not when its autosave delay passes, not when it is closed.
    private func expectClosedForGood(
        _ document: NoteDocument, recorder: StateRecorder, url: URL, in sandbox: CoordinationSandbox
    ) async throws {
        #expect(recorder.states.last == .closed)
        #expect(recorder.states.filter { $0.contains(.closed) }.count == 1)
        #expect(!document.hasUnsavedChanges)
        #expect(!FileCoordinator.filePresenters.contains { $0 === document })
        // The autosave the edit armed was due one delay after the edit. Another document, edited now, autosaves twice
        // that delay from now: once it has, the deleted document's autosave has had its turn — and every file access
        // it asked for has ended once the document's next turn comes.
        let later = NoteDocument(fileURL: try sandbox.file("Later.txt", "later"))
        later.autosaveDelay = document.autosaveDelay * 2
        try await later.openDocument()
        defer { FileCoordinator.removeFilePresenter(later) }
        later.edit("autosaved later")
        await waitUntil("the later edit is autosaved") { !later.hasUnsavedChanges }
        await presenterSettled(document)
        #expect(!FileManager.default.fileExists(atPath: url.path), "the autosave does not recreate the file")
        #expect(await later.close())
        #expect(await document.close())
        #expect(!FileManager.default.fileExists(atPath: url.path), "closing does not recreate the file")
        #expect(document.documentState == .closed)
        #expect(document.handledErrors.isEmpty)
    }

    @Test("an autosave asked for after another process's deletion was noticed does not recreate the file")
    func autosaveAfterDeletionNotice() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let url = document.fileURL
        // Something else holds the document's file-access turn, so the deletion is noticed before it is handled.
        let busy = DispatchSemaphore(value: 0)
        document.performAsynchronousFileAccess { busy.wait() }
        document.edit("unsaved")

        try await deleteInAnotherProcess(url, noticedBy: document)
        let saving = Task { await document.autosave() }
        await mainActorTurn()
        busy.signal()
        #expect(await saving.value)
        await waitUntil("the document closes") { document.documentState.contains(.closed) }
        await presenterSettled(document)
        #expect(!FileManager.default.fileExists(atPath: url.path), "the autosave does not recreate the file")
        #expect(document.handledErrors.isEmpty)
    }

    /// Another process deletes the file at `url`; returns once `document` has noticed, its handling waiting for a
    /// file-access turn the caller keeps busy.
    private func deleteInAnotherProcess(_ url: URL, noticedBy document: NoteDocument) async throws {
        let queue = document.presentedItemOperationQueue
        queue.isSuspended = true
        #expect(try await helper(["coord-delete", lockDirectory, url.path]) == 0)
        await waitUntil("the deletion notice is queued") { queue.operationCount > 0 }
        queue.isSuspended = false
        await presenterSettled(document, fileAccess: false)
    }

    @Test("an autosave asked for just before another process's deletion was noticed is dropped, reporting no error")
    func autosaveBeforeDeletionNotice() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let url = document.fileURL
        // The autosave is asked for (its checks pass: open, unsaved changes) and waits for a busy file-access turn;
        // the deletion is noticed meanwhile — what the autosave timer firing as another process deletes does.
        let busy = DispatchSemaphore(value: 0)
        document.performAsynchronousFileAccess { busy.wait() }
        document.edit("unsaved")
        let saving = Task { await document.autosave() }
        await mainActorTurn()

        try await deleteInAnotherProcess(url, noticedBy: document)
        busy.signal()
        #expect(await saving.value == false, "nothing was saved")
        await waitUntil("the document closes") { document.documentState.contains(.closed) }
        await presenterSettled(document)
        #expect(!FileManager.default.fileExists(atPath: url.path), "the autosave does not recreate the file")
        #expect(document.handledErrors.isEmpty, "the dropped save is the deletion's doing, not an error to handle")
    }

    // MARK: Versions

    @Test("conflict versions put the document in conflict until every one is resolved or gone")
    func conflictVersions() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let recorder = StateRecorder(document)
        let plain = PresentedItemVersion(persistentIdentifier: "v0", isConflict: false)
        let first = PresentedItemVersion(persistentIdentifier: "v1", isConflict: true, savingComputer: "laptop")
        let second = PresentedItemVersion(persistentIdentifier: "v2", isConflict: true, savingComputer: "desktop")

        document.presentedItemDidGain(plain)
        await mainActorTurn()
        #expect(document.documentState == .normal, "a version that is no conflict changes nothing")

        document.presentedItemDidGain(first)
        document.presentedItemDidGain(second)
        await waitUntil("the document is in conflict") { document.documentState.contains(.inConflict) }
        #expect(recorder.states == [.inConflict], "announced once")

        document.presentedItemDidResolveConflict(first)
        await mainActorTurn()
        #expect(document.documentState.contains(.inConflict), "one conflict version is left")

        document.presentedItemDidLose(plain)
        await mainActorTurn()
        #expect(document.documentState.contains(.inConflict), "losing another version does not resolve anything")

        document.presentedItemDidLose(second)
        await waitUntil("the document leaves conflict") { !document.documentState.contains(.inConflict) }
        #expect(recorder.states == [.inConflict, .normal])

        document.presentedItemDidGain(second)
        await waitUntil("a new conflict puts it back in conflict") { document.documentState.contains(.inConflict) }
        document.presentedItemDidResolveConflict(second)
        await waitUntil("resolving it ends the conflict") { !document.documentState.contains(.inConflict) }
        #expect(recorder.states == [.inConflict, .normal, .inConflict, .normal])
        #expect(await document.close())
    }

    // MARK: Writers wait

    @Test("another coordinated writer gets in only after the document's save in flight has finished")
    func writerWaitsForSave() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let witness = RecordingPresenter(document.fileURL)
        FileCoordinator.addFilePresenter(witness)
        defer { FileCoordinator.removeFilePresenter(witness) }
        let url = document.fileURL
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        document.writeGate = gate
        document.writeStarted = started

        document.edit("saved by the document")
        let saving = Task { await document.save(to: url, for: .forOverwriting) }
        #expect(await wait(for: started), "the save starts writing")

        let events = Shared<[String]>([])
        let writer = TestThread {
            do {
                try FileCoordinator().coordinate(writingItemAt: url, options: .forReplacing) { url in
                    events.update {
                        $0.append(
                            "writer saw: \(String(decoding: (try? Data(contentsOf: url)) ?? Data(), as: UTF8.self))")
                    }
                    try Data("written by the writer".utf8).write(to: url, options: .atomic)
                }
            } catch {
                events.update { $0.append("writer failed: \(error)") }
            }
        }
        await waitUntil("the writer asks presenters to relinquish") { witness.log.contains("relinquishToWriter") }
        // The document was asked before the witness; once it has handled that request the writer has asked all it
        // waits for. It reads what the save wrote, which is on disk only after the gate opens.
        await presenterSettled(document, fileAccess: false)
        events.update { $0.append("save released") }
        gate.signal()
        #expect(await saving.value)
        document.writeGate = nil  // only now: the write reads it after signalling writeStarted
        document.writeStarted = nil
        #expect(await offMain { writer.join() })

        #expect(events.current == ["save released", "writer saw: saved by the document"])
        await waitUntil("the document reverts to the writer's contents") { document.text == "written by the writer" }
        #expect(document.loads == ["one", "written by the writer"])
        #expect(!document.hasUnsavedChanges)
        #expect(await document.close())
    }

    @Test("readers and writers wait for the document's own file access in progress")
    func accessWaitsForFileAccessBlock() async throws {
        let sandbox = try CoordinationSandbox()
        let document = try await openNote(sandbox, "one")
        defer { FileCoordinator.removeFilePresenter(document) }
        let witness = RecordingPresenter(document.fileURL)
        FileCoordinator.addFilePresenter(witness)
        defer { FileCoordinator.removeFilePresenter(witness) }
        let url = document.fileURL

        for access in ["reader", "writer"] {
            // The document's own work on its file, in its turn and without coordination of its own: half done, it
            // waits for the test.
            let gate = DispatchSemaphore(value: 0)
            let events = Shared<[String]>([])
            document.performAsynchronousFileAccess {
                try? Data("half done".utf8).write(to: url)
                _ = gate.wait(timeout: .now() + 10)
                try? Data("done by \(access)'s time".utf8).write(to: url)
                events.update { $0.append("document's access ended") }
            }
            witness.clearLog()
            let other = TestThread {
                let coordinator = FileCoordinator()
                let seen: String?
                if access == "reader" {
                    seen = try? coordinator.coordinate(readingItemAt: url, options: .withoutChanges) {
                        try contents(of: $0)
                    }
                } else {
                    seen = try? coordinator.coordinate(writingItemAt: url) { try contents(of: $0) }
                }
                events.update { $0.append("\(access) saw: \(seen ?? "nothing")") }
            }
            let asked = access == "reader" ? "relinquishToReader" : "relinquishToWriter"
            await waitUntil("the \(access) asks presenters to relinquish") { witness.log.contains(asked) }
            // The document was asked before the witness; once it has handled that request the other side has asked
            // all it waits for. What it reads is written only after the gate opens.
            await presenterSettled(document, fileAccess: false)
            gate.signal()
            #expect(await offMain { other.join() })
            #expect(events.current == ["document's access ended", "\(access) saw: done by \(access)'s time"])
        }
        #expect(await document.close())
    }
}

// MARK: Support

/// The lock directory documents use; helper processes must use it too for their locks to meet the documents'.
private let lockDirectory = FileCoordinator.Configuration.defaultLockDirectory

/// Writes `Note.txt` with `text` and opens a document on it, one that does not autosave unless a test asks it to.
@MainActor
private func openNote(_ sandbox: CoordinationSandbox, _ text: String) async throws -> NoteDocument {
    let document = NoteDocument(fileURL: try sandbox.file("Note.txt", text))
    document.autosaveDelay = .seconds(3600)
    try await document.openDocument()
    return document
}

/// Runs blocking work (coordination, waiting for a semaphore or a process) on a thread of its own: never on the
/// main actor, whose jobs the document needs to answer, nor on the cooperative pool, whose few threads the document's
/// tasks need.
private func offMain<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

private func offMain<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
}

/// Waits (off the main actor, at most 10 s) for `semaphore`.
private func wait(for semaphore: DispatchSemaphore) async -> Bool {
    await offMain { semaphore.wait(timeout: .now() + 10) == .success }
}

/// Runs `document-test-helper` to the end and returns its exit status.
private func helper(_ arguments: [String]) async throws -> Int32? {
    try await offMain { try HelperProcess.run(arguments) }
}

private func contents(of url: URL) throws -> String {
    String(decoding: try Data(contentsOf: url), as: UTF8.self)
}

/// A safe save by a coordinator that presents nothing, as another part of the app (or the sync engine) does it.
private func coordinatedReplace(_ url: URL, with text: String) async throws {
    try await offMain {
        try FileCoordinator().coordinate(writingItemAt: url, options: .forReplacing) { url in
            try Data(text.utf8).write(to: url, options: .atomic)
        }
    }
}

/// Lets every main-actor job queued so far run.
@MainActor
private func mainActorTurn() async {
    await Task { @MainActor in }.value
}

/// Waits until the document has handled every presenter message queued so far: they have run on its queue, the work
/// they hand to the main actor has started (and asked for its file-access turn), and — with `fileAccess` — every
/// file-access turn asked for so far has ended.
@MainActor
private func presenterSettled(_ document: Document, fileAccess: Bool = true) async {
    let queue = document.presentedItemOperationQueue
    await withCheckedContinuation { continuation in queue.addOperation { continuation.resume() } }
    await mainActorTurn()
    guard fileAccess else { return }
    await withCheckedContinuation { continuation in document.performAsynchronousFileAccess { continuation.resume() } }
}

/// A coordinated move, in this process, whose accessor waits for `proceed` before it moves.
private final class HeldMove: Sendable {
    let inAccessor = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    private let outcome = Shared<Result<Bool, TestFailure>?>(nil)
    private let thread: TestThread

    init(from old: URL, to new: URL) {
        let inAccessor = inAccessor
        let proceed = proceed
        let outcome = outcome
        thread = TestThread {
            let coordinator = FileCoordinator()
            do {
                try coordinator.coordinate(
                    writingItemAt: old, options: .forMoving, writingItemAt: new, options: .forReplacing
                ) { from, to in
                    inAccessor.signal()
                    _ = proceed.wait(timeout: .now() + 10)
                    try FileManager.default.moveItem(at: from, to: to)
                    coordinator.item(at: from, didMoveTo: to)
                }
                outcome.update { $0 = .success(true) }
            } catch {
                outcome.update { $0 = .failure(TestFailure("the move failed: \(error)")) }
            }
        }
    }

    /// Waits for the move to end; `true` when it moved the file.
    func result() async throws -> Bool {
        let thread = thread
        guard await offMain({ thread.join() }) else { throw TestFailure("the move did not end") }
        return try outcome.current?.get() ?? false
    }
}
