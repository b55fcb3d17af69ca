import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle
import Testing
import UbiquityServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Service: graceful shutdown")
struct GracefulShutdownTests {
    /// A client that opened a connection and never sent a request on it (HTTP clients open them ahead of need) must
    /// not hold a stopping server: before, the server waited for the client to hang up, 600 s for AsyncHTTPClient.
    @Test(
        "A graceful shutdown ends although a client holds a connection it never used", .timeLimit(.minutes(1)))
    func unusedConnectionDoesNotHoldShutdown() async throws {
        let server = try await TestServer.make()
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try server.service.makeApplication { continuation.yield($0.localAddress?.port ?? 0) }
        defer { try? FileManager.default.removeItem(at: server.directory) }
        let group = ServiceGroup(
            configuration: .init(
                services: [application], gracefulShutdownSignals: [], logger: Logger(label: "ubiquity.server.test")))
        let running = Task {
            defer { continuation.finish() }  // a service that cannot start ends the wait for its port
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())

        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socket >= 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0, "connected to the service")
        // A request on a connection of its own, answered after the server accepted the unused one.
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let health: Result<HTTPClientResponse, any Error>
        do {
            health = .success(
                try await client.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(30)))
        } catch {
            health = .failure(error)
        }
        // Shut down whatever the request came to: a client freed while running stops the whole test process.
        try await client.shutdown()
        #expect(try health.get().status == .ok)

        await group.triggerGracefulShutdown()
        let result = await running.result
        #expect(throws: Never.self) { try result.get() }
        // The server closed the unused connection: reading it ends.
        var byte: UInt8 = 0
        #expect(read(socket, &byte, 1) <= 0)
    }
}
