import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle
import Testing
import UbiquityServer
import UbiquityTestSupport

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

        let socket = try Loopback.connect(port: port)
        defer { close(socket) }
        // A request on a connection of its own, answered after the server accepted the unused one.
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let health: Result<HTTPClientResponse, any Error>
        do {
            health = .success(
                try await client.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(600)))
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

    /// A rolling restart needs a node told to stop to end soon whatever its clients do. Before, a client in the middle
    /// of a request (here one trickling an upload's body) kept `ubiquity server` running for as long as it kept
    /// sending; now the request is cut once the grace period is over and the process exits.
    @Test(
        "SIGTERM ends the server after its grace period although a client is still sending a request",
        .timeLimit(.minutes(1)))
    func stopsAlthoughARequestIsUnderWay() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-stop-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (server, port) = try await ServerProcess.startServer(
            [
                "--data", root.appendingPathComponent("data").path, "--port", "0", "--bcrypt-cost", "4",
                "--open-registration", "--shutdown-grace", "1", "--log-level", "critical",
            ],
            logs: root.appendingPathComponent("logs"), name: "server")
        defer { server.killAndWait() }

        let socket = try Loopback.connect(port: port)
        defer { close(socket) }
        // A first request answered on the connection, so the server is serving it (not an unused one, closed at once).
        try #require(Self.send("GET /health HTTP/1.1\r\nHost: test\r\n\r\n", socket))
        var answer: [UInt8] = []
        while !String(decoding: answer, as: UTF8.self).contains("\r\n\r\n") {
            var byte: UInt8 = 0
            guard read(socket, &byte, 1) == 1 else { break }
            answer.append(byte)
        }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        // Then a request whose body is announced at 100,000 bytes and comes a byte at a time, for as long as the
        // server takes it.
        try #require(
            Self.send("POST /v1/accounts HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n", socket))
        try #require(Self.send("Content-Length: 100000\r\n\r\n{", socket))
        let (sending, sends) = AsyncStream.makeStream(of: Int.self)
        let trickle = Task.detached {
            var sent = 0
            while Self.send(" ", socket) {
                sent += 1
                sends.yield(sent)
                // Not a wait for anything: the pause is the slow client under test, a byte every 100 ms.
                try? await Task.sleep(for: .milliseconds(100))
            }
            sends.finish()
            return sent
        }
        // The server is told to stop while the body is still coming.
        for await sent in sending where sent == 3 { break }
        #expect(server.isRunning)
        #expect(kill(server.pid, SIGTERM) == 0)

        let ended = await server.exited(within: .seconds(50))
        #expect(ended, "the server still runs while a client sends its request")
        if ended {
            #expect(server.terminationStatus == 0, "a stop by SIGTERM is a clean exit: \(server.errors)")
        } else {
            server.killAndWait()  // which ends the trickle
        }
        // The trickling client found its connection closed by the server.
        let sent = await trickle.value
        #expect(sent > 0)
    }

    /// Sends `text` whole; `false` once the connection is closed (no SIGPIPE).
    private static func send(_ text: String, _ socket: Int32) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            == bytes.count
    }
}
