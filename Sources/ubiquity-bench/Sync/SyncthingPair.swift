import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two Syncthing instances on 127.0.0.1 sharing one folder, the peer `sync.many` compares with: each with keys of its
/// own (`syncthing generate`), a configuration written here (loopback listen address and the other device's, global
/// and local discovery, relays, NAT, usage reporting, crash reporting and upgrades off; the folder's watcher and
/// rescan as Syncthing ships them), both running until ``stop()``. `nil` from ``start(in:)`` when Syncthing is not
/// installed.
struct SyncthingPair {
    /// Each device's copy of the shared folder.
    let folderA: URL
    let folderB: URL
    private let processes: [Process]

    /// The `syncthing` on `PATH`, if any.
    static var installed: URL? {
        InstalledProgram.named("syncthing")
    }

    /// Starts both devices under `directory` and waits until they are connected; `nil` when Syncthing is not
    /// installed.
    static func start(in directory: URL) async throws -> SyncthingPair? {
        guard let executable = installed else { return nil }
        struct Device {
            let home: URL
            let folder: URL
            let id: String
            let port: Int
            let gui: Int
        }
        var devices: [Device] = []
        for name in ["A", "B"] {
            let home = directory.appendingPathComponent("syncthing-\(name)", isDirectory: true)
            let folder = directory.appendingPathComponent("folder-\(name)", isDirectory: true)
            // The folder marker Syncthing looks for before it syncs a folder.
            try FileManager.default.createDirectory(
                at: folder.appendingPathComponent(".stfolder"), withIntermediateDirectories: true)
            _ = try await run(executable, ["generate", "--home=\(home.path)", "--no-default-folder"])
            let id = try await run(executable, ["--home=\(home.path)", "--device-id"])
                .trimmingCharacters(in: .whitespacesAndNewlines)
            devices.append(
                Device(home: home, folder: folder, id: id, port: try Loopback.freePort(), gui: try Loopback.freePort()))
        }
        var processes: [Process] = []
        for (index, device) in devices.enumerated() {
            let other = devices[1 - index]
            try configuration(
                folder: device.folder, own: (device.id, device.port), other: (other.id, other.port), gui: device.gui
            ).write(to: device.home.appendingPathComponent("config.xml"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = executable
            process.arguments = ["--home=\(device.home.path)", "--no-browser", "--no-restart", "--no-upgrade"]
            var environment = ProcessInfo.processInfo.environment
            environment["STNOUPGRADE"] = "1"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            processes.append(process)
        }
        let pair = SyncthingPair(folderA: devices[0].folder, folderB: devices[1].folder, processes: processes)
        // Connected: A's REST API lists B as connected.
        do {
            try await Measure.poll(every: .milliseconds(100), for: .seconds(60)) {
                await connected(gui: devices[0].gui, to: devices[1].id)
            }
        } catch {
            pair.stop()
            throw BenchError("the two Syncthing devices did not connect within 60 s")
        }
        return pair
    }

    /// Stops both devices.
    func stop() {
        for process in processes where process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// The configuration of one device: the shared folder with both devices, the other device at its loopback
    /// address, nothing reaching beyond the machine. What a configuration leaves out Syncthing takes as zero, not as
    /// its default: the folder's watcher and rescan interval are written out as Syncthing ships them.
    private static func configuration(
        folder: URL, own: (id: String, port: Int), other: (id: String, port: Int), gui: Int
    ) -> String {
        """
        <configuration version="36">
            <folder id="bench" label="bench" path="\(folder.path)" type="sendreceive" rescanIntervalS="3600"
                fsWatcherEnabled="true" fsWatcherDelayS="10">
                <device id="\(own.id)"></device>
                <device id="\(other.id)"></device>
            </folder>
            <device id="\(own.id)" name="self" compression="metadata"><address>dynamic</address></device>
            <device id="\(other.id)" name="other" compression="metadata">
                <address>tcp://127.0.0.1:\(other.port)</address>
            </device>
            <gui enabled="true" tls="false"><address>127.0.0.1:\(gui)</address><apikey>bench</apikey></gui>
            <options>
                <listenAddress>tcp://127.0.0.1:\(own.port)</listenAddress>
                <globalAnnounceEnabled>false</globalAnnounceEnabled>
                <localAnnounceEnabled>false</localAnnounceEnabled>
                <relaysEnabled>false</relaysEnabled>
                <natEnabled>false</natEnabled>
                <startBrowser>false</startBrowser>
                <urAccepted>-1</urAccepted>
                <crashReportingEnabled>false</crashReportingEnabled>
                <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                <reconnectionIntervalS>1</reconnectionIntervalS>
            </options>
        </configuration>

        """
    }

    /// Whether the device whose REST API is on port `gui` is connected to device `id`.
    private static func connected(gui: Int, to id: String) async -> Bool {
        guard let url = URL(string: "http://127.0.0.1:\(gui)/rest/system/connections") else { return false }
        var request = URLRequest(url: url)
        request.setValue("bench", forHTTPHeaderField: "X-API-Key")
        guard let (data, _) = try? await URLSession.shared.data(for: request),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let connections = json["connections"] as? [String: Any],
            let device = connections[id] as? [String: Any]
        else { return false }
        return device["connected"] as? Bool == true
    }

    /// Runs `executable` with `arguments` and returns what it printed.
    private static func run(_ executable: URL, _ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let printed = await InstalledProgram.output(of: process, on: output)
        guard process.terminationStatus == 0 else {
            throw BenchError("syncthing \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return printed
    }
}
