import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

/// The service of a test that stops and starts it again on the same port and data (devices are offline between).
final class RestartableService: Sendable {
    private let running: Mutex<LocalService?>
    let directory: URL
    let port: Int

    init(_ service: LocalService) {
        running = Mutex(service)
        directory = service.directory
        port = service.port
    }

    /// Stops the service; the devices are offline until ``start()``.
    func stop() async {
        guard let service = running.withLock({ $0.take() }) else { return }
        await service.stop()
    }

    /// Starts it again on the same port and data.
    func start() async throws {
        let service = try await LocalService.start(in: directory, port: port)
        running.withLock { $0 = service }
    }

    /// A client of the account signed in as a device of its own, to ask the service what it keeps.
    func probe() async throws -> ServiceClient {
        guard let service = running.withLock({ $0 }) else { throw ChildProcessFailure("the service is stopped") }
        return try await service.signIn(account: "alice", device: "probe")
    }
}

/// A presenter of one item that records the version messages it gets, in order.
final class VersionMessages: FilePresenter {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    private let messages = Mutex<[String]>([])

    init(_ url: URL) {
        presentedItemURL = url
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
    }

    var log: [String] { messages.withLock { $0 } }

    func count(_ message: String) -> Int { log.filter { $0 == message }.count }

    func presentedItemDidGain(_ version: PresentedItemVersion) {
        messages.withLock { $0.append("gained \(version.persistentIdentifier)") }
    }
    func presentedItemDidLose(_ version: PresentedItemVersion) {
        messages.withLock { $0.append("lost \(version.persistentIdentifier)") }
    }
    func presentedItemDidResolveConflict(_ version: PresentedItemVersion) {
        messages.withLock { $0.append("resolved \(version.persistentIdentifier)") }
    }
}

/// Two devices with one grocery item in conflict: both have it open; both saved it from the same base while the
/// service was down, the desktop a moment later — so once the service is back, the desktop's version ("Milk, bread")
/// is current on every device and the laptop's ("Milk, eggs") is the unresolved conflict version.
@MainActor
struct Conflict {
    let laptop: TestDevice
    let desktop: TestDevice
    let service: RestartableService
    /// The item on each device.
    let onLaptop: URL
    let onDesktop: URL
    /// The open documents.
    let laptopDocument: GroceryItemDocument
    let desktopDocument: GroceryItemDocument
    /// Version messages the presenters of each device got.
    let laptopMessages: VersionMessages
    let desktopMessages: VersionMessages

    static let name = "List.txt"
    static let base = "Milk"
    static let laptopEdit = "Milk, eggs"
    static let desktopEdit = "Milk, bread"

    /// The text of a file, or `nil`.
    static func read(_ url: URL) -> String? {
        (try? Data(contentsOf: url)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// How many version changes a device's engine still has to send.
    static func queued(on device: TestDevice) throws -> Int {
        try LocalStateStore(url: ContainerLayout(root: device.root, container: device.container).stateDatabase)
            .queuedOperationCount()
    }

    /// The engine's id of the item on a device.
    static func itemID(of url: URL, on device: TestDevice) throws -> ItemID? {
        let layout = ContainerLayout(root: device.root, container: device.container)
        return try LocalStateStore(url: layout.stateDatabase).item(at: ItemPath("Documents/\(name)"))?.id
    }

    /// Waits until a file saved on `from` (in the container's data scope, outside `Documents/`) has reached `to`:
    /// the feed is read in order, so every change the service had before it has been applied on `to` by then.
    static func settle(from: TestDevice, to: TestDevice) async throws -> Bool {
        let marker = "marker-\(UUID().uuidString.prefix(8)).txt"
        try Data("marker".utf8).write(to: from.folder.appendingPathComponent(marker))
        return await eventually(.seconds(60)) {
            Self.read(to.folder.appendingPathComponent(marker)) == "marker"
        }
    }

    /// Waits until both devices have applied everything the service has (see ``settle(from:to:)``).
    func settle() async throws -> Bool {
        let there = try await Self.settle(from: laptop, to: desktop)
        let back = try await Self.settle(from: desktop, to: laptop)
        return there && back
    }

    /// Closes the documents and removes the presenters.
    func close() async {
        _ = await laptopDocument.close()
        _ = await desktopDocument.close()
        FileCoordinator.removeFilePresenter(laptopMessages)
        FileCoordinator.removeFilePresenter(desktopMessages)
    }
}

/// Runs `body` with a ``Conflict`` on two devices whose engines run as `mode` says, against a service `body` may
/// stop and start again.
@MainActor
func withConflict(_ mode: EngineMode, _ body: (Conflict) async throws -> Void) async throws {
    try await withTwoDevices(mode) { laptop, desktop, started in
        let service = RestartableService(started)
        let onLaptop = laptop.documents.appendingPathComponent(Conflict.name)
        let onDesktop = desktop.documents.appendingPathComponent(Conflict.name)

        // The base version, made on the laptop, on both devices; both open it.
        let laptopDocument = GroceryItemDocument(fileURL: onLaptop)
        laptopDocument.name = Conflict.base
        #expect(await laptopDocument.save(to: onLaptop, for: .forCreating))
        try #require(await eventually(.seconds(60)) { Conflict.read(onDesktop) == Conflict.base })
        try #require(await eventually(.seconds(60)) { (try? onLaptop.ubiquitousResourceValues())?.isUploaded == true })
        let desktopDocument = GroceryItemDocument(fileURL: onDesktop)
        try await desktopDocument.openDocument()
        let conflict = Conflict(
            laptop: laptop, desktop: desktop, service: service, onLaptop: onLaptop, onDesktop: onDesktop,
            laptopDocument: laptopDocument, desktopDocument: desktopDocument,
            laptopMessages: VersionMessages(onLaptop), desktopMessages: VersionMessages(onDesktop))
        FileCoordinator.addFilePresenter(conflict.laptopMessages)
        FileCoordinator.addFilePresenter(conflict.desktopMessages)
        do {
            // Both save from the same base with the service down; the desktop's later save wins everywhere.
            await service.stop()
            laptopDocument.rename(Conflict.laptopEdit)
            #expect(await laptopDocument.save(to: onLaptop, for: .forOverwriting))
            // The later modification date makes the desktop's version the winner: its save waits until the file
            // system's clock has moved past the laptop's.
            try await waitForFileClock(after: onLaptop, probe: desktop.root.appendingPathComponent("clock-probe"))
            desktopDocument.rename(Conflict.desktopEdit)
            #expect(await desktopDocument.save(to: onDesktop, for: .forOverwriting))
            try await service.start()

            for document in [laptopDocument, desktopDocument] {
                try #require(
                    await eventually(.seconds(90)) { document.documentState.contains(.inConflict) },
                    "\(document.fileURL.path) did not go in conflict")
            }
            try #require(await eventually(.seconds(60)) { laptopDocument.name == Conflict.desktopEdit })
            // Both engines are done with the conflict before the test goes on.
            try #require(try await conflict.settle())
            try await body(conflict)
        } catch {
            await conflict.close()
            await service.stop()
            throw error
        }
        await conflict.close()
        await service.stop()
    }
}

/// Returns once a file written now is dated later than the file at `url`: file times come from the file system's
/// coarse clock, so a save made just after another may carry the same time.
func waitForFileClock(after url: URL, probe: URL) async throws {
    let date = { (url: URL) in try url.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate }
    let mark = try #require(try date(url))
    while true {
        try Data().write(to: probe)
        if let now = try date(probe), now > mark { break }
        await Task.yield()
    }
    try? FileManager.default.removeItem(at: probe)
}
