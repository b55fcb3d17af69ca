import Foundation
import Grocery

/// The book's chapter 8: tags in the relational store, whose saves travel as transaction logs and merge property by
/// property. Each edit pair is concurrent for real: the desktop holds its store's imports while it edits, so its
/// edit is made before it has the laptop's, as when both devices edit before either syncs.
extension SyncDemo {
    typealias Tags = [GroceryApp.TagSummary]

    func tags(of milk: GroceryEntry) async throws {
        guard let laptop, let desktop else { return }
        narrator.step(8, "Tags in a relational store (chapter 8): edited on both devices at once, merged")
        let eggs = try await laptop.add("Eggs")
        try await waitForDownload(of: eggs, on: desktop)
        narrator.detail("laptop added Eggs; the desktop's query found it")
        narrator.detail(
            "the desktop holds its store's imports while it edits: each of its edits is made before it has the laptop's"
        )

        // Tags added on both devices: links merge as sets.
        var (onLaptop, onDesktop) = (try await laptop.watchTags(), try await desktop.watchTags())
        var held = try await desktop.holdingTagImports {
            try await laptop.tag(milk.fileName, with: "Dairy")
            try await desktop.tag(milk.fileName, with: "Weekly")
            return try await desktop.tags()
        }
        var start = ContinuousClock.now
        try Self.expect(Self.tagNames(of: milk, in: held) == ["Weekly"], "the desktop tagged Milk without Dairy", held)
        narrator.detail("laptop tagged Milk \"Dairy\"; desktop, without that yet, tagged Milk \"Weekly\"")
        _ = try await converged(onLaptop, onDesktop) { Self.tagNames(of: milk, in: $0) == ["Dairy", "Weekly"] }
        narrator.done(
            "tags added on both: both devices show Milk with Dairy, Weekly (links merge as sets), "
                + elapsed(since: start))

        // Different properties of one tag: its colour on the laptop, its items on the desktop; both kept.
        (onLaptop, onDesktop) = (try await laptop.watchTags(), try await desktop.watchTags())
        held = try await desktop.holdingTagImports {
            try await laptop.setColor("blue", ofTag: "Dairy")
            try await desktop.tag(eggs.fileName, with: "Dairy")
            return try await desktop.tags()
        }
        start = ContinuousClock.now
        try Self.expect(
            Self.tag("Dairy", in: held)?.color == nil, "the desktop tagged Eggs before Dairy was blue", held)
        narrator.detail("laptop made Dairy blue; desktop, without that yet, tagged Eggs \"Dairy\"")
        let dairy = "Dairy (blue): Eggs, Milk"
        _ = try await converged(onLaptop, onDesktop) { Self.tag("Dairy", in: $0).map(Self.line) == dairy }
        narrator.done("different properties: both devices show \(dairy) — both edits kept, \(elapsed(since: start))")

        try await sameProperty(laptop, desktop)
    }

    /// The same property of one tag set on both devices: the later save's value is kept, on both.
    private func sameProperty(_ laptop: GroceryApp, _ desktop: GroceryApp) async throws {
        // When the laptop's save had returned, and when the desktop's began.
        var laptopSaved = Date()
        var desktopSaving = Date()
        let held = try await desktop.holdingTagImports {
            try await laptop.setColor("green", ofTag: "Weekly")
            laptopSaved = Date()
            let before = try await desktop.tags()
            desktopSaving = Date()
            try await desktop.setColor("red", ofTag: "Weekly")
            return before
        }
        try Self.expect(Self.tag("Weekly", in: held)?.color == nil, "the desktop saw Weekly without a colour", held)
        narrator.detail("laptop made Weekly green; desktop, without that yet, made Weekly red")

        // Each device sends its change and imports the other's; the last round brings the laptop the desktop's.
        try await laptop.synchronize()
        try await desktop.synchronize()
        try await laptop.synchronize()
        let (laptopTags, desktopTags) = (try await laptop.tags(), try await desktop.tags())
        narrator.detail("both devices synced, each importing the other's change")
        let colors = (Self.tag("Weekly", in: laptopTags)?.color, Self.tag("Weekly", in: desktopTags)?.color)
        guard colors.0 == colors.1, let color = colors.0, ["green", "red"].contains(color) else {
            throw DemoFailure(
                "Weekly is \(colors.0 ?? "uncoloured") on the laptop, \(colors.1 ?? "uncoloured") on the desktop")
        }
        let winner = color == "red" ? "desktop" : "laptop"
        // Stamps carry the save's millisecond: a save in a later millisecond than another has the later stamp.
        let laterMillisecond = Self.milliseconds(desktopSaving) > Self.milliseconds(laptopSaved)
        if laterMillisecond, winner != "desktop" {
            throw DemoFailure("the desktop saved Weekly red later, yet the laptop's green was kept")
        }
        narrator.detail(
            "the rule: each property keeps the value with the later stamp (hybrid logical clock time, then device id), "
                + "so every device settles it alike")
        let why =
            laterMillisecond
            ? "the desktop saved it later, so its red wins on both"
            : "both saved in the same millisecond; the stamps' counters and device ids put the \(winner)'s later"
        narrator.done("the same property: both devices show Weekly \(color) — \(why)")
    }

    // MARK: Helpers

    /// Waits until `entry` is downloaded on `app`, as its live query reports it.
    private func waitForDownload(of entry: GroceryEntry, on app: GroceryApp) async throws {
        let list = try await app.watch()
        let found = try await Self.first(in: list, "\(entry.displayName) on the other device") { entries in
            entries.contains { $0.fileName == entry.fileName && $0.name != nil }
        }
        guard found != nil else { throw DemoFailure("\(entry.displayName) did not reach the other device") }
    }

    /// Waits until the tags of both devices satisfy `condition` and agree, as each device's imports report them;
    /// returns them.
    private func converged(
        _ laptop: AsyncThrowingStream<Tags, any Error>, _ desktop: AsyncThrowingStream<Tags, any Error>,
        _ condition: @escaping @Sendable (Tags) -> Bool
    ) async throws -> Tags {
        let seen = (
            try await Self.first(in: laptop, "the tags on the laptop", where: condition),
            try await Self.first(in: desktop, "the tags on the desktop", where: condition)
        )
        guard let onLaptop = seen.0, let onDesktop = seen.1, Self.lines(onLaptop) == Self.lines(onDesktop) else {
            throw DemoFailure(
                "the devices' tags differ: \(seen.0.map(Self.lines) ?? []), \(seen.1.map(Self.lines) ?? [])")
        }
        return onLaptop
    }

    /// The first element of `sequence` that satisfies `condition`, waiting at most 30 s for it.
    nonisolated private static func first<Sequence: AsyncSequence & Sendable>(
        in sequence: Sequence, _ what: String, where condition: @escaping @Sendable (Sequence.Element) -> Bool
    ) async throws -> Sequence.Element? where Sequence.Element: Sendable {
        try await withThrowingTaskGroup(of: Sequence.Element?.self) { group in
            group.addTask {
                for try await element in sequence where condition(element) { return element }
                return nil
            }
            group.addTask {
                // A deadline, not a poll: the answer comes from the sequence.
                try await Task.sleep(for: .seconds(30))
                throw DemoFailure("\(what) did not come within 30 s")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    nonisolated private static func tag(_ name: String, in tags: Tags) -> GroceryApp.TagSummary? {
        tags.first { $0.name == name }
    }

    /// The names of `entry`'s tags, in order.
    nonisolated private static func tagNames(of entry: GroceryEntry, in tags: Tags) -> [String] {
        tags.filter { $0.items.contains { $0.fileName == entry.fileName } }.map(\.name)
    }

    /// A tag as `grocery tags` prints it: "Dairy (blue): Eggs, Milk".
    nonisolated private static func line(_ tag: GroceryApp.TagSummary) -> String {
        let items = tag.items.isEmpty ? "(no items)" : tag.items.map(\.displayName).joined(separator: ", ")
        return "\(tag.name)\(tag.color.map { " (\($0))" } ?? ""): \(items)"
    }

    nonisolated private static func lines(_ tags: Tags) -> [String] { tags.map(line) }

    nonisolated private static func expect(_ condition: Bool, _ what: String, _ tags: Tags) throws {
        guard condition else { throw DemoFailure("expected \(what); the desktop has \(lines(tags))") }
    }

    nonisolated private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
