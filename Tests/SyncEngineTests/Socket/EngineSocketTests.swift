import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("The engine's socket: other processes reach the running engine")
struct EngineSocketTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    /// A service, and devices of one account in a temporary root.
    struct Devices {
        let service: LocalService
        let root: URL
        let logger: Logger

        func device(_ name: String, eagerLimit: Int64 = 1 << 20) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            let layout = ContainerLayout(
                root: root.appendingPathComponent(name), container: EngineSocketTests.container)
            return try ContainerSync(
                layout: layout, client: client, device: SavingDevice(id: DeviceID(), name: name),
                configuration: .init(eagerDownloadLimit: eagerLimit), logger: logger)
        }

        func write(_ data: Data, to path: String, on device: ContainerSync) throws {
            let url = device.layout.folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }

        func read(_ path: String, on device: ContainerSync) -> Data? {
            try? Data(contentsOf: device.layout.folder.appendingPathComponent(path))
        }
    }

    func withDevices(_ body: (Devices) async throws -> Void) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-socket-\(UUID().uuidString.prefix(8))", isDirectory: true)
        var logger = Logger(label: "ubiquity.engine.socket.test")
        logger.logLevel = .critical
        do {
            try await body(Devices(service: service, root: root, logger: logger))
        } catch {
            await service.remove()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        await service.remove()
        try? FileManager.default.removeItem(at: root)
    }

    @Test("A second process lists items, sees a placeholder, downloads it, and follows another device's change")
    func placeholderDownloadAndEvents() async throws {
        try await withDevices { devices in
            let laptop = try await devices.device("laptop", eagerLimit: 0)
            let desktop = try await devices.device("desktop")
            var engine = ContainerEngine(sync: laptop, pushToken: laptop.client.token, logger: devices.logger)
            engine.pollInterval = .seconds(3600)  // push alone brings the desktop's changes
            let running = Task { try await engine.run() }  // the engine runs until the test cancels it
            defer { running.cancel() }

            let client = try await connect(to: laptop.layout)
            let log = EventLog()
            let events = try await client.events()
            // Records what the engine pushes until the connection closes.
            let recording = Task { for await event in events { await log.append(event) } }

            let path = try ItemPath("Documents/Big.bin")
            let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) })
            try devices.write(content, to: path.string, on: desktop)
            try await desktop.syncOnce()

            let placeholder = await eventually {
                try await client.items().items.contains { $0.path == path && $0.isPlaceholder }
            }
            #expect(placeholder, "the desktop's file is listed as a placeholder")
            #expect(
                await log.contains {
                    if case .itemChanged(let item) = $0 { return item.path == path && item.isPlaceholder }
                    return false
                }, "the placeholder's arrival was pushed")
            #expect(devices.read(path.string, on: laptop) == nil)

            try await client.download(path)
            #expect(devices.read(path.string, on: laptop) == content)
            #expect(try await client.transfers().isEmpty, "the download's transfer ended with it")
            let item = try #require(try await client.item(at: path))
            #expect(!item.isPlaceholder)
            #expect(item.size == Int64(content.count))
            let downloaded = await eventually {
                let progressed = await log.contains {
                    if case .progress(_, path, let transfer?) = $0 { return transfer.direction == .download }
                    return false
                }
                let landed = await log.contains {
                    if case .itemChanged(let item) = $0 { return item.path == path && !item.isPlaceholder }
                    return false
                }
                return progressed && landed
            }
            #expect(downloaded, "the download's progress and the item's change were pushed")

            // Another device's edit lands: the engine takes it in by itself, and says so.
            let edited = Data("edited on the desktop".utf8)
            try devices.write(edited, to: path.string, on: desktop)
            try await desktop.syncOnce()
            let version = try #require(try await desktop.item(at: path)?.baseVersion)
            let landed = await eventually {
                await log.contains {
                    if case .itemChanged(let item) = $0 { return item.path == path && item.baseVersion == version }
                    return false
                }
            }
            #expect(landed, "the new version's arrival was pushed")
            #expect(devices.read(path.string, on: laptop) == edited)
            #expect(try await client.item(at: path)?.serverVersion == version)

            await client.close()
            _ = await recording.value
            running.cancel()
            _ = await running.result
        }
    }

    @Test("Versions and resolve through the socket; syncNow runs a round")
    func versionsAndResolve() async throws {
        try await withDevices { devices in
            let laptop = try await devices.device("laptop")
            let desktop = try await devices.device("desktop")
            let path = try ItemPath("Documents/List.txt")
            try devices.write(Data("milk".utf8), to: path.string, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try devices.write(Data("milk, eggs".utf8), to: path.string, on: laptop)
            try devices.write(Data("milk, bread and butter".utf8), to: path.string, on: desktop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // The socket alone, without the rest of the engine: nothing syncs unless asked through it.
            let server = try await EngineSocketServer.bind(serving: laptop, logger: devices.logger)
            let serving = Task { try await server.run() }  // serves until the test cancels it
            defer { serving.cancel() }
            let client = try await EngineSocketClient.connect(to: laptop.layout)

            try await client.syncNow()
            // Pipelined: both requests are sent before either answer is read.
            async let conflicted = client.item(at: path)
            async let listed = client.versions(of: path)
            #expect(try await conflicted?.hasUnresolvedConflicts == true)
            let (current, versions) = try await listed
            let conflict = try #require(versions.first { $0.isConflict && !$0.isResolved })
            #expect(current != nil && conflict.id != current)
            #expect(versions.contains { $0.id == current })
            let others = try await client.otherVersions(of: path)
            #expect(Set(others.map(\.id)) == Set(versions.map(\.id).filter { $0 != current }), "as last heard")
            // The conflict version's content, fetched into the private folder for the asking process to read.
            let copy = try await client.contents(of: conflict.id, at: path)
            #expect(copy.path.hasPrefix(laptop.layout.versions.path))
            let inPlace = try #require(devices.read(path.string, on: laptop))
            #expect(
                Set([try Data(contentsOf: copy), inPlace])
                    == Set(["milk, eggs", "milk, bread and butter"].map { Data($0.utf8) }))

            let events = try await client.events()
            try await client.resolve(path, keeping: conflict.id)
            #expect(try await client.versions(of: path).versions.map(\.id) == [conflict.id])
            #expect(try await client.item(at: path)?.hasUnresolvedConflicts == false)
            let kept = try #require(devices.read(path.string, on: laptop))
            #expect(["milk, eggs", "milk, bread and butter"].map { Data($0.utf8) }.contains(kept))
            let resolvedPushed = await finished(
                Task {
                    for await event in events {
                        if case .itemChanged(let item) = event, item.path == path, !item.hasUnresolvedConflicts {
                            return true
                        }
                    }
                    return false
                })
            #expect(resolvedPushed, "the resolution was pushed")

            // An unknown version is refused with its code.
            let refused = await #expect(throws: ProtocolError.self) {
                try await client.resolve(path, keeping: VersionID())
            }
            #expect(refused?.code == .unknownVersion)
            await client.close()
            serving.cancel()
            _ = await serving.result
            #expect(!FileManager.default.fileExists(atPath: laptop.layout.socket.path))
        }
    }

    @Test("Malformed frames and hostile paths get typed errors and the engine keeps serving; overlong frames close")
    func malformedFramesAndHostilePaths() async throws {
        try await withDevices { devices in
            let laptop = try await devices.device("laptop")
            let server = try await EngineSocketServer.bind(serving: laptop, logger: devices.logger)
            let serving = Task { try await server.run() }  // serves until the test cancels it
            defer { serving.cancel() }
            let socket = laptop.layout.socket.path

            let answers = try await offPool {
                let connection = try RawConnection(path: socket)
                defer { connection.disconnect() }
                var answers: [String: Any] = [:]
                let frames = [
                    "not json",
                    "[1, 2]",
                    #"{"id":5,"op":"fly"}"#,
                    #"{"id":6}"#,
                    #"{"id":"seven","op":"items"}"#,
                    #"{"id":8,"op":"item","path":"../../etc/passwd"}"#,
                    #"{"id":9,"op":"download","path":"/etc/passwd"}"#,
                    #"{"id":10,"op":"evict","path":".ubiquity/state.sqlite"}"#,
                    #"{"id":11,"op":"item","path":"Documents/a\u0000b"}"#,
                    #"{"id":12,"op":"item","path":42}"#,
                    #"{"id":13,"op":"resolve","path":"Documents/A.txt","keep":"not-a-uuid"}"#,
                    #"{"id":14,"op":"download","path":"Documents/Nothing.txt"}"#,
                    #"{"id":15,"op":"items"}"#,
                ]
                for (index, frame) in frames.enumerated() {
                    try connection.transmit(frame + "\n")
                    guard let line = try connection.readLine() else {
                        throw ProtocolError(.internalError, "no answer to frame \(index)")
                    }
                    answers["\(index)"] = try JSONSerialization.jsonObject(with: Data(line.utf8))
                }
                return SendableBox(answers)
            }.value
            func answer(_ index: Int) -> [String: Any] { answers["\(index)"] as? [String: Any] ?? [:] }
            func error(_ index: Int) -> (id: Int?, code: String?, message: String) {
                let error = answer(index)["error"] as? [String: Any]
                return (
                    answer(index)["id"] as? Int, error?["code"] as? String, error?["message"] as? String ?? ""
                )
            }
            #expect(error(0).id == nil && error(0).code == "malformedRequest" && error(0).message.contains("not JSON"))
            #expect(error(1).id == nil && error(1).code == "malformedRequest" && error(1).message.contains("object"))
            #expect(error(2).id == 5 && error(2).code == "malformedRequest" && error(2).message.contains("fly"))
            #expect(error(3).id == 6 && error(3).code == "malformedRequest" && error(3).message.contains("op"))
            #expect(error(4).id == nil && error(4).code == "malformedRequest" && error(4).message.contains("id"))
            #expect(error(5).id == 8 && error(5).code == "pathComponentDot")
            #expect(error(6).id == 9 && error(6).code == "pathAbsolute")
            #expect(error(7).id == 10 && error(7).code == "pathReserved")
            #expect(error(8).id == 11 && error(8).code == "pathControlCharacter")
            #expect(error(9).id == 12 && error(9).code == "malformedRequest" && error(9).message.contains("path"))
            #expect(error(10).id == 13 && error(10).code == "invalidIdentifier")
            #expect(error(11).id == 14 && error(11).code == "itemNotFound")
            #expect(answer(12)["id"] as? Int == 15 && answer(12)["result"] as? String == "items")

            // A frame over 1 MiB closes its connection, and only that one.
            let bystander = try await EngineSocketClient.connect(to: laptop.layout)
            let closed = try await offPool {
                let connection = try RawConnection(path: socket)
                defer { connection.disconnect() }
                try? connection.transmit(#"{"id":1,"op":"item","path":""# + String(repeating: "a", count: 1 << 20))
                return (try? connection.readLine()) == nil
            }
            #expect(closed, "the connection was closed without an answer")
            #expect(try await bystander.items().items.allSatisfy { $0.kind == .directory }, "still served")
            let fresh = try await EngineSocketClient.connect(to: laptop.layout)
            #expect(try await fresh.item(at: ItemPath("Documents/A.txt")) == nil)
            await #expect(throws: ProtocolError.self) { try await fresh.evict(ItemPath("Documents/A.txt")) }
            await fresh.close()
            await bystander.close()
            serving.cancel()
            _ = await serving.result
        }
    }

    @Test("The socket replaces a stale one, is owner-only while the engine runs, and is gone after it stops")
    func socketFileLifecycle() async throws {
        try await withDevices { devices in
            let laptop = try await devices.device("laptop")
            let socket = laptop.layout.socket.path
            #expect(FileManager.default.createFile(atPath: socket, contents: Data("stale".utf8)))
            await #expect(throws: ProtocolError.self) { _ = try await EngineSocketClient.connect(to: laptop.layout) }

            let engine = ContainerEngine(sync: laptop, pushToken: nil, logger: devices.logger)
            let running = Task { try await engine.run() }  // the engine runs until the test cancels it
            defer { running.cancel() }
            let client = try await connect(to: laptop.layout)
            var info = stat()
            #expect(stat(socket, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFSOCK, "a socket replaced the stale file")
            #expect(info.st_mode & 0o777 == 0o600)
            #expect(try await client.items().items.allSatisfy { $0.kind == .directory }, "no files yet")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: laptop.layout.privateFolder.path)
            #expect(!leftovers.contains { $0.hasPrefix(".s-") }, "the folder it was bound in is gone")

            running.cancel()
            _ = await running.result
            #expect(!FileManager.default.fileExists(atPath: socket))
            await #expect(throws: ProtocolError.self) { try await client.syncNow() }
            await client.close()
        }
    }

    /// Connects to the engine of `layout` once it listens (waiting up to 60 s, a guard against hanging).
    @Test("An engine stopped while clients keep connecting to its socket stops cleanly, every time")
    func stopWhileConnecting() async throws {
        try await withDevices { devices in
            let laptop = try await devices.device("laptop")
            for _ in 0..<20 {
                let socket = try await EngineSocketServer.bind(serving: laptop, logger: devices.logger)
                let serving = Task { try await socket.run() }
                let (connected, reached) = AsyncStream.makeStream(of: Void.self)
                // Connects as fast as it can until cancelled, across the engine's stop: a connection accepted as
                // the socket stopped reading them once trapped in NIO, taking the engine's process down.
                let connecting = Task {
                    var clients: [EngineSocketClient] = []
                    while !Task.isCancelled {
                        guard let client = try? await EngineSocketClient.connect(to: laptop.layout) else { continue }
                        clients.append(client)
                        reached.yield()
                    }
                    for client in clients { await client.close() }
                }
                for await _ in connected { break }
                serving.cancel()
                _ = await serving.result
                connecting.cancel()
                await connecting.value
                #expect(!FileManager.default.fileExists(atPath: laptop.layout.socket.path), "the socket is removed")
            }
        }
    }

    private func connect(to layout: ContainerLayout) async throws -> EngineSocketClient {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await EngineSocketClient.connect(to: layout)
            } catch  where ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Polls `condition` for up to 60 s (a guard against hanging, not a timing assertion).
    private func eventually(_ condition: () async throws -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return (try? await condition()) == true
    }
}

/// The events a client received, in order.
actor EventLog {
    private var events: [SyncEvent] = []

    func append(_ event: SyncEvent) { events.append(event) }

    func contains(where predicate: (SyncEvent) -> Bool) -> Bool { events.contains(where: predicate) }
}

/// JSON answers handed back from a Dispatch thread.
struct SendableBox<Value>: @unchecked Sendable {
    // Made on one thread and only read after it is handed over: never shared while mutable.
    let value: Value

    init(_ value: Value) { self.value = value }
}

/// A bare blocking unix-socket connection, to send what no well-behaved client would; used off the shared
/// concurrency threads only.
final class RawConnection {
    private let descriptor: Int32
    private var pending: [UInt8] = []

    init(path: String) throws {
        #if canImport(Glibc)
            descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        // A guard against a test hanging on an engine that never answers, not a timing assertion.
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8) + [0]
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes.prefix($0.count)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    func transmit(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// The next line, without its newline; `nil` when the engine closed the connection.
    func readLine() throws -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                return line
            }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return nil }
            guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            pending += buffer[..<count]
        }
    }

    func disconnect() { close(descriptor) }
}

extension EngineSocketTests {
    @Test(
        "The key-value store through the socket: a write is taken at once, heard of by subscribers, refused over the limits"
    )
    func keyValuesThroughTheSocket() async throws {
        try await withDevices { devices in
            let laptop = try await devices.device("laptop")
            let desktop = try await devices.device("desktop")
            let server = try await EngineSocketServer.bind(serving: laptop, logger: devices.logger)
            let serving = Task { try await server.run() }  // serves until the test cancels it
            defer { serving.cancel() }
            let client = try await EngineSocketClient.connect(to: laptop.layout)
            let events = try await client.events()

            try await client.setKeyValues(["sortOrder": .string("aisle"), "old": .bool(true)])
            try await client.setKeyValues([:], removing: ["old"])
            #expect(try await client.keyValues() == ["sortOrder": .string("aisle")])
            let heard = await finished(
                Task {
                    var heard: [String] = []
                    for await event in events {
                        if case .keyValuesChanged(let keys, .localChange) = event { heard += keys }
                        if heard.contains("old") && heard.contains("sortOrder") { break }
                    }
                    return heard
                })
            #expect(heard.contains("old") && heard.contains("sortOrder"), "both writes were told as local changes")
            await #expect {
                try await client.setKeyValues([String(repeating: "k", count: 65): .bool(true)])
            } throws: { ($0 as? ProtocolError)?.code == .keyValueKeyTooLong }

            try await client.syncNow()
            try await desktop.syncOnce()
            #expect(try await desktop.keyValues() == ["sortOrder": .string("aisle")])
            await client.close()
        }
    }
}
