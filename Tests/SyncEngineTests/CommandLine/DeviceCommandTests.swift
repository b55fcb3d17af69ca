import ChildProcess
import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `ubiquity login`, `sync --once`, `ls` and `download`, run as a user would: the real executable, two device
/// profiles on one machine, a live service.
@Suite("ubiquity login, sync, ls and download")
struct DeviceCommandTests {
    struct Run {
        var status: Int32
        var output: String
    }

    /// Runs the built `ubiquity` with `arguments`, `input` on standard input, in an environment whose config and
    /// data folders are the test's own.
    private func ubiquity(_ arguments: [String], input: String = "", home: URL) async throws -> Run {
        try await offPool { try Self.run(arguments, input: input, home: home) }
    }

    private static func run(_ arguments: [String], input: String, home: URL) throws -> Run {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let executable = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("ubiquity")
        let process = try ChildProcess(
            executable, arguments: arguments, environment: environment(home: home), standardInput: .pipe,
            standardOutput: .pipe, standardError: .sameAsStandardOutput)
        try process.writeInput(Data(input.utf8))
        process.closeInput()
        let data = try process.readAllOutput()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    @Test("Two profiles on one machine: sign in, sync a file across, see it listed as a placeholder, download it")
    func profilesSyncThroughTheCommandLine() async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-cli-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        _ = try await ServiceClient(baseURL: service.baseURL).register(name: "ada", password: "correct horse")
        let container = "TEAM.com.example.grocery"
        for device in ["laptop", "desktop"] {
            let login = try await ubiquity(
                ["login", "--server", service.baseURL, "--account", "ada", "--device", device, "--profile", device],
                input: "correct horse\n", home: home)
            #expect(login.status == 0, "login: \(login.output)")
        }
        let profile = home.appendingPathComponent("config/ubiquity/laptop.json")
        let permissions = try FileManager.default.attributesOfItem(atPath: profile.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600, "the token is readable by the owner only")
        let wrong = try await ubiquity(
            ["login", "--server", service.baseURL, "--account", "ada", "--device", "x", "--profile", "x"],
            input: "wrong password\n", home: home)
        #expect(wrong.status != 0)
        #expect(wrong.output.contains("invalidCredentials") || wrong.output.contains("wrong"))

        let laptopRoot = home.appendingPathComponent("laptop").path
        let desktopRoot = home.appendingPathComponent("desktop").path
        let documents = URL(fileURLWithPath: laptopRoot).appendingPathComponent("\(container)/Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        let text = String(repeating: "a big grocery list ", count: 100_000)  // above the eager download limit
        try Data(text.utf8).write(to: documents.appendingPathComponent("Big.txt"))
        let up = try await ubiquity(
            ["sync", "--once", "--container", container, "--profile", "laptop", "--root", laptopRoot], home: home)
        #expect(up.status == 0, "sync on the laptop: \(up.output)")
        let down = try await ubiquity(
            ["sync", "--once", "--container", container, "--profile", "desktop", "--root", desktopRoot], home: home)
        #expect(down.status == 0, "sync on the desktop: \(down.output)")

        let listing = try await ubiquity(
            ["ls", "--container", container, "--profile", "desktop", "--root", desktopRoot], home: home)
        #expect(listing.output.contains("Documents/Big.txt"))
        #expect(listing.output.contains("not downloaded"))
        let before = try await ubiquity(
            ["status", "--container", container, "--profile", "desktop", "--root", desktopRoot], home: home)
        #expect(before.status == 0, "status: \(before.output)")
        #expect(before.output.contains("device:     desktop, account ada"), "status: \(before.output)")
        #expect(before.output.contains("engine:     not running"), "status: \(before.output)")
        #expect(
            before.output.contains("items:      1 (0 here, 1 not downloaded, 0 waiting to upload)"), "\(before.output)")
        #expect(before.output.contains("in step"), "status: \(before.output)")
        let fetched = try await ubiquity(
            ["download", "Documents/Big.txt", "--container", container, "--profile", "desktop", "--root", desktopRoot],
            home: home)
        #expect(fetched.status == 0, "download: \(fetched.output)")
        let copy = URL(fileURLWithPath: desktopRoot).appendingPathComponent("\(container)/Documents/Big.txt")
        #expect(try Data(contentsOf: copy) == Data(text.utf8))
        // Changed here and not synced since: the status names it as waiting to upload.
        try Data("shorter".utf8).write(to: copy)
        let after = try await ubiquity(
            ["status", "--container", container, "--profile", "desktop", "--root", desktopRoot], home: home)
        #expect(
            after.output.contains("items:      1 (1 here, 0 not downloaded, 1 waiting to upload)"), "\(after.output)")
        #expect(after.output.contains("to upload: Documents/Big.txt"), "status: \(after.output)")
        #expect(!after.output.contains("in step"))
        let synced = try await ubiquity(
            ["sync", "--once", "--container", container, "--profile", "desktop", "--root", desktopRoot], home: home)
        #expect(synced.status == 0, "sync: \(synced.output)")
        let clean = try await ubiquity(
            ["status", "--container", container, "--profile", "desktop", "--root", desktopRoot], home: home)
        #expect(clean.output.contains("in step"), "status: \(clean.output)")

        // The key-value store: set on one device, read on the other.
        let laptopOptions = ["--container", container, "--profile", "laptop", "--root", laptopRoot]
        let desktopOptions = ["--container", container, "--profile", "desktop", "--root", desktopRoot]
        let set = try await ubiquity(["kv", "set", "sortOrder", "aisle"] + laptopOptions, home: home)
        #expect(set.status == 0, "kv set: \(set.output)")
        let count = try await ubiquity(["kv", "set", "count", "3", "--type", "integer"] + laptopOptions, home: home)
        #expect(count.status == 0, "kv set: \(count.output)")
        let read = try await ubiquity(["kv", "get"] + desktopOptions, home: home)
        #expect(read.output.contains(#"sortOrder = {"type":"string","value":"aisle"}"#), "kv get: \(read.output)")
        #expect(read.output.contains(#"count = {"type":"integer","value":3}"#), "kv get: \(read.output)")
        let bad = try await ubiquity(["kv", "set", "count", "three", "--type", "integer"] + laptopOptions, home: home)
        #expect(bad.status != 0)
        await service.remove()
    }

    @Test(
        "With `ubiquity sync` running, download and evict from another process go through its engine's socket, and status tells how its rounds go"
    )
    func commandsReachTheRunningEngine() async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-cli-engine-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        _ = try await ServiceClient(baseURL: service.baseURL).register(name: "ada", password: "correct horse")
        let container = "TEAM.com.example.grocery"
        let login = try await ubiquity(
            ["login", "--server", service.baseURL, "--account", "ada", "--device", "desktop", "--profile", "desktop"],
            input: "correct horse\n", home: home)
        #expect(login.status == 0, "login: \(login.output)")
        // Another device puts a large file (a placeholder on the desktop) on the service.
        let laptop = try ContainerSync(
            layout: ContainerLayout(root: home.appendingPathComponent("laptop"), container: try ContainerID(container)),
            client: try await service.signIn(account: "ada", device: "laptop"),
            device: SavingDevice(id: DeviceID(), name: "laptop"))
        let text = String(repeating: "a big grocery list ", count: 100_000)
        try Data(text.utf8).write(to: laptop.layout.documents.appendingPathComponent("Big.txt"))
        try await laptop.syncOnce()

        let desktopRoot = home.appendingPathComponent("desktop")
        let layout = ContainerLayout(root: desktopRoot, container: try ContainerID(container))
        let engine = try Self.start(
            ["sync", "--container", container, "--profile", "desktop", "--root", desktopRoot.path], home: home)
        defer {
            engine.terminate()
            engine.waitUntilExit()
        }
        let path = try ItemPath("Documents/Big.txt")
        var client: EngineSocketClient?
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let connected = try? await EngineSocketClient.connect(to: layout),
                try await connected.item(at: path) != nil
            {
                client = connected
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let running = try #require(client, "the engine started and heard of the item")
        let events = try await running.events()
        let heard = Task {
            for await event in events {
                if case .progress(_, let at, let transfer) = event, at == path, transfer?.direction == .download {
                    return true
                }
            }
            return false
        }

        let arguments = ["--container", container, "--profile", "desktop", "--root", desktopRoot.path]
        let fetched = try await ubiquity(["download", path.string] + arguments, home: home)
        #expect(fetched.status == 0, "download: \(fetched.output)")
        #expect(try Data(contentsOf: layout.url(of: path)) == Data(text.utf8))
        #expect(await finished(heard), "the running engine did the download")
        let evicted = try await ubiquity(["evict", path.string] + arguments, home: home)
        #expect(evicted.status == 0, "evict: \(evicted.output)")
        #expect(!FileManager.default.fileExists(atPath: layout.url(of: path).path))
        #expect(try await running.item(at: path)?.isPlaceholder == true)

        // `status` asks the running engine how its rounds went and whether it hears pushes: in step, then failing
        // once the service is gone (a state database with nothing waiting says nothing of that).
        try await running.syncNow()
        #expect(try await Self.push(of: running, connected: true), "push never came up")
        let healthy = try await ubiquity(["status"] + arguments, home: home)
        #expect(healthy.output.contains("sync:       last in step at "), "\(healthy.output)")
        #expect(healthy.output.contains("push:       connected since "), "\(healthy.output)")
        #expect(healthy.output.contains("in step:    nothing waits to sync"), "\(healthy.output)")
        let down = try await running.events()
        await service.remove()
        await #expect(throws: (any Error).self) { try await running.syncNow() }
        let wentDown = Task {
            for await event in down {
                if case .pushChanged(false, let reason?) = event { return !reason.isEmpty }
            }
            return false
        }
        #expect(await finished(wentDown, within: .seconds(30)), "push never went down")
        let failing = try await ubiquity(["status"] + arguments, home: home)
        #expect(failing.output.contains("sync:       failing since "), "\(failing.output)")
        #expect(failing.output.contains("cannot reach the service at "), "\(failing.output)")
        #expect(failing.output.contains("last in step at "), "\(failing.output)")
        #expect(failing.output.contains("push:       not connected since "), "\(failing.output)")
        #expect(!failing.output.contains("in step:"), "\(failing.output)")
        await running.close()
    }

    /// Whether the running engine's push connection is, or becomes within 30 s, `connected`: its health says so, or
    /// the event telling the change arrives (listened for before the health is read, so none falls between).
    private static func push(of engine: EngineSocketClient, connected: Bool) async throws -> Bool {
        let events = try await engine.events()
        if try await engine.health().push?.connected == connected { return true }
        let changed = Task {
            for await event in events {
                if case .pushChanged(connected, _) = event { return true }
            }
            return false
        }
        return await finished(changed, within: .seconds(30))
    }

    @Test("A command that cannot reach the service says so plainly: its address and why")
    func unreachableServiceIsSaidPlainly() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-cli-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let (socket, port) = try Loopback.refusingPort()
        defer { close(socket) }
        let refused = "http://127.0.0.1:\(port)"

        let login = try await ubiquity(
            ["login", "--server", refused, "--account", "ada", "--device", "laptop"], input: "correct horse\n",
            home: home)
        #expect(login.status != 0)
        #expect(login.output.contains("cannot reach the service at \(refused): connection refused"), "\(login.output)")

        // Signed in while the service ran; then the profile names the refusing address (a service moved away): a
        // sync round says the same.
        let service = try await LocalService.start()
        _ = try await ServiceClient(baseURL: service.baseURL).register(name: "ada", password: "correct horse")
        let signedIn = try await ubiquity(
            ["login", "--server", service.baseURL, "--account", "ada", "--device", "laptop"], input: "correct horse\n",
            home: home)
        #expect(signedIn.status == 0, "login: \(signedIn.output)")
        await service.remove()
        let profile = home.appendingPathComponent("config/ubiquity/device.json")
        var fields = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: profile)) as? [String: Any])
        fields["server"] = refused
        try JSONSerialization.data(withJSONObject: fields).write(to: profile)
        let sync = try await ubiquity(["sync", "--container", "TEAM.com.example.grocery", "--once"], home: home)
        #expect(sync.status != 0)
        #expect(sync.output.contains("cannot reach the service at \(refused): connection refused"), "\(sync.output)")
    }

    @Test(
        "A container folder set up before and gone now (its disk not mounted yet) is refused and nothing is made; once back it syncs; --afresh sets it up again"
    )
    func missingFolderIsRefused() async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-cli-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        _ = try await ServiceClient(baseURL: service.baseURL).register(name: "ada", password: "correct horse")
        let container = "TEAM.com.example.grocery"
        var options: [String: [String]] = [:]
        for device in ["laptop", "desktop"] {
            let login = try await ubiquity(
                ["login", "--server", service.baseURL, "--account", "ada", "--device", device, "--profile", device],
                input: "correct horse\n", home: home)
            #expect(login.status == 0, "login: \(login.output)")
            let root = home.appendingPathComponent("\(device)-disk/ubiquity").path
            options[device] = ["--container", container, "--profile", device, "--root", root]
        }
        func sync(_ device: String, _ extra: [String] = []) async throws -> Run {
            try await ubiquity(["sync", "--once"] + extra + options[device, default: []], home: home)
        }
        let laptop = home.appendingPathComponent("laptop-disk/ubiquity/\(container)/Documents")
        let desktopDisk = home.appendingPathComponent("desktop-disk")
        let desktop = desktopDisk.appendingPathComponent("ubiquity/\(container)/Documents")
        try FileManager.default.createDirectory(at: laptop, withIntermediateDirectories: true)
        try Data("milk".utf8).write(to: laptop.appendingPathComponent("List.txt"))
        for device in ["laptop", "desktop"] {
            let run = try await sync(device)
            #expect(run.status == 0, "sync on the \(device): \(run.output)")
        }
        #expect(try Data(contentsOf: desktop.appendingPathComponent("List.txt")) == Data("milk".utf8))

        // The desktop's disk is not mounted: its mount point is there, empty. Commands that would start the
        // container's engine are refused, saying why, and make nothing there.
        let unmounted = home.appendingPathComponent("unmounted")
        try FileManager.default.moveItem(at: desktopDisk, to: unmounted)
        try FileManager.default.createDirectory(at: desktopDisk, withIntermediateDirectories: true)
        let refused = try await sync("desktop")
        #expect(refused.status != 0)
        #expect(refused.output.contains("holds nothing of \(container) now"), "\(refused.output)")
        #expect(refused.output.contains("--afresh"), "\(refused.output)")
        let values = try await ubiquity(["kv", "get"] + options["desktop", default: []], home: home)
        #expect(values.status != 0, "\(values.output)")
        let status = try await ubiquity(["status"] + options["desktop", default: []], home: home)
        #expect(status.output.contains("is its disk mounted?"), "\(status.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: desktopDisk.path).isEmpty, "made on the disk below")

        // Meanwhile the laptop adds a file. The disk is mounted: the desktop syncs as before, losing nothing.
        try Data("eggs".utf8).write(to: laptop.appendingPathComponent("Eggs.txt"))
        #expect(try await sync("laptop").status == 0)
        try FileManager.default.removeItem(at: desktopDisk)
        try FileManager.default.moveItem(at: unmounted, to: desktopDisk)
        let mounted = try await sync("desktop")
        #expect(mounted.status == 0, "\(mounted.output)")
        for (name, text) in [("List.txt", "milk"), ("Eggs.txt", "eggs")] {
            #expect(try Data(contentsOf: desktop.appendingPathComponent(name)) == Data(text.utf8), "\(name)")
        }

        // The user deletes the desktop's container folder: refused too, until set up afresh on purpose.
        try FileManager.default.removeItem(at: desktop.deletingLastPathComponent())
        #expect(try await sync("desktop").status != 0)
        let afresh = try await sync("desktop", ["--afresh"])
        #expect(afresh.status == 0, "\(afresh.output)")
        #expect(try Data(contentsOf: desktop.appendingPathComponent("List.txt")) == Data("milk".utf8))
        #expect(try await sync("desktop").status == 0, "set up afresh, and recorded again")
        #expect(try await sync("laptop").status == 0)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: laptop.path)) == ["Eggs.txt", "List.txt"])
    }

    /// Starts the built `ubiquity` with `arguments` in the background, in the test's own config and data folders.
    private static func start(_ arguments: [String], home: URL) throws -> ChildProcess {
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return try ChildProcess(
            URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("ubiquity"),
            arguments: arguments, environment: environment(home: home), standardInput: .nullDevice,
            standardOutput: .nullDevice, standardError: .nullDevice)
    }

    /// This process's environment with the config and data folders in `home`.
    private static func environment(home: URL) -> [String] {
        ChildProcess.environment(adding: [
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            "XDG_DATA_HOME": home.appendingPathComponent("data").path,
        ])
    }
}
