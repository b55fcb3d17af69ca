import ArgumentParser
import Foundation
import Grocery

struct ListItems: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the items, each with its state light.")
    @OptionGroup var options: DeviceOption
    @Option(help: "Only the items with this tag.") var tag: String?

    func run() async throws {
        try await options.run(syncingAfter: false) { app in
            if let tag {
                let entries = try await app.items(taggedWith: tag)
                if entries.isEmpty { print("no item has the tag \(tag)") }
                for entry in entries { print(line(entry)) }
                return
            }
            let entries = try await app.items()
            if entries.isEmpty { print("the list is empty; add an item with `grocery add NAME`") }
            for entry in entries { print(line(entry)) }
        }
    }
}

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add an item (a new Item_<uuid> document).")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item's name.") var name: String

    func run() async throws {
        try await options.run { app in
            let entry = try await app.add(name)
            print("added \(entry.displayName) (\(entry.id.prefix(8)))")
        }
    }
}

struct Rename: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rename an item.")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String
    @Argument(help: "The new name.") var name: String

    func run() async throws {
        try await options.run { app in
            let entry = try await app.rename(item, to: name)
            print("renamed \(item) to \(entry.displayName)")
        }
    }
}

struct SetImage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set-image", abstract: "Give an item an image (PNG).")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String
    @Argument(help: "A PNG file.") var file: String

    func run() async throws {
        try await options.run { app in
            let entry = try await app.setImage(item, from: URL(fileURLWithPath: file))
            print("set the image of \(entry.displayName)")
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an item, downloading it first when it is not on this device.")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String

    func run() async throws {
        try await options.run(syncingAfter: false) { app in
            var entry = try await app.find(item)
            if entry.downloadingStatus != .current {
                do {
                    try await app.download(entry, progress: printProgress("downloading \(entry.displayName)"))
                    entry = try await app.entry(at: entry.url)
                } catch  where entry.downloadingStatus == .downloaded {
                    print("could not get the latest version (\(error)); showing the copy on this device")
                }
            }
            let document = try await app.open(entry)
            print("name:   \(document.name)")
            print("image:  \(document.image.map { "\($0.count) bytes" } ?? "none")")
            print("state:  \(entry.light.rawValue)")
            print("id:     \(entry.id)")
            print("file:   \(entry.url.path)")
            try await document.closeDocument()
        }
    }
}

struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete an item on every device.")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String

    func run() async throws {
        try await options.run { app in
            let entry = try await app.find(item)
            try await app.delete(entry)
            print("deleted \(entry.displayName)")
        }
    }
}

struct TagItem: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag", abstract: "Tag an item (a tag of a new name is made; an existing one is found in any case)."
    )
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String
    @Argument(help: "The tag's name, such as Dairy.") var tag: String

    func run() async throws {
        try await options.run { app in
            let tagging = try await app.tag(item, with: tag)
            let name = tagging.entry.displayName
            print(tagging.changed ? "tagged \(name) with \(tagging.tag)" : "\(name) has the tag \(tagging.tag) already")
        }
    }
}

struct Untag: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take a tag from an item (the tag stays, with its other items).")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String
    @Argument(help: "The tag's name.") var tag: String

    func run() async throws {
        try await options.run { app in
            let tagging = try await app.untag(item, from: tag)
            print("took the tag \(tagging.tag) from \(tagging.entry.displayName)")
        }
    }
}

struct Tags: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the tags, each with its colour, if any, and its items.")
    @OptionGroup var options: DeviceOption

    func run() async throws {
        try await options.run(syncingAfter: false) { app in
            let tags = try await app.tags()
            if tags.isEmpty { print("there are no tags; tag an item with `grocery tag ITEM TAG`") }
            for tag in tags {
                let items = tag.items.isEmpty ? "(no items)" : tag.items.map(\.displayName).joined(separator: ", ")
                print("\(tag.name)\(tag.color.map { " (\($0))" } ?? ""): \(items)")
            }
        }
    }
}

struct TagColor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag-color", abstract: "Give a tag a colour, or take its colour away with --clear.")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The tag's name, in any case.") var tag: String
    @Argument(help: "The colour, such as blue or #3366FF.") var color: String?
    @Flag(help: "Take the tag's colour away.") var clear = false

    func validate() throws {
        guard (color == nil) == clear else { throw ValidationError("give a colour, or --clear (not both)") }
    }

    func run() async throws {
        try await options.run { app in
            let coloring = try await app.setColor(clear ? nil : color, ofTag: tag)
            let what = coloring.color.map { "is \($0)" } ?? "has no colour"
            print(coloring.changed ? "\(coloring.tag) \(what) now" : "\(coloring.tag) \(what) already")
        }
    }
}

struct Undo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Undo this device's last edit.")
    @OptionGroup var options: DeviceOption

    func run() async throws {
        try await options.run { app in print("undid \(try await app.undo())") }
    }
}

struct Redo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Redo the last undone edit.")
    @OptionGroup var options: DeviceOption

    func run() async throws {
        try await options.run { app in print("redid \(try await app.redo())") }
    }
}

struct Conflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an item's current version and its conflict versions, with the saving device and date.")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String

    func run() async throws {
        try await options.run(syncingAfter: false) { app in
            let versions = try await app.conflicts(of: item)
            if versions.count == 1 { print("no conflict") }
            for version in versions {
                let role = version.isCurrent ? "current " : "conflict"
                let date = version.modificationDate.map { $0.formatted(.iso8601) } ?? "?"
                print(
                    "\(role)  \(version.id)  \"\(version.name ?? "?")\"  saved on \(version.savingComputer ?? "?") at \(date)"
                )
            }
            if versions.count > 1 { print("resolve with `grocery resolve \(item) --keep current` or `--keep VERSION`") }
        }
    }
}

struct Resolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resolve a conflict: keep the current version, or a conflict version (it replaces the item).")
    @OptionGroup var options: DeviceOption
    @Argument(help: "The item: its name, or the start of its id.") var item: String
    @Option(help: "`current`, or the version to keep (see `grocery conflicts`).") var keep: String

    func run() async throws {
        try await options.run { app in
            let name = try await app.resolve(item, keeping: keep == "current" ? .current : .version(keep))
            print("resolved: the item is \(name.map { "\"\($0)\"" } ?? "kept") on every device")
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the list and redraw it whenever it changes, here or on another device (until interrupted).")
    @OptionGroup var options: DeviceOption
    @Option(help: "Stop after showing the list this many times.") var times: Int?

    func run() async throws {
        try await options.run(syncingAfter: false) { app in
            var shown = 0
            for await entries in try await app.watch() {
                // Written straight out (not buffered), so that a reader of a pipe sees each drawing at once.
                let count = entries.count == 1 ? "1 item" : "\(entries.count) items"
                var drawing = "— \(Date().formatted(date: .omitted, time: .standard)) — \(count)\n"
                for entry in entries { drawing += line(entry) + "\n" }
                FileHandle.standardOutput.write(Data(drawing.utf8))
                shown += 1
                if let times, shown >= times { break }
            }
        }
    }
}

struct Prefs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set the list's sort order (a preference kept in the key-value store, synced).")
    @OptionGroup var options: DeviceOption
    @Option(help: "name or newest.") var sortOrder: String?

    func run() async throws {
        try await options.run { app in
            if let sortOrder {
                guard let order = GroceryApp.SortOrder(rawValue: sortOrder) else {
                    throw ValidationError("the sort order is `name` or `newest`")
                }
                try await app.setSortOrder(order)
            }
            print("sort order: \(app.sortOrder.rawValue)")
        }
    }
}

struct Quick: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The quick list of the seeds' chapter 2: names kept in the key-value store (list, add, remove).")
    enum Action: String, ExpressibleByArgument { case list, add, remove }
    @OptionGroup var options: DeviceOption
    @Argument(help: "list, add or remove.") var action: Action = .list
    @Argument(help: "The name to add or remove.") var name: String?

    func run() async throws {
        try await options.run { app in
            switch action {
            case .list: break
            case .add, .remove:
                guard let name else { throw ValidationError("give the name to \(action.rawValue)") }
                if action == .add {
                    try await app.addToQuickList(name)
                } else {
                    try await app.removeFromQuickList(name)
                }
            }
            let list = app.quickList
            print(list.isEmpty ? "the quick list is empty" : list.joined(separator: "\n"))
        }
    }
}
