import AsyncHTTPClient
import ChildProcess
import Foundation
import Logging
import NIOCore
import NIOSSL
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Service: TLS and the key-value store")
struct TransportAndKeyValueTests {
    @Test("With a certificate and key the service speaks HTTPS, and a client trusting the certificate gets through")
    func servesTLS() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-tls-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let openssl = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            arguments: [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
            ],
            standardOutput: .nullDevice, standardError: .nullDevice)
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0, "openssl made a certificate")

        let server = try await TestServer.make(in: directory.appendingPathComponent("data")) {
            $0.tls = .init(certificatePath: certificate, privateKeyPath: key)
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try server.service.makeApplication { continuation.yield($0.localAddress?.port ?? 0) }
        // The service runs until this test cancels it.
        let running = Task {
            defer { continuation.finish() }  // a service that cannot start ends the wait for its port
            try await application.run()
        }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        let plain = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let response = try await client.execute(
                HTTPClientRequest(url: "https://127.0.0.1:\(port)/health"), timeout: .seconds(30))
            #expect(response.status == .ok)
            let body = try await response.body.collect(upTo: 1024)
            #expect(String(buffer: body).contains("ok"))
            // A client that does not trust the certificate is turned away by the handshake.
            await #expect(throws: (any Error).self) {
                _ = try await plain.execute(
                    HTTPClientRequest(url: "https://127.0.0.1:\(port)/health"), timeout: .seconds(30))
            }
        } catch {
            try await client.shutdown()
            try await plain.shutdown()
            throw error
        }
        try await client.shutdown()
        try await plain.shutdown()
    }

    @Test("Key-value writes from two devices: the later write of a key wins and removes reach the other device")
    func keyValueLastWriterWins() async throws {
        try await TestServer.make().test { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let first = try await laptop.send(
                .post, laptop.path("kv"),
                json: KeyValueBatch(writes: [
                    KeyValueWrite(key: "sort", value: .string("name"), timestamp: start + 5),
                    KeyValueWrite(key: "theme", value: .string("dark"), timestamp: start),
                ])
            ).decode(KeyValueBatchResponse.self)
            #expect(first.changedKeys == ["sort", "theme"])
            // The desktop's change of "sort" was made earlier, so it loses; its remove of "theme" is later and wins.
            let second = try await desktop.send(
                .post, desktop.path("kv"),
                json: KeyValueBatch(writes: [
                    KeyValueWrite(key: "sort", value: .string("date"), timestamp: start + 1),
                    KeyValueWrite(key: "theme", value: nil, timestamp: start + 2),
                ])
            ).decode(KeyValueBatchResponse.self)
            #expect(second.changedKeys == ["theme"])

            let snapshot = try await laptop.send(.get, laptop.path("kv")).decode(KeyValueChanges.self)
            #expect(snapshot.entries.map(\.key) == ["sort"])
            #expect(snapshot.entries.first?.value == .string("name"))
            #expect(snapshot.token == second.token)
            let news = try await laptop.send(.get, laptop.path("kv?since=\(first.token)")).decode(KeyValueChanges.self)
            #expect(news.entries.map(\.key) == ["theme"])
            #expect(news.entries.first?.value == nil, "the removal reaches the other device as a tombstone")
            #expect(news.entries.first?.device == desktop.info.device.id)
        }
    }
}
