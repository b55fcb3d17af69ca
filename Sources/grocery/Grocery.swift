import ArgumentParser
import Foundation
import Grocery
import SyncEngine
import UbiquityKit

/// `grocery`: the seeds' Grocery app on the command line — a shared list kept in step across a person's devices.
@main
struct GroceryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grocery",
        abstract: "The Grocery sample: a shared grocery list, one document per item, kept in step across devices.",
        discussion: """
            Sign a device in first with `ubiquity login --profile NAME --root FOLDER …`; then act as it with
            `grocery --device NAME …`. Several devices can live on one machine, each with its own profile and folder.
            """,
        subcommands: [
            ListItems.self, Add.self, Rename.self, SetImage.self, Show.self, Delete.self, TagItem.self, Untag.self,
            Tags.self, TagColor.self, Undo.self, Redo.self, Conflicts.self, Resolve.self, Watch.self, Prefs.self,
            Quick.self,
        ],
        defaultSubcommand: ListItems.self)
}

/// The option every command takes: which device to act as.
struct DeviceOption: ParsableArguments {
    @Option(help: "The device profile to act as (see `ubiquity login --profile`).") var device = "device"

    /// Opens the app as the device, syncs, runs `body`, syncs what it changed up, and closes the app.
    func run(
        syncingAfter: Bool = true, _ body: @MainActor @Sendable (GroceryApp) async throws -> Void
    ) async throws {
        let profile = try DeviceProfile.load(device)
        try await Self.run(profile: profile, syncingAfter: syncingAfter, body)
    }

    @MainActor
    private static func run(
        profile: DeviceProfile, syncingAfter: Bool, _ body: @MainActor @Sendable (GroceryApp) async throws -> Void
    ) async throws {
        let app = GroceryApp(profile: profile)
        do {
            // Offline, the app works with what this device has; what it changes goes up with a later sync.
            do {
                try await withProgress("syncing with \(profile.server)") { try await app.synchronize() }
            } catch  where isOffline(error) {
                print("offline (\(error)): showing what this device has")
            }
            try await body(app)
            if syncingAfter {
                do {
                    try await app.synchronize()
                } catch  where isOffline(error) {
                    print("saved on this device; it goes to the other devices with the next sync (offline: \(error))")
                }
            }
        } catch {
            await app.close()
            throw error
        }
        await app.close()
    }
}

/// Whether a failed sync means the service could not be reached (the app goes on with what the device has), as
/// opposed to a refusal (a token no longer valid) or a local problem (the engine unavailable, the tag store
/// unreadable), which end the command.
func isOffline(_ error: any Error) -> Bool {
    if error is UbiquityError || error is GroceryError { return false }
    if let error = error as? ProtocolError {
        return ![.unauthorized, .tokenNotFound, .invalidAccount, .containerNotPermitted].contains(error.code)
    }
    return true
}

/// Runs `work`; when it takes more than a second (a first sync of many items), says what is going on, and again
/// every few seconds, with how long it has taken.
@MainActor
func withProgress<T>(_ what: String, _ work: () async throws -> T) async throws -> T {
    let start = ContinuousClock.now
    let reporter = Task {
        try await Task.sleep(for: .seconds(1))
        while true {
            let seconds = (ContinuousClock.now - start).components.seconds
            print("\(what)… \(seconds) s")
            try await Task.sleep(for: .seconds(3))
        }
    }
    defer { reporter.cancel() }
    return try await work()
}

/// Prints a download's progress on one line.
@Sendable func printProgress(_ label: String) -> @Sendable (Double) -> Void {
    { percent in print("\(label) \(Int(percent))%") }
}

/// An entry's line in the list: its light, name, id and what else is worth knowing.
func line(_ entry: GroceryEntry) -> String {
    let light = entry.light.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)
    let name = entry.displayName.padding(toLength: max(24, entry.displayName.count), withPad: " ", startingAt: 0)
    var notes: [String] = []
    if entry.hasImage == true { notes.append("image") }
    if entry.hasUnresolvedConflicts { notes.append("in conflict: `grocery conflicts \(entry.id.prefix(8))`") }
    return "\(light)\(name)  \(entry.id.prefix(8))\(notes.isEmpty ? "" : "  " + notes.joined(separator: ", "))"
}
