import Foundation
import Grocery
import SyncEngine
import Synchronization
import UbiquityKit

/// The story of `ubiquity demo`: a sync service and two devices, "laptop" and "desktop", running the Grocery sample
/// in this process, each with its own container folder and engine; every step acts through the public API and
/// reports what the other device observed, and how long it took.
@MainActor
final class SyncDemo {
    let directory: URL
    let narrator: Narrator
    /// Items up to this size download as soon as they are heard of; larger ones (an item with its image) wait.
    static let eagerDownloadLimit: Int64 = 256 << 10
    private(set) var service: DemoService?
    private(set) var laptop: GroceryApp?
    private(set) var desktop: GroceryApp?
    private var desktopProfile: DeviceProfile?

    init(directory: URL, narrator: Narrator) {
        self.directory = directory
        self.narrator = narrator
    }

    var profiles: URL { directory.appendingPathComponent("config/ubiquity", isDirectory: true) }
    func root(of device: String) -> URL { directory.appendingPathComponent("devices/\(device)", isDirectory: true) }

    /// Runs the scripted part.
    func run() async throws {
        narrator.say("Ubiquity demo — one account, two devices, a shared grocery list (the iCloud book's Grocery app)")
        narrator.say("working in \(directory.path)")

        narrator.step(1, "Start the sync service and sign in two devices")
        let service = try await DemoService.start(in: directory.appendingPathComponent("service"))
        self.service = service
        let password = UUID().uuidString
        _ = try await service.service.addUser(name: "demo", password: password, quotaBytes: nil)
        let laptopProfile = try await service.signIn(
            account: "demo", password: password, device: "laptop", root: root(of: "laptop"), profiles: profiles)
        let desktopProfile = try await service.signIn(
            account: "demo", password: password, device: "desktop", root: root(of: "desktop"), profiles: profiles)
        self.desktopProfile = desktopProfile
        let laptop = open(laptopProfile)
        let desktop = open(desktopProfile)
        self.laptop = laptop
        self.desktop = desktop
        let laptopDocuments = try await laptop.documents()
        _ = try await desktop.documents()
        // The tag stores are added at launch, as the book adds its Core Data store.
        try await laptop.openTagStore()
        try await desktop.openTagStore()
        narrator.detail("laptop's documents: \(laptopDocuments.path)")
        narrator.done("service at \(service.address); account \"demo\"; laptop and desktop signed in")

        try await quickList(laptop, desktop)
        let (milk, bread) = try await documents(laptop, desktop)
        try await image(of: milk, laptop, desktop)
        try await conflict(over: bread, laptop)
        try await preferences()
        try await tags(of: milk)
    }

    private func open(_ profile: DeviceProfile) -> GroceryApp {
        GroceryApp(profile: profile, engine: .embedded, eagerDownloadLimit: Self.eagerDownloadLimit)
    }

    // MARK: Steps

    /// The seeds' chapter 2: the whole list as one value of the key-value store.
    private func quickList(_ laptop: GroceryApp, _ desktop: GroceryApp) async throws {
        narrator.step(2, "The quick list: one value in the key-value store")
        let heard = Heard()
        let changes = desktop.store.changes()
        let listening = Task { @MainActor in
            for await change in changes where change.keys.contains(GroceryApp.quickListKey) {
                heard.reasons.append(change.reason)
            }
        }
        defer { listening.cancel() }
        let start = ContinuousClock.now
        try await laptop.addToQuickList("Milk")
        try await laptop.addToQuickList("Eggs")
        _ = try await waitFor("the quick list on the desktop") { desktop.quickList == ["Milk", "Eggs"] ? true : nil }
        _ = try await waitFor("the desktop's change notification") { heard.reasons.last }
        let reason = heard.reasons.map { "\($0)" }.joined(separator: ", then ")
        narrator.done("desktop's store: \(desktop.quickList) — heard as \(reason), \(elapsed(since: start))")
    }

    /// The seeds' chapters 3 to 6: a document per item, found by a query, placeholders first.
    private func documents(_ laptop: GroceryApp, _ desktop: GroceryApp) async throws -> (GroceryEntry, GroceryEntry) {
        narrator.step(3, "Items as documents: added on the laptop, found by the desktop's query")
        let watcher = Watcher()
        let watching = Task { @MainActor in
            for await entries in try await desktop.watch() { watcher.see(entries) }
        }
        defer { watching.cancel() }
        let start = ContinuousClock.now
        var added: [GroceryEntry] = []
        for name in ["Milk", "Bread", "Zucchini"] { added.append(try await laptop.add(name)) }
        narrator.detail("laptop added \(added.map(\.displayName).joined(separator: ", "))")
        for entry in added {
            let name = entry.displayName
            _ = try await waitFor("\(name) downloaded on the desktop") { watcher.downloaded[entry.fileName] }
            let first = watcher.firstSeen[entry.fileName]
            let how =
                first?.light == .notDownloaded
                ? "appeared as a placeholder, then downloaded"
                : "appeared already downloaded (small items come down at once)"
            narrator.detail("desktop: \(name) \(how)")
        }
        narrator.done("the desktop's query lists \(watcher.latest.map(\.displayName)), \(elapsed(since: start))")
        return (added[0], added[1])
    }

    /// An image: uploaded in content-defined chunks; retouched, only the chunks around the change go up again.
    private func image(of milk: GroceryEntry, _ laptop: GroceryApp, _ desktop: GroceryApp) async throws {
        guard let service else { return }
        narrator.step(4, "An image: uploaded in chunks; retouched, only the changed chunks go up")
        let picture = Self.picture(retouched: false)
        let file = directory.appendingPathComponent("milk.png")
        try picture.write(to: file)
        var (chunks, bytes) = (
            service.figure("ubiquity_chunks_in_total"), service.figure("ubiquity_chunk_bytes_in_total")
        )
        _ = try await laptop.setImage(milk.fileName, from: file)
        try await laptop.synchronize()
        var sent = (
            service.figure("ubiquity_chunks_in_total") - chunks, service.figure("ubiquity_chunk_bytes_in_total") - bytes
        )
        narrator.detail(
            "laptop set a \(Self.size(Int64(picture.count))) image: \(sent.0) chunks (\(Self.size(sent.1))) uploaded")
        let wholeChunks = sent.0

        let arrived = try await waitFor("the image's version on the desktop") {
            let entry = try await desktop.items().first { $0.fileName == milk.fileName }
            // The new version is known (its size) and either here (current) or left as a placeholder: an item
            // that is merely "downloaded" still shows an older version while the new one comes down.
            return entry.flatMap {
                $0.size > Int64(picture.count) && $0.downloadingStatus != .downloaded ? $0 : nil
            }
        }
        if arrived.downloadingStatus == .notDownloaded {
            narrator.detail(
                "desktop: Milk is now \(Self.size(arrived.size)), over what downloads at once: a placeholder")
            let reported = Mutex(Set<Int>())
            let narrator = narrator
            try await desktop.download(arrived) { percent in
                let step = Int(percent) / 25 * 25
                if reported.withLock({ $0.insert(step).inserted }) {
                    narrator.detail("desktop downloading Milk… \(step)%")
                }
            }
        }
        let opened = try await desktop.open(try await desktop.find(milk.fileName))
        let seen = opened.image?.count ?? 0
        try await opened.closeDocument()
        guard seen == picture.count else {
            throw DemoFailure("the desktop's image has \(seen) bytes, not \(picture.count)")
        }
        narrator.detail("desktop opened Milk: its image has \(Self.size(Int64(seen)))")

        let retouched = Self.picture(retouched: true)
        try retouched.write(to: file)
        (chunks, bytes) = (service.figure("ubiquity_chunks_in_total"), service.figure("ubiquity_chunk_bytes_in_total"))
        _ = try await laptop.setImage(milk.fileName, from: file)
        try await laptop.synchronize()
        sent = (
            service.figure("ubiquity_chunks_in_total") - chunks, service.figure("ubiquity_chunk_bytes_in_total") - bytes
        )
        narrator.done(
            "retouched (a band of \(Self.retouchedRows) rows): \(sent.0) of \(wholeChunks) chunks uploaded "
                + "(\(Self.size(sent.1)) of \(Self.size(Int64(retouched.count))))")
    }

    /// The same item edited on both devices while the desktop is offline: a conflict on both, resolved on one.
    private func conflict(over bread: GroceryEntry, _ laptop: GroceryApp) async throws {
        guard let desktop, let desktopProfile else { return }
        narrator.step(5, "A conflict: Bread renamed on both devices while the desktop is offline")
        await desktop.close()
        self.desktop = nil
        let offline = GroceryItemDocument(
            fileURL: root(of: "desktop").appendingPathComponent(
                "\(GroceryApp.container.string)/Documents/\(bread.fileName)", isDirectory: true))
        try await offline.openDocument()
        offline.rename(to: "Rye bread")
        try await offline.closeDocument()
        narrator.detail("desktop (offline, its engine stopped) renamed Bread to \"Rye bread\"")
        _ = try await laptop.rename(bread.fileName, to: "Spelt bread")
        try await laptop.synchronize()
        narrator.detail("laptop (online) renamed Bread to \"Spelt bread\"")

        let start = ContinuousClock.now
        let back = open(desktopProfile)
        self.desktop = back
        _ = try await back.documents()
        try await back.openTagStore()
        narrator.detail("desktop is back online")
        for (name, app) in [("laptop", laptop), ("desktop", back)] {
            _ = try await waitFor("the conflict on the \(name)") {
                try await app.items().first { $0.fileName == bread.fileName && $0.light == .red }
            }
        }
        let versions = try await laptop.conflicts(of: bread.fileName)
        for version in versions {
            narrator.detail(
                "\(version.isCurrent ? "current " : "conflict"): \"\(version.name ?? "?")\" saved on "
                    + "\(version.savingComputer ?? "?")")
        }
        narrator.done("both devices show Bread red (in conflict), \(elapsed(since: start))")

        narrator.step(6, "Resolve on the laptop, keeping the other version; the desktop follows")
        guard let loser = versions.first(where: { !$0.isCurrent }) else { throw DemoFailure("no conflict version") }
        let kept = try await laptop.resolve(bread.fileName, keeping: .version(loser.id))
        let resolvedAt = ContinuousClock.now
        try await laptop.synchronize()
        _ = try await waitFor("the resolution on the desktop") {
            try await back.items().first { $0.fileName == bread.fileName && $0.light == .green && $0.name == kept }
        }
        narrator.done("Bread is \"\(kept ?? "?")\" and green on both devices, \(elapsed(since: resolvedAt))")
    }

    /// A preference in the key-value store.
    private func preferences() async throws {
        guard let laptop, let desktop else { return }
        narrator.step(7, "A preference: the sort order, set on the laptop")
        let start = ContinuousClock.now
        try await laptop.setSortOrder(.newest)
        _ = try await waitFor("the sort order on the desktop") { desktop.sortOrder == .newest ? true : nil }
        narrator.done("the desktop lists newest first too, \(elapsed(since: start))")
    }

    /// Where everything lives, and how to keep playing.
    func printWhereThingsAre(keepRunning: Bool) {
        guard let service else { return }
        narrator.say("\nWhere things are")
        narrator.say("    service:  \(service.address), data in \(service.dataDirectory.path)")
        for device in ["laptop", "desktop"] {
            narrator.say(
                "    \(device.padding(toLength: 8, withPad: " ", startingAt: 0))  \(root(of: device).path)/\(GroceryApp.container.string)/Documents"
            )
        }
        narrator.say("    profiles: \(profiles.path)")
        guard keepRunning else { return }
        let environment = "XDG_CONFIG_HOME=\(profiles.deletingLastPathComponent().path)"
        narrator.say("\nKeep playing in another terminal (the devices' engines run here):")
        narrator.say("    \(environment) swift run grocery list --device desktop")
        narrator.say("    \(environment) swift run grocery add Apples --device laptop")
        narrator.say("    \(environment) swift run grocery watch --device desktop")
        narrator.say("    \(environment) swift run grocery tags --device laptop")
        narrator.say("Stop with Ctrl-C.")
    }

    func close() async {
        await laptop?.close()
        await desktop?.close()
        await service?.stop()
    }

    // MARK: Helpers

    static let retouchedRows = 24

    /// A 1024 × 768 picture; retouched, a band of rows in the middle is brighter.
    static func picture(retouched: Bool) -> Data {
        PNGImage.make(width: 1024, height: 768) { x, y in
            let band = retouched && (372..<(372 + retouchedRows)).contains(y)
            return (UInt8((x / 4) & 0xFF), UInt8((y / 3) & 0xFF), band ? 250 : UInt8((x + y) / 8 & 0xFF))
        }
    }

    static func size(_ bytes: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: bytes, countStyle: .binary)
    }

    func elapsed(since start: ContinuousClock.Instant) -> String {
        let duration = ContinuousClock.now - start
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return "in \(milliseconds) ms"
    }

    /// Waits (at most 30 s) until `check` gives a value.
    private func waitFor<T>(_ what: String, _ check: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let value = try await check() { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DemoFailure("\(what) did not happen within 30 s")
    }
}

/// The reasons of the key-value changes the desktop heard.
@MainActor
final class Heard {
    var reasons: [UbiquitousKeyValueStore.ChangeReason] = []
}

/// What the desktop's live query showed: when each item first appeared, in what state, and when it was downloaded.
@MainActor
final class Watcher {
    var firstSeen: [String: GroceryEntry] = [:]
    var downloaded: [String: Bool] = [:]
    var latest: [GroceryEntry] = []

    func see(_ entries: [GroceryEntry]) {
        latest = entries
        for entry in entries {
            if firstSeen[entry.fileName] == nil { firstSeen[entry.fileName] = entry }
            if entry.name != nil { downloaded[entry.fileName] = true }
        }
    }
}
