import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// One machine with a live service on loopback and device profiles signed in with `ubiquity login`, each with its
/// own container folder — the set-up a person has who runs the Grocery sample on two devices — and the `grocery`
/// executable run against them as a user runs it.
struct GroceryMachine {
    let service: LocalService
    /// Everything else: profiles (`config/`), container folders (`devices/<name>/`), logs.
    let home: URL
    private let counter = Counter()

    private final class Counter: @unchecked Sendable {
        // @unchecked Sendable: used from one test task at a time.
        var value = 0
        func next() -> Int {
            value += 1
            return value
        }
    }

    /// What the children get: their own configuration folder, and logs kept quiet.
    var environment: [String: String] { ["XDG_CONFIG_HOME": home.appendingPathComponent("config").path] }

    /// The folder device `name`'s containers live in.
    func root(of name: String) -> URL { home.appendingPathComponent("devices/\(name)", isDirectory: true) }

    /// Runs `body` with a machine whose account `ada` has `devices` signed in.
    static func with(
        devices: [String] = ["laptop", "desktop"], _ body: (GroceryMachine) async throws -> Void
    ) async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "grocery-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let machine = GroceryMachine(service: service, home: home)
        do {
            _ = try await ServiceClient(baseURL: service.baseURL).register(name: "ada", password: "correct horse")
            for device in devices {
                let (status, output) = try await UbiquityProcess.run(
                    [
                        "login", "--server", service.baseURL, "--account", "ada", "--device", device, "--profile",
                        device, "--root", machine.root(of: device).path,
                    ], environment: machine.environment, log: machine.log("login-\(device)"),
                    input: "correct horse\n")
                try #require(status == 0, "ubiquity login: \(output)")
            }
            try await body(machine)
        } catch {
            await service.remove()
            try? FileManager.default.removeItem(at: home)
            throw error
        }
        await service.remove()
        try? FileManager.default.removeItem(at: home)
    }

    func log(_ name: String) -> URL { home.appendingPathComponent("logs/\(counter.next())-\(name).log") }

    /// Runs `grocery ARGUMENTS --device DEVICE` to its end; returns its exit status and output.
    func run(_ device: String, _ arguments: [String], timeout: TimeInterval = 120) async throws -> (
        status: Int32, output: String
    ) {
        try await UbiquityProcess.run(
            arguments + ["--device", device], program: "grocery", environment: environment,
            log: log("\(device)-\(arguments.first ?? "")"), timeout: timeout)
    }

    /// Runs `grocery ARGUMENTS --device DEVICE`, which must succeed; returns its output.
    @discardableResult
    func grocery(_ device: String, _ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> String
    {
        let (status, output) = try await run(device, arguments)
        try #require(
            status == 0, "grocery \(arguments.joined(separator: " ")) on \(device) failed: \(output)",
            sourceLocation: sourceLocation)
        return output
    }

    /// The item lines of `grocery list` on `device` (of `grocery list --tag TAG` with `tag`): each item's light and
    /// name.
    func list(
        _ device: String, tag: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [(light: String, name: String)] {
        let arguments = ["list"] + (tag.map { ["--tag", $0] } ?? [])
        let (status, output) = try await run(device, arguments)
        try #require(status == 0, "grocery list on \(device) failed: \(output)", sourceLocation: sourceLocation)
        return output.split(separator: "\n").compactMap { line in
            let light = line.prefix(15).trimmingCharacters(in: .whitespaces)
            guard ["green", "yellow", "red", "not downloaded"].contains(light) else { return nil }
            let rest = line.dropFirst(15)
            let name = rest.components(separatedBy: "  ").first?.trimmingCharacters(in: .whitespaces) ?? ""
            return (light, name)
        }
    }
}
