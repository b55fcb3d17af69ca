import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

extension EngineKillRun {
    /// Files both devices edit (one in a folder), and files only one of them does.
    static let shared = [
        "Documents/List.txt", "Documents/Recipes.txt", "Documents/Notes.md", "Documents/Shops/Weekly.txt",
    ]
    static let laptopOnly = ["Documents/Laptop.txt", "Documents/Shops/Laptop Plan.txt"]
    static let desktopOnly = ["Documents/Desktop.txt", "Documents/Shops/Desktop Plan.txt"]

    /// The desktop makes the shared and its own files, the laptop its own ones (found by its engine's first scan).
    func makeFirstItems() async throws {
        var random = SeededRandom(seed: seed ^ 0x5EED)
        for name in Self.shared + Self.desktopOnly {
            try await save(on: Self.desktopName, at: try ItemPath(name), how: .replace, random: &random)
        }
        try await desktop.syncOnce()
        for name in Self.laptopOnly {
            try await save(on: Self.laptopName, at: try ItemPath(name), how: .coordinatedReplace, random: &random)
        }
        let paths = try (Self.shared + Self.desktopOnly).map { try ItemPath($0) }
        ledger.withLock { $0.allow(paths, on: Self.desktopName) }
    }

    /// Waits until the laptop holds the desktop's first files and the service its own; then the laptop may edit the
    /// shared files.
    func waitForFirstSync() async throws {
        let expected = ledger.withLock { $0.lastSaves(of: Self.desktopName) }
        let laptop = laptop
        let arrived = try await eventually(within: .seconds(30)) {
            try await self.confirmWaitingSaves()
            let waiting = self.ledger.withLock { $0.unconfirmed.count }
            let here = try await offPool {
                expected.values.allSatisfy { save in
                    (try? Data(contentsOf: laptop.url(of: save.path))).flatMap { try? contentHash($0) } == save.hash
                }
            }
            return waiting == 0 && here
        }
        try #require(arrived, "the laptop's first round did not finish: \(engineLogTail)")
        let shared = try Self.shared.map { try ItemPath($0) }
        ledger.withLock { $0.allow(shared, on: Self.laptopName) }
    }

    /// Saves on the laptop until the streams stop: new files, and new contents of files whose last save the service
    /// shows, written as applications write them.
    func saveOnLaptop(random: SeededRandom) async throws {
        var random = random
        while !streamsStopped.load(ordering: .sequentiallyConsistent) {
            try await timed("looking for saves on the service") { try await confirmWaitingSaves() }
            try await saveSomething(on: Self.laptopName, newFileChance: 20, random: &random)
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...200, using: &random)))
        }
    }

    /// Edits on the desktop until the streams stop, syncing after each edit: the laptop downloads them.
    func editOnDesktop(random: SeededRandom) async throws {
        var random = random
        while !streamsStopped.load(ordering: .sequentiallyConsistent) {
            try await saveSomething(on: Self.desktopName, newFileChance: 15, random: &random)
            try await syncDesktop()
            try await Task.sleep(for: .milliseconds(Int.random(in: 50...300, using: &random)))
        }
    }

    /// After the last kill, before the engine starts again: a few more saves on the laptop.
    func saveWhileDead(random: inout SeededRandom) async throws {
        try await confirmWaitingSaves()
        for _ in 0..<4 { try await saveSomething(on: Self.laptopName, newFileChance: 25, random: &random) }
    }

    /// One round of the desktop, tried again (a few times) when it fails.
    func syncDesktop() async throws {
        for attempt in 1...5 {
            do {
                return try await timed("desktop round") { try await desktop.syncOnce() }
            } catch  where attempt < 5 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Marks the laptop's saves the service now shows (as any version of the item at the path) as seen.
    func confirmWaitingSaves() async throws {
        let waiting = ledger.withLock { $0.unconfirmed }
        guard !waiting.isEmpty else { return }
        let items = try await observer.items(in: Self.container).items
        for (path, save) in waiting {
            guard let item = items.first(where: { !$0.isDeleted && $0.path == path }) else { continue }
            let detail = try await observer.item(item.id, in: Self.container)
            if detail.versions.contains(where: { $0.contentHash == save.hash }) {
                ledger.withLock { $0.confirm(path) }
            }
        }
    }

    /// Saves a new file (with `newFileChance` percent) or a new content of a file the device may save now.
    private func saveSomething(on device: String, newFileChance: Int, random: inout SeededRandom) async throws {
        let confirming = device == Self.laptopName
        let savable = ledger.withLock { $0.savable(on: device, confirming: confirming) }
        let path: ItemPath
        if Int.random(in: 0..<100, using: &random) < newFileChance || savable.isEmpty {
            let number = ledger.withLock { $0.nextNewFile(of: device) }
            let folder = Bool.random(using: &random) ? "Documents" : "Documents/Shops"
            path = try ItemPath("\(folder)/New \(device) \(number).txt")
        } else {
            path = savable.randomElement(using: &random)!
        }
        let how: AppSave
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<50: how = .coordinatedReplace
        case 50..<75: how = .replace
        default: how = .overwrite
        }
        try await save(on: device, at: path, how: device == Self.laptopName ? how : .replace, random: &random)
        if !confirming { ledger.withLock { $0.allow([path], on: device) } }
    }

    /// Writes a new, unique content of random length at `path` on `device` and records it.
    private func save(on device: String, at path: ItemPath, how: AppSave, random: inout SeededRandom) async throws {
        let length: Int
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<70: length = Int.random(in: 0...(16 << 10), using: &random)
        case 70..<95: length = Int.random(in: (16 << 10)...(256 << 10), using: &random)
        default: length = Int.random(in: (256 << 10)...(900 << 10), using: &random)
        }
        let contents = Data("\(device) \(UUID()) \(path)\n".utf8) + random.bytes(length)
        let url = (device == Self.laptopName ? laptop : desktop.layout).url(of: path)
        try await timed("\(how.rawValue) save") { try await offPool { try how.write(contents, to: url) } }
        let kills = kills
        try ledger.withLock {
            _ = try $0.record(
                device, path, contents, how: how.rawValue, kills: kills, confirming: device == Self.laptopName)
        }
    }
}

/// Polls `condition` until it holds or `limit` passes (a guard against hanging, not a timing assertion).
func eventually(
    within limit: Duration, every pause: Duration = .milliseconds(100), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: pause)
    }
    return try await condition()
}
