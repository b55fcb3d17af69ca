import ArgumentParser
import Foundation
import SyncEngine
import UbiquityProtocol

/// `ubiquity status --container ID`: who this device is, whether its engine runs, and how its items stand.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the device's sign-in, whether the container's engine runs, and what is waiting to sync.")

    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        let layout = try options.layout(container)
        if let profile = try? DeviceProfile.load(options.profile) {
            print("device:     \(profile.device.name), account \(profile.account) at \(profile.server)")
        } else {
            print("device:     not signed in (profile \(options.profile)); sign in with `ubiquity login`")
        }
        print("container:  \(layout.container) in \(layout.folder.path)")
        var transfers: [ItemID: ItemTransfer] = [:]
        var health: SyncHealth?
        if FileManager.default.fileExists(atPath: layout.socket.path),
            let client = try? await EngineSocketClient.connect(to: layout)
        {
            transfers = (try? await client.items().transfers) ?? [:]
            health = try? await client.health()
            await client.close()
            print("engine:     running (`ubiquity sync` or an app), reached over \(layout.socket.path)")
        } else {
            print("engine:     not running; start it with `ubiquity sync --container \(container)`")
        }
        if let health { Self.show(health) }
        if !layout.holdsSync, ContainerFolderRegister().contains(layout) {
            print(
                "folder:     set up on this device, and holds nothing of the container now: is its disk mounted? "
                    + "(`ubiquity sync --afresh` sets it up again there)")
            return
        }
        guard FileManager.default.fileExists(atPath: layout.stateDatabase.path) else {
            print("items:      none yet: the container has never synced on this device")
            return
        }
        let state = try LocalStateStore(url: layout.stateDatabase)
        let items = try state.items().filter { $0.kind != .directory }
        let placeholders = items.filter(\.isPlaceholder)
        let waiting = items.filter { $0.hasLocalChanges(in: layout) }
        let conflicts = items.filter(\.hasUnresolvedConflicts)
        let failed = items.filter { $0.uploadError != nil || $0.downloadError != nil }
        print(
            "items:      \(items.count) (\(items.count - placeholders.count) here, \(placeholders.count) not downloaded, "
                + "\(waiting.count) waiting to upload)")
        for item in waiting.prefix(10) { print("            to upload: \(item.path)") }
        if !conflicts.isEmpty {
            print("conflicts:  \(conflicts.map(\.path.string).joined(separator: ", ")) (see `ubiquity versions`)")
        }
        for item in failed {
            if let error = item.uploadError { print("error:      \(item.path): upload failed: \(error.message)") }
            if let error = item.downloadError { print("error:      \(item.path): download failed: \(error.message)") }
        }
        for (id, transfer) in transfers {
            guard let item = items.first(where: { $0.id == id }) else { continue }
            print("transfer:   \(transfer.direction.rawValue) \(item.path) \(Int(transfer.percentDone))%")
        }
        let queued = try state.queuedOperationCount()
        if queued > 0 { print("queued:     \(queued) version changes waiting for the service") }
        if waiting.isEmpty && conflicts.isEmpty && failed.isEmpty && transfers.isEmpty && queued == 0
            && health.map({ $0.failure == nil && $0.lastSucceeded != nil }) ?? true
        {
            print("in step:    nothing waits to sync")
        }
    }

    /// How the running engine's rounds have gone.
    private static func show(_ health: SyncHealth) {
        if let failure = health.failure {
            let rounds = failure.rounds == 1 ? "1 round" : "\(failure.rounds) rounds in a row"
            print("sync:       failing since \(failure.since.formatted(.iso8601)) (\(rounds)): \(failure.message)")
            if let last = health.lastSucceeded {
                print("            last in step at \(last.formatted(.iso8601))")
            }
        } else if let last = health.lastSucceeded {
            print("sync:       last in step at \(last.formatted(.iso8601))")
        } else {
            print("sync:       the first round is under way")
        }
        if let push = health.push {
            if push.connected {
                print("push:       connected since \(push.since.formatted(.iso8601))")
            } else {
                print(
                    "push:       not connected since \(push.since.formatted(.iso8601))\(push.reason.map { ": \($0)" } ?? ""); "
                        + "changes are found by polling meanwhile")
            }
        }
    }
}
