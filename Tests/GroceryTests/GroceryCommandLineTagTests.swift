import Foundation
import Testing
import UbiquityTestSupport

@Suite("The grocery command line: tags (chapter 8) on two devices", .timeLimit(.minutes(10)))
struct GroceryCommandLineTagTests {
    /// The lines `grocery tags` printed, each "TAG: ITEM, ITEM" (what a command says of its sync left out).
    private func tagLines(_ output: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter {
            !$0.hasPrefix("syncing with ") && !$0.hasPrefix("offline (")
        }
    }

    @Test("Items tagged on both devices show the same tags on both; untag, list --tag, bad names, delete")
    func tagsOnTwoDevices() async throws {
        try await GroceryMachine.with { machine in
            try await machine.grocery("laptop", "add", "Milk")
            try await machine.grocery("laptop", "add", "Eggs")
            #expect(try await machine.grocery("laptop", "tag", "Milk", "Dairy").contains("tagged Milk with Dairy"))
            try await machine.grocery("desktop", "tag", "Milk", "Weekly")
            // The desktop's sync brought the laptop's tag: "dairy" is that tag, not a new one.
            #expect(try await machine.grocery("desktop", "tag", "eggs", "dairy").contains("tagged Eggs with Dairy"))

            let laptop = tagLines(try await machine.grocery("laptop", "tags"))
            let desktop = tagLines(try await machine.grocery("desktop", "tags"))
            #expect(laptop == ["Dairy: Eggs, Milk", "Weekly: Milk"])
            #expect(desktop == laptop)
            #expect(try await machine.grocery("laptop", "tag", "milk", "DAIRY").contains("has the tag Dairy already"))

            // Untagged on the laptop: the tag stays, with no items, on both devices.
            #expect(
                try await machine.grocery("laptop", "untag", "Milk", "weekly").contains("took the tag Weekly from Milk")
            )
            #expect(
                tagLines(try await machine.grocery("desktop", "tags")) == ["Dairy: Eggs, Milk", "Weekly: (no items)"])
            let dairy = try await machine.list("desktop", tag: "Dairy")
            #expect(dairy.map { "\($0.light) \($0.name)" } == ["green Eggs", "green Milk"])
            #expect(try await machine.list("laptop", tag: "Weekly").isEmpty)
            #expect(
                try await machine.grocery("laptop", "list", "--tag", "Weekly").contains("no item has the tag Weekly"))

            // Bad input: a clear error, a failing status, nothing changed.
            let refusals: [([String], String)] = [
                (["tag", "Milk", "  "], "a tag's name cannot be empty"),
                (["tag", "Milk", "Weekly\tSale"], "cannot hold control characters"),
                (["tag", "Milk", "Line\nbreak"], "cannot hold control characters"),
                (["tag", "Milk", String(repeating: "x", count: 65)], "at most 64 characters"),
                (["tag", "Caviar", "Dairy"], "no item is named"),
                (["untag", "Eggs", "Weekly"], "Eggs has no tag \"Weekly\""),
                (["list", "--tag", "Frozen"], "no tag is named \"Frozen\""),
            ]
            for (arguments, message) in refusals {
                let refused = try await machine.run("laptop", arguments)
                #expect(refused.status != 0 && refused.output.contains(message), "\(arguments): \(refused.output)")
            }
            #expect(
                tagLines(try await machine.grocery("desktop", "tags")) == ["Dairy: Eggs, Milk", "Weekly: (no items)"])

            // Deleting an item takes its links; its tags stay.
            try await machine.grocery("desktop", "delete", "Eggs")
            #expect(tagLines(try await machine.grocery("laptop", "tags")) == ["Dairy: Milk", "Weekly: (no items)"])
            #expect(try await machine.list("desktop", tag: "dairy").map(\.name) == ["Milk"])
        }
    }

    @Test("A tag's colour set on one device shows on the other in `grocery tags`; cleared; bad colours refused")
    func tagColors() async throws {
        try await GroceryMachine.with { machine in
            try await machine.grocery("laptop", "add", "Milk")
            try await machine.grocery("laptop", "tag", "Milk", "Dairy")
            #expect(try await machine.grocery("desktop", "tag-color", "dairy", "blue").contains("Dairy is blue now"))
            #expect(tagLines(try await machine.grocery("laptop", "tags")) == ["Dairy (blue): Milk"])
            #expect(try await machine.grocery("laptop", "tag-color", "Dairy", "blue").contains("Dairy is blue already"))

            // Bad input: a clear error, a failing status, nothing changed.
            let refusals: [([String], String)] = [
                (["tag-color", "Dairy", "  "], "a tag's colour cannot be empty"),
                (["tag-color", "Dairy", "sky\tblue"], "cannot hold control characters"),
                (["tag-color", "Dairy", String(repeating: "x", count: 33)], "at most 32 characters"),
                (["tag-color", "Frozen", "white"], "no tag is named \"Frozen\""),
                (["tag-color", "Dairy"], "give a colour, or --clear"),
                (["tag-color", "Dairy", "red", "--clear"], "give a colour, or --clear"),
            ]
            for (arguments, message) in refusals {
                let refused = try await machine.run("desktop", arguments)
                #expect(refused.status != 0 && refused.output.contains(message), "\(arguments): \(refused.output)")
            }
            #expect(tagLines(try await machine.grocery("desktop", "tags")) == ["Dairy (blue): Milk"])

            #expect(
                try await machine.grocery("laptop", "tag-color", "Dairy", "--clear").contains("Dairy has no colour now")
            )
            #expect(tagLines(try await machine.grocery("desktop", "tags")) == ["Dairy: Milk"])
        }
    }

    @Test("The same tag made on both devices while one is offline is one tag; both devices' links to it stay")
    func tagsMadeConcurrentlyConverge() async throws {
        try await GroceryMachine.with { machine in
            try await machine.grocery("laptop", "add", "Milk")
            try await machine.grocery("laptop", "add", "Bread")
            #expect(try await machine.list("desktop").map(\.name) == ["Bread", "Milk"])

            // With the service down, each device makes "Dairy", and Milk's record, on its own.
            await machine.service.stop()
            try await machine.grocery("laptop", "tag", "Milk", "Dairy")
            try await machine.grocery("laptop", "tag", "Bread", "Bakery")
            try await machine.grocery("desktop", "tag", "Milk", "Dairy")
            try await machine.grocery("desktop", "tag", "Milk", "Family")
            let back = try await LocalService.start(in: machine.service.directory, port: machine.service.port)

            // Each device's next command sends what it saved and takes what the other did.
            try await machine.grocery("laptop", "tags")
            let desktop = tagLines(try await machine.grocery("desktop", "tags"))
            let laptop = tagLines(try await machine.grocery("laptop", "tags"))
            #expect(desktop == ["Bakery: Bread", "Dairy: Milk", "Family: Milk"])
            #expect(laptop == desktop)
            await back.stop()
        }
    }
}
