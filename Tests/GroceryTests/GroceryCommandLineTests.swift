import Foundation
import Grocery
import Testing
import UbiquityTestSupport

@Suite("The grocery command line: two devices on one machine", .timeLimit(.minutes(10)))
struct GroceryCommandLineTests {
    /// The id `grocery add` printed: "added NAME (ID)".
    private func id(from output: String) throws -> String {
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("added ") })
        let open = try #require(line.lastIndex(of: "("))
        return String(line[line.index(after: open)...].dropLast())
    }

    @Test("Add, list, image, rename, undo and redo, delete, preferences and the quick list reach the other device")
    func itemsFlowBetweenDevices() async throws {
        try await GroceryMachine.with { machine in
            try await machine.grocery("laptop", "add", "Milk")
            try await machine.grocery("laptop", "add", "Bread")
            var desktop = try await machine.list("desktop")
            #expect(desktop.map(\.name) == ["Bread", "Milk"], "sorted by name, the default order")
            #expect(desktop.allSatisfy { $0.light == "green" })

            // An image: larger than what downloads eagerly, so the desktop downloads it when shown.
            let png = PNGImage.make(width: 800, height: 600) { x, y in (UInt8(x & 0xFF), UInt8(y & 0xFF), 90) }
            let file = machine.home.appendingPathComponent("milk.png")
            try png.write(to: file)
            try await machine.grocery("laptop", "set-image", "Milk", file.path)
            let shown = try await machine.grocery("desktop", "show", "milk")
            #expect(shown.contains("name:   Milk"))
            #expect(shown.contains("image:  \(png.count) bytes"), "\(shown)")

            // A rename on the desktop, undone and redone there; the laptop follows each step.
            try await machine.grocery("desktop", "rename", "Bread", "Sourdough")
            #expect(try await machine.list("laptop").map(\.name) == ["Milk", "Sourdough"])
            #expect(try await machine.grocery("desktop", "undo").contains("undid Rename"))
            #expect(try await machine.list("laptop").map(\.name) == ["Bread", "Milk"])
            #expect(try await machine.grocery("desktop", "redo").contains("redid Rename"))
            #expect(try await machine.list("laptop").map(\.name) == ["Milk", "Sourdough"])
            let nothing = try await machine.run("laptop", ["redo"])
            #expect(nothing.status != 0 && nothing.output.contains("nothing to redo"))

            // Deleted on the laptop, gone on the desktop.
            try await machine.grocery("laptop", "delete", "Milk")
            desktop = try await machine.list("desktop")
            #expect(desktop.map(\.name) == ["Sourdough"])

            // Preferences and the quick list live in the key-value store.
            try await machine.grocery("laptop", "prefs", "--sort-order", "newest")
            #expect(try await machine.grocery("desktop", "prefs").contains("sort order: newest"))
            try await machine.grocery("desktop", "quick", "add", "Eggs")
            try await machine.grocery("desktop", "quick", "add", "Butter")
            #expect(
                try await machine.grocery("laptop", "quick").split(separator: "\n").suffix(2) == ["Eggs", "Butter"])

            // Bad input: a clear error, a failing status, nothing changed.
            let unknown = try await machine.run("laptop", ["show", "Caviar"])
            #expect(unknown.status != 0 && unknown.output.contains("no item is named"))
            let notPNG = machine.home.appendingPathComponent("notes.txt")
            try Data("not a picture".utf8).write(to: notPNG)
            let refused = try await machine.run("desktop", ["set-image", "Sourdough", notPNG.path])
            #expect(refused.status != 0 && refused.output.contains("not a PNG"))
            let empty = try await machine.run("desktop", ["rename", "Sourdough", "  "])
            #expect(empty.status != 0)
            #expect(try await machine.list("laptop").map(\.name) == ["Sourdough"])
        }
    }

    @Test("The same item renamed on both devices, one offline, is red on both; resolved from the command line on one")
    func conflictMadeAndResolved() async throws {
        try await GroceryMachine.with { machine in
            let bread = try id(from: try await machine.grocery("laptop", "add", "Bread"))
            #expect(try await machine.list("desktop").map(\.name) == ["Bread"])

            // The desktop renames while the service is down: saved there, not sent.
            await machine.service.stop()
            let offline = try await machine.grocery("desktop", "rename", bread, "Rye bread")
            #expect(offline.contains("next sync"))
            let back = try await LocalService.start(in: machine.service.directory, port: machine.service.port)
            try await machine.grocery("laptop", "rename", bread, "Spelt bread")
            // The desktop's next run sends its rename, made from the older version: a conflict, seen on both.
            #expect(try await machine.list("desktop").map(\.light) == ["red"])
            #expect(try await machine.list("laptop").map(\.light) == ["red"])

            let laptopVersions = try await machine.grocery("laptop", "conflicts", bread)
            let desktopVersions = try await machine.grocery("desktop", "conflicts", bread)
            func versions(_ output: String) -> [[String]] {
                output.split(separator: "\n").filter { $0.hasPrefix("current") || $0.hasPrefix("conflict") }
                    .map { $0.split(separator: " ", omittingEmptySubsequences: true).prefix(2).map(String.init) }
            }
            #expect(versions(laptopVersions).count == 2, "\(laptopVersions)")
            #expect(versions(laptopVersions) == versions(desktopVersions))
            #expect(
                laptopVersions.contains("saved on laptop") && laptopVersions.contains("saved on desktop"),
                "\(laptopVersions)")

            // Keep the conflict version: its name wins everywhere, and the light goes green on both.
            let conflict = try #require(versions(laptopVersions).first { $0[0] == "conflict" })[1]
            let loser = laptopVersions.contains("conflict  \(conflict)  \"Rye bread\"") ? "Spelt bread" : "Rye bread"
            let winner = loser == "Rye bread" ? "Spelt bread" : "Rye bread"
            let resolved = try await machine.grocery("laptop", "resolve", bread, "--keep", conflict)
            #expect(resolved.contains("\"\(winner)\""))
            #expect(try await machine.list("laptop").map { "\($0.light) \($0.name)" } == ["green \(winner)"])
            #expect(try await machine.list("desktop").map { "\($0.light) \($0.name)" } == ["green \(winner)"])
            #expect(try await machine.grocery("desktop", "conflicts", bread).contains("no conflict"))
            await back.stop()
        }
    }
    @Test("`grocery watch` redraws the list by itself when another device adds an item")
    func watchFollowsTheOtherDevice() async throws {
        try await GroceryMachine.with { machine in
            try await machine.grocery("laptop", "add", "Milk")
            let watch = try UbiquityProcess(
                ["watch", "--device", "desktop"], program: "grocery", environment: machine.environment,
                log: machine.log("desktop-watch"))
            #expect(await eventually { watch.output.contains("— 1 item\n") })
            try await machine.grocery("laptop", "add", "Apples")
            #expect(
                await eventually { watch.output.contains("— 2 items\n") && watch.output.contains("Apples") },
                "\(watch.outputTail())")
            #expect(await watch.stop(with: SIGTERM))
        }
    }
    @Test("An undo of an item the other device changed since is refused and dropped; the step before stays reachable")
    func undoAfterAnotherDevicesChange() async throws {
        try await GroceryMachine.with { machine in
            try await machine.grocery("laptop", "add", "Tea")
            try await machine.grocery("laptop", "add", "Coffee")
            try await machine.grocery("laptop", "rename", "Tea", "Green tea")
            try await machine.grocery("laptop", "rename", "Coffee", "Espresso")
            try await machine.grocery("desktop", "rename", "Espresso", "Ristretto")

            let refused = try await machine.run("laptop", ["undo"])
            #expect(refused.status != 0 && refused.output.contains("has changed since"), "\(refused.output)")
            #expect(try await machine.list("laptop").map(\.name) == ["Green tea", "Ristretto"], "nothing changed")
            #expect(try await machine.grocery("laptop", "undo").contains("undid Rename"))
            #expect(try await machine.list("desktop").map(\.name) == ["Ristretto", "Tea"])
            let none = try await machine.run("laptop", ["undo"])
            #expect(none.status != 0 && none.output.contains("nothing to undo"))
        }
    }
}
