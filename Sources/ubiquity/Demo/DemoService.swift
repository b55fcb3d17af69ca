import Foundation
import Logging
import SyncEngine
import UbiquityProtocol
import UbiquityServer

/// The demo's sync service: the embedded default (SQLite and a chunk folder) in the demo's directory, on a free
/// port of 127.0.0.1, run in this process until the demo ends.
struct DemoService {
    let service: UbiquityService
    let address: String
    let dataDirectory: URL
    private let task: Task<Void, any Error>

    static func start(in dataDirectory: URL) async throws -> DemoService {
        var logger = Logger(label: "ubiquity.demo.server")
        logger.logLevel = .critical
        // A low password-hashing cost: the demo's account lives for minutes, and signs in twice.
        let configuration = ServerConfiguration(dataDirectory: dataDirectory, port: 0, bcryptCost: 4)
        let service = try await UbiquityService(configuration: configuration, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try service.makeApplication { continuation.yield($0.localAddress?.port ?? 0) }
        let task = Task {
            defer { continuation.finish() }  // a service that fails to start ends the wait for its port
            try await application.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw DemoFailure("the sync service did not start") }
        return DemoService(
            service: service, address: "http://127.0.0.1:\(port)", dataDirectory: dataDirectory, task: task)
    }

    /// Creates the account and signs a device named `device` in, its profile saved in `profiles` with its
    /// container folders under `root`.
    func signIn(account: String, password: String, device: String, root: URL, profiles: URL) async throws
        -> DeviceProfile
    {
        let login = try await ServiceClient(baseURL: address).login(
            LoginRequest(name: account, password: password, deviceName: device))
        let profile = DeviceProfile(
            server: address, account: account, token: login.token, device: login.info.device, root: root.path)
        try profile.save(as: device, in: profiles)
        return profile
    }

    /// A figure of the service's metrics (such as `ubiquity_chunks_in_total`).
    func figure(_ name: String) -> Int64 {
        let line = service.metrics.exposition().split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int64(Double($0.split(separator: " ").last ?? "") ?? 0) } ?? 0
    }

    func stop() async {
        task.cancel()
        _ = await task.result
    }
}
