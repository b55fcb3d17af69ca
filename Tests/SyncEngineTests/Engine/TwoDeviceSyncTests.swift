import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// Two devices of one account, each with its own container folder, syncing through a live service.
@Suite("Container sync between two devices")
struct TwoDeviceSyncTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    struct Devices {
        let service: LocalService
        let root: URL
        let laptop: ContainerSync
        let desktop: ContainerSync

        func file(_ path: String, on device: ContainerSync) -> URL {
            device.layout.folder.appendingPathComponent(path)
        }

        func write(_ text: String, to path: String, on device: ContainerSync) throws {
            let url = file(path, on: device)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }

        func read(_ path: String, on device: ContainerSync) -> String? {
            (try? Data(contentsOf: file(path, on: device))).map { String(decoding: $0, as: UTF8.self) }
        }

        func documents(on device: ContainerSync) throws -> [String] {
            let folder = device.layout.documents.path
            return (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).sorted()
        }
    }

    func withDevices(
        eagerLimit: Int64 = 1 << 20, planningPage: Int = ContainerSync.defaultPlanningPage,
        _ body: (Devices) async throws -> Void
    ) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-devices-\(UUID().uuidString.prefix(8))", isDirectory: true)
        do {
            func device(_ name: String) async throws -> ContainerSync {
                let client = try await service.signIn(account: "ada", device: name)
                let layout = ContainerLayout(root: root.appendingPathComponent(name), container: Self.container)
                let types = DocumentTypeRegistry()
                types.register(
                    DocumentType(
                        identifier: "com.example.grocery-item", conformsTo: ["com.apple.package"],
                        filenameExtensions: ["item"]))
                return try ContainerSync(
                    layout: layout, client: client, device: SavingDevice(id: DeviceID(), name: name),
                    configuration: .init(eagerDownloadLimit: eagerLimit, planningPage: planningPage), types: types)
            }
            let devices = Devices(
                service: service, root: root, laptop: try await device("laptop"), desktop: try await device("desktop"))
            try await body(devices)
        } catch {
            await service.remove()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        await service.remove()
        try? FileManager.default.removeItem(at: root)
    }

    @Test("Create, edit, rename and delete on one device are seen on the other")
    func changesReachTheOtherDevice() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write("milk", to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read("Documents/List.txt", on: desktop) == "milk")

            try devices.write("milk, eggs", to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read("Documents/List.txt", on: desktop) == "milk, eggs")

            try FileManager.default.createDirectory(
                at: devices.file("Documents/Shops", on: laptop), withIntermediateDirectories: true)
            try FileManager.default.moveItem(
                at: devices.file("Documents/List.txt", on: laptop),
                to: devices.file("Documents/Shops/Weekly.txt", on: laptop))
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read("Documents/List.txt", on: desktop) == nil)
            #expect(devices.read("Documents/Shops/Weekly.txt", on: desktop) == "milk, eggs")
            let ids = try await laptop.items().filter { $0.kind == .file }.map(\.id)
            #expect(try await desktop.items().filter { $0.kind == .file }.map(\.id) == ids, "a rename keeps the item")

            try FileManager.default.removeItem(at: devices.file("Documents/Shops/Weekly.txt", on: desktop))
            try await desktop.syncOnce()
            try await laptop.syncOnce()
            #expect(devices.read("Documents/Shops/Weekly.txt", on: laptop) == nil)
            #expect(try await laptop.items().filter { $0.kind == .file }.isEmpty)
        }
    }

    @Test(
        "A downloaded file keeps the modification time it was saved with, and its placed identity is trusted as it is (not racy)"
    )
    func downloadKeepsModificationTime() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write("flour", to: "Documents/Pantry.txt", on: laptop)
            let saved = Date(timeIntervalSince1970: 1_790_000_000.123456)
            try FileManager.default.setAttributes(
                [.modificationDate: saved], ofItemAtPath: devices.file("Documents/Pantry.txt", on: laptop).path)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read("Documents/Pantry.txt", on: desktop) == "flour")
            let placed = try #require(FileIdentity.of(path: devices.file("Documents/Pantry.txt", on: desktop).path))
            let original = try #require(FileIdentity.of(path: devices.file("Documents/Pantry.txt", on: laptop).path))
            #expect(placed.modified / 1_000 == original.modified / 1_000, "the same time, to the microsecond")
            let item = try #require(try await desktop.item(at: ItemPath("Documents/Pantry.txt")))
            let recorded = try #require(item.identity)
            #expect(!recorded.isRacy)
            #expect(recorded == placed)
            // The next round finds it in step as recorded.
            try await desktop.syncOnce()
            #expect(try await desktop.item(at: ItemPath("Documents/Pantry.txt"))?.identity == placed)
        }
    }

    @Test(
        "New small files arrive whole from the feed's page alone: the other device asks the service about none of them"
    )
    func newSmallFilesNeedNoQuestion() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            let names = (1...6).map { "Documents/Shops/List \($0).txt" }
            for (number, name) in names.enumerated() { try devices.write("item \(number)", to: name, on: laptop) }
            try await laptop.syncOnce()
            let reads = "ubiquity_database_duration_seconds_count{operation=\"item\"}"
            let before = devices.service.figure(reads)
            try await desktop.syncOnce()
            for (number, name) in names.enumerated() { #expect(devices.read(name, on: desktop) == "item \(number)") }
            #expect(devices.service.figure(reads) == before, "no item was read for the desktop")
            // Recorded as asking would have: each item's current version, on both devices alike.
            for name in names {
                let path = try ItemPath(name)
                let here = try #require(try await desktop.item(at: path))
                let there = try #require(try await laptop.item(at: path))
                #expect(here.id == there.id && !here.isPlaceholder && here.contentHash == there.contentHash)
                #expect(here.serverVersion == there.serverVersion && here.baseVersion == here.serverVersion)
            }
        }
    }

    @Test("Many items planned three at a time: created in folders, then some renamed and some deleted, arrive whole")
    func manyItemsPlannedInPages() async throws {
        try await withDevices(planningPage: 3) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            var expected: [String: String] = [:]
            let commitsBefore = devices.service.figure("ubiquity_commits_total")
            for folder in 0..<4 {
                try FileManager.default.createDirectory(
                    at: devices.file("Documents/F\(folder)", on: laptop), withIntermediateDirectories: true)
                for file in 0..<8 {
                    let path = "Documents/F\(folder)/\(file).txt"
                    try devices.write("\(folder)-\(file)", to: path, on: laptop)
                    expected[path] = "\(folder)-\(file)"
                }
            }
            try await laptop.syncOnce()
            // Each new file went up as one change, its record with its first version; each folder (Documents and the
            // four in it) as its record.
            #expect(devices.service.figure("ubiquity_commits_total") - commitsBefore == 32 + 5)
            try await desktop.syncOnce()
            for (path, contents) in expected { #expect(devices.read(path, on: desktop) == contents, "\(path)") }

            // Every third file renamed, every fifth deleted, one moved across folders and one folder deleted: the
            // next round compares them folder by folder and plans them page by page.
            for (index, path) in expected.keys.sorted().enumerated() {
                if index % 5 == 0 {
                    try FileManager.default.removeItem(at: devices.file(path, on: laptop))
                    expected[path] = nil
                } else if index % 3 == 0 {
                    let renamed = path.replacingOccurrences(of: ".txt", with: "-renamed.txt")
                    try FileManager.default.moveItem(
                        at: devices.file(path, on: laptop), to: devices.file(renamed, on: laptop))
                    expected[renamed] = expected.removeValue(forKey: path)
                }
            }
            // A file moved to another folder (the same item), and a whole folder deleted.
            let moving = try #require(expected.keys.sorted().first { $0.hasPrefix("Documents/F0/") })
            let movingID = try #require(try await laptop.items().first { $0.path.string == moving }).id
            try FileManager.default.moveItem(
                at: devices.file(moving, on: laptop), to: devices.file("Documents/F3/moved.txt", on: laptop))
            expected["Documents/F3/moved.txt"] = expected.removeValue(forKey: moving)
            try FileManager.default.removeItem(at: devices.file("Documents/F2", on: laptop))
            expected = expected.filter { !$0.key.hasPrefix("Documents/F2/") }
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(try await desktop.items().first { $0.id == movingID }?.path.string == "Documents/F3/moved.txt")
            #expect(!FileManager.default.fileExists(atPath: devices.file("Documents/F2", on: desktop).path))
            let files = try devices.documents(on: desktop).filter { $0.hasSuffix(".txt") }.map { "Documents/" + $0 }
            #expect(files.sorted() == expected.keys.sorted())
            for (path, contents) in expected { #expect(devices.read(path, on: desktop) == contents, "\(path)") }
            let laptopItems = try await laptop.items().map { "\($0.id) \($0.path)" }
            #expect(try await desktop.items().map { "\($0.id) \($0.path)" } == laptopItems, "the same items")
        }
    }

    @Test("A large item stays a placeholder on the other device until it is asked for")
    func placeholderUntilAsked() async throws {
        try await withDevices(eagerLimit: 16) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            let text = String(repeating: "0123456789", count: 1000)
            try devices.write(text, to: "Documents/Big.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            let placeholder = try #require(try await desktop.items().first { $0.path.string == "Documents/Big.txt" })
            #expect(placeholder.isPlaceholder)
            #expect(placeholder.size == 10_000)
            #expect(devices.read("Documents/Big.txt", on: desktop) == nil, "no content yet")
            try await desktop.download(try ItemPath("Documents/Big.txt"))
            #expect(devices.read("Documents/Big.txt", on: desktop) == text)
            #expect(try await desktop.items().first { $0.path.string == "Documents/Big.txt" }?.isPlaceholder == false)
        }
    }

    @Test(
        "Edits of one item on both devices from the same base: both end with the same current version, the other kept as a conflict version, no conflict file"
    )
    func concurrentEditsConverge() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write("milk", to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            try devices.write("milk, eggs", to: "Documents/List.txt", on: laptop)
            try devices.write("milk, bread and butter", to: "Documents/List.txt", on: desktop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try await laptop.syncOnce()

            let onLaptop = devices.read("Documents/List.txt", on: laptop)
            let onDesktop = devices.read("Documents/List.txt", on: desktop)
            #expect(onLaptop == onDesktop, "both show the same current version")
            #expect(["milk, eggs", "milk, bread and butter"].contains(onLaptop ?? ""))
            #expect(try devices.documents(on: laptop) == ["List.txt"])
            #expect(try devices.documents(on: desktop) == ["List.txt"])
            let item = try #require(try await laptop.items().first { $0.path.string == "Documents/List.txt" })
            #expect(item.hasUnresolvedConflicts)
            #expect(try await desktop.items().first { $0.id == item.id }?.hasUnresolvedConflicts == true)
            let detail = try await laptop.client.item(item.id, in: Self.container)
            let conflicts = detail.versions.filter { $0.isConflict && !$0.isResolved }
            #expect(conflicts.count == 1, "the other edit is kept, not dropped")
        }
    }
}

extension TwoDeviceSyncTests {
    @Test("A package syncs as one item: created, a member changed, seen whole on the other device")
    func packagesSyncWhole() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write("Milk", to: "Documents/Item_1.item/name.txt", on: laptop)
            try devices.write("png bytes", to: "Documents/Item_1.item/Images/photo.png", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read("Documents/Item_1.item/name.txt", on: desktop) == "Milk")
            #expect(devices.read("Documents/Item_1.item/Images/photo.png", on: desktop) == "png bytes")
            let items = try await desktop.items()
            #expect(items.filter { $0.path.string.hasPrefix("Documents/Item_1.item") }.map(\.kind) == [.package])

            try devices.write("Oat milk", to: "Documents/Item_1.item/name.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read("Documents/Item_1.item/name.txt", on: desktop) == "Oat milk")
            #expect(devices.read("Documents/Item_1.item/Images/photo.png", on: desktop) == "png bytes")
        }
    }
}

extension TwoDeviceSyncTests {
    @Test("Changes made while the service is down go up when it is back, and reach the other device")
    func offlineChangesGoUpLater() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-offline-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client, device: SavingDevice(id: DeviceID(), name: name))
        }
        let laptop = try await device("laptop")
        let desktop = try await device("desktop")
        let list = laptop.layout.documents.appendingPathComponent("List.txt")
        try Data("milk".utf8).write(to: list)
        try await laptop.syncOnce()

        await service.stop()
        try Data("milk, eggs".utf8).write(to: list)
        try Data("new while offline".utf8).write(to: laptop.layout.documents.appendingPathComponent("Offline.txt"))
        await #expect(throws: (any Error).self, "the service is unreachable") { try await laptop.syncOnce() }

        let back = try await LocalService.start(in: service.directory, port: service.port)
        try await laptop.syncOnceAfterRestart()
        try await desktop.syncOnceAfterRestart()
        let documents = desktop.layout.documents
        #expect(try Data(contentsOf: documents.appendingPathComponent("List.txt")) == Data("milk, eggs".utf8))
        #expect(try Data(contentsOf: documents.appendingPathComponent("Offline.txt")) == Data("new while offline".utf8))
        await back.remove()
    }

    @Test(
        "A create whose answer was lost is adopted, not duplicated; another item at the path moves the local one aside")
    func collisionsAdoptOrStepAside() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            // The same file made on both devices before either synced: one item, no copy.
            try devices.write("same", to: "Documents/Same.txt", on: laptop)
            try devices.write("same", to: "Documents/Same.txt", on: desktop)
            // Different files at one path: both kept, the second as a conflicted copy.
            try devices.write("laptop's", to: "Documents/Note.txt", on: laptop)
            try devices.write("desktop's", to: "Documents/Note.txt", on: desktop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try await desktop.syncOnce()
            try await laptop.syncOnce()
            for device in [laptop, desktop] {
                #expect(
                    try devices.documents(on: device) == ["Note (conflicted copy).txt", "Note.txt", "Same.txt"],
                    "\(device.device.name)")
                #expect(devices.read("Documents/Note.txt", on: device) == "laptop's")
                #expect(devices.read("Documents/Note (conflicted copy).txt", on: device) == "desktop's")
            }
            #expect(try await laptop.items().filter { $0.path.string == "Documents/Same.txt" }.count == 1)
        }
    }
}

extension TwoDeviceSyncTests {
    @Test("Evicting leaves a placeholder that downloads again; a copy with changes not yet uploaded is not evicted")
    func evictionKeepsWhatIsNotUploaded() async throws {
        try await withDevices { devices in
            let laptop = devices.laptop
            try devices.write("milk", to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            let path = try ItemPath("Documents/List.txt")
            try await laptop.evict(path)
            #expect(devices.read("Documents/List.txt", on: laptop) == nil)
            #expect(try await laptop.items().first { $0.path == path }?.isPlaceholder == true)
            try await laptop.syncOnce()
            #expect(devices.read("Documents/List.txt", on: laptop) == nil, "an evicted item stays evicted")
            try await laptop.download(path)
            #expect(devices.read("Documents/List.txt", on: laptop) == "milk")

            try devices.write("milk, eggs — not uploaded", to: "Documents/List.txt", on: laptop)
            await #expect {
                try await laptop.evict(path)
            } throws: { error in
                (error as? ProtocolError)?.code == .notUploaded
            }
            #expect(devices.read("Documents/List.txt", on: laptop) == "milk, eggs — not uploaded", "nothing was lost")
        }
    }
}

extension TwoDeviceSyncTests {
    @Test("Resolving on one device (the conflict version wins) reaches the other: same content, no conflicts left")
    func resolutionReachesTheOtherDevice() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write("milk", to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try devices.write("milk, eggs", to: "Documents/List.txt", on: laptop)
            try devices.write("milk, bread and butter", to: "Documents/List.txt", on: desktop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try await laptop.syncOnce()

            let path = try ItemPath("Documents/List.txt")
            let (current, versions) = try await desktop.versions(of: path)
            let conflict = try #require(versions.first { $0.isConflict && !$0.isResolved })
            #expect(conflict.id != current)
            try await desktop.resolve(path, keeping: conflict.id)
            try await laptop.syncOnce()

            let kept = try #require(devices.read("Documents/List.txt", on: desktop))
            #expect(["milk, eggs", "milk, bread and butter"].contains(kept))
            #expect(devices.read("Documents/List.txt", on: laptop) == kept)
            for device in [laptop, desktop] {
                #expect(try await device.items().first { $0.path == path }?.hasUnresolvedConflicts == false)
                #expect(try await device.versions(of: path).versions.map(\.id) == [conflict.id])
            }
        }
    }
}
