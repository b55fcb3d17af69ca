import DocumentKit
import Foundation
import Synchronization
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// Small files are read, and downloads put in place, many under one coordinated access. When that access cannot be
/// had for one of them, the others must not fail with it: each is tried again under an access of its own.
@Suite("Coordinated batches: one file that cannot be had does not fail the others")
struct CoordinatedBatchTests {
    /// Answers every request to save its file with an error, as an editor whose save failed does, and counts them.
    final class FailingSavePresenter: FilePresenter, Sendable {
        struct SaveFailed: Error {}
        let presentedItemURL: URL?
        let presentedItemOperationQueue = OperationQueue()
        let saves = Mutex(0)

        init(_ url: URL) { presentedItemURL = url }

        func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
            saves.withLock { $0 += 1 }
            completionHandler(SaveFailed())
        }
    }

    /// A new folder for one test; removed by the caller.
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-batch-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("A read refused by one file's presenter fails that file alone; the files read with it are read and hashed")
    func readRefusedForOneFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let names = ["a.txt", "refused.txt", "b.txt"]
        let urls = names.map { folder.appendingPathComponent($0) }
        for (name, url) in zip(names, urls) { try Data("contents of \(name)".utf8).write(to: url) }
        let presenter = FailingSavePresenter(urls[1])
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }

        let results = ContainerSync.readTogether(
            urls, scanner: LocalScanner(), chunker: FileChunker(), disk: PosixDisk())

        #expect(results.count == 3)
        for index in [0, 2] {
            let read = try results[index].get()
            #expect(read.content.contentHash == (try contentHash(Data("contents of \(names[index])".utf8))))
            #expect(read.identity.size == Int64("contents of \(names[index])".utf8.count))
        }
        #expect(throws: FileCoordinationError.self) { try results[1].get() }
        if case .failure(let error as FileCoordinationError) = results[1] { #expect(error.code == .presenterFailed) }
        // Asked once for the batch and once for its read alone.
        #expect(presenter.saves.withLock { $0 } == 2)
    }

    @Test("Reads that all can be had are answered from one coordinated read, each with its own content")
    func readsTogether() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let urls = (0..<5).map { folder.appendingPathComponent("file-\($0).txt") }
        for (index, url) in urls.enumerated() { try Data(repeating: UInt8(index), count: 100 + index).write(to: url) }
        let presenter = FailingSavePresenter(folder.appendingPathComponent("elsewhere.txt"))
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }

        let results = ContainerSync.readTogether(
            urls, scanner: LocalScanner(), chunker: FileChunker(), disk: PosixDisk())

        for (index, result) in results.enumerated() {
            let read = try result.get()
            #expect(read.content.contentHash == (try contentHash(Data(repeating: UInt8(index), count: 100 + index))))
        }
        #expect(presenter.saves.withLock { $0 } == 0, "a presenter of no file read was asked to save")
    }

    @Test(
        "A placement whose destination cannot be written fails alone: the others are in place, its download stays, nothing lands at its destination"
    )
    func placementRefusedForOneFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let temporary = folder.appendingPathComponent("tmp", isDirectory: true)
        let documents = folder.appendingPathComponent("Documents", isDirectory: true)
        for url in [temporary, documents] {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        let names = ["a.txt", "held.txt", "b.txt"]
        var placements: [ContainerSync.Placement] = []
        for name in names {
            let downloaded = temporary.appendingPathComponent(name)
            try Data("downloaded \(name)".utf8).write(to: downloaded)
            placements.append(
                ContainerSync.Placement(
                    temporary: downloaded, destination: documents.appendingPathComponent(name),
                    movedAside: temporary.appendingPathComponent("\(name).aside"), replacing: nil, synced: nil,
                    syncedHash: nil, kind: .file, modified: 1_700_000_000_000_000_000))
        }
        let held = placements[1]

        // This thread reads the held file's destination while the batch asks to write it: that write would wait for
        // its own thread, and the coordination of the whole batch fails.
        let results = try FileCoordinator().coordinate(readingItemAt: held.destination) { _ in
            ContainerSync.placeTogether(placements, scanner: LocalScanner(), chunker: FileChunker(), disk: PosixDisk())
        }

        for index in [0, 2] {
            let placed = try results[index].get()
            let destination = placements[index].destination
            #expect(try Data(contentsOf: destination) == Data("downloaded \(names[index])".utf8))
            #expect(placed.identity.size == Int64("downloaded \(names[index])".utf8.count))
            #expect(placed.identity.modified == 1_700_000_000_000_000_000, "the version's modification time")
            #expect(!FileManager.default.fileExists(atPath: placements[index].temporary.path))
        }
        #expect(throws: FileCoordinationError.self) { try results[1].get() }
        #expect(!FileManager.default.fileExists(atPath: held.destination.path), "the held placement landed")
        #expect(FileManager.default.fileExists(atPath: held.temporary.path), "the held placement's download is lost")

        // Once the destination is free, it goes in place.
        let again = ContainerSync.placeTogether(
            [held], scanner: LocalScanner(), chunker: FileChunker(), disk: PosixDisk())
        _ = try again[0].get()
        #expect(try Data(contentsOf: held.destination) == Data("downloaded held.txt".utf8))
    }

    @Test("A package whose replacement fails is back at its path: not left in the temporary folder to read as deleted")
    func packageBackWhenReplacementFails() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let temporary = folder.appendingPathComponent("tmp", isDirectory: true)
        let package = folder.appendingPathComponent("Documents/List.item", isDirectory: true)
        let downloaded = temporary.appendingPathComponent("download", isDirectory: true)
        for url in [package, downloaded] {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        try Data("old".utf8).write(to: package.appendingPathComponent("name.txt"))
        try Data("new".utf8).write(to: downloaded.appendingPathComponent("name.txt"))
        // Written an hour ago: an identity the check trusts without reading the package.
        let past = Date(timeIntervalSinceNow: -3_600)
        for url in [package.appendingPathComponent("name.txt"), package] {
            try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: url.path)
        }
        let disk = CountingDisk()
        let scanner = LocalScanner(disk: disk)
        let old = try scanner.identity(of: package, kind: .package)
        let placement = ContainerSync.Placement(
            temporary: downloaded, destination: package, movedAside: temporary.appendingPathComponent("aside"),
            replacing: old, synced: old, syncedHash: nil, kind: .package, modified: nil)
        disk.refusesReplacing.withLock { $0 = true }

        let refused = ContainerSync.placeTogether([placement], scanner: scanner, chunker: FileChunker(), disk: disk)

        #expect(throws: POSIXError.self) { try refused[0].get() }
        #expect(try Data(contentsOf: package.appendingPathComponent("name.txt")) == Data("old".utf8))
        #expect(!FileManager.default.fileExists(atPath: placement.movedAside.path))
        #expect(FileManager.default.fileExists(atPath: downloaded.path), "the download stays for its caller")

        disk.refusesReplacing.withLock { $0 = false }
        let placed = ContainerSync.placeTogether([placement], scanner: scanner, chunker: FileChunker(), disk: disk)
        #expect(try placed[0].get().movedAside)
        #expect(try Data(contentsOf: package.appendingPathComponent("name.txt")) == Data("new".utf8))
    }
}
