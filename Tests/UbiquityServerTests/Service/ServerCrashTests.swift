import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityServer

/// Kills a real `ubiquity server` process with SIGKILL while several clients commit to it, restarts it on the same
/// data directory, and checks that nothing acknowledged was lost and that what is there is whole.
@Suite("Service: SIGKILL during commits")
struct ServerCrashTests {
    @Test("Acknowledged commits survive SIGKILL mid-traffic, three kills running, and the data stays consistent")
    func acknowledgedCommitsSurviveKills() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-crash-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let run = CrashRun(root: root, client: client)
        let outcome: Result<Void, any Error>
        do {
            try await run.run()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        run.stopServer()
        try await client.shutdown()
        try outcome.get()
    }
}

/// One run of the crash test: the server child process, the client's record of what was acknowledged, and the
/// checks after each restart.
private final class CrashRun: Sendable {
    static let cycles = 3
    static let container = try! ContainerID("TEAM.com.example.crash")

    let root: URL
    let data: URL
    let client: HTTPClient
    private let server = Mutex<ServerProcess?>(nil)
    private let starts = Mutex(0)

    init(root: URL, client: HTTPClient) {
        self.root = root
        self.data = root.appendingPathComponent("data", isDirectory: true)
        self.client = client
    }

    var incoming: URL { data.appendingPathComponent("chunks/incoming", isDirectory: true) }

    func run() async throws {
        var port = try await startServer()
        let anonymous = Wire(client: client, port: port, token: nil)
        let password = "correct horse battery"
        _ = try await anonymous.send(.POST, "/v1/accounts", json: RegisterRequest(name: "ada", password: password))
            .decode(RegisterAnswer.self, expecting: [201])
        let login = try await anonymous.send(
            .POST, "/v1/login", json: LoginRequest(name: "ada", password: password, deviceName: "crash test")
        ).decode(LoginResponse.self)
        let ledger = Ledger()
        for cycle in 1...Self.cycles {
            let wire = Wire(client: client, port: port, token: login.token)
            let traffic = try await runTraffic(cycle: cycle, wire: wire, device: login.info.device, ledger: ledger)
            #expect(traffic.killedBySignal, "cycle \(cycle): the server did not die of SIGKILL")
            #expect(
                traffic.uploadsInFlight > 0,
                "cycle \(cycle): no upload was in flight at the kill, so the incoming check proves nothing")
            port = try await startServer()
            let check = try await Checker(
                wire: Wire(client: client, port: port, token: login.token), account: login.info.accountID,
                data: data
            ).verify(against: ledger.snapshot)
            #expect(
                check.problems.isEmpty,
                """
                cycle \(cycle) (\(traffic.workers) clients, \(traffic.acknowledged) commits acknowledged, \
                \(traffic.pending) operations unanswered at the kill): \(check.problems.joined(separator: "\n"))
                """)
            #expect(check.versionCount >= ledger.snapshot.acknowledgedCommits)
            ledger.restart(from: check)
        }
        try await checkCatchesMissingChunk(token: login.token, account: login.info.accountID, ledger: ledger)
    }

    /// Spoils the stored bytes of one chunk a version needs and checks that the consistency check notices.
    private func checkCatchesMissingChunk(token: String, account: AccountID, ledger: Ledger) async throws {
        let model = ledger.snapshot
        let hash = try #require(model.versions.values.lazy.flatMap(\.values).first?.manifest.chunks.first?.hash)
        let stopped = stopServer()
        #expect(stopped)
        try Checker.spoil(hash, account: account, data: data)
        let port = try await startServer()
        let check = try await Checker(
            wire: Wire(client: client, port: port, token: token), account: account, data: data
        )
        .verify(against: model)
        #expect(check.problems.contains { $0.contains(hash.string) }, "a spoiled chunk went unnoticed")
        let stoppedAgain = stopServer()
        #expect(stoppedAgain)
    }

    /// Starts the server on the data directory and returns its port.
    private func startServer() async throws -> Int {
        let number = starts.withLock {
            $0 += 1
            return $0
        }
        let arguments = [
            "--data", data.path, "--port", "0", "--bcrypt-cost", "4", "--open-registration",
            "--retention-count", "1000", "--log-level", "error",
        ]
        let (process, port) = try await ServerProcess.startServer(
            arguments, logs: root.appendingPathComponent("logs"), name: "server-\(number)")
        server.withLock { $0 = process }
        return port
    }

    /// Kills the running server, if any; returns whether it died of SIGKILL.
    @discardableResult
    func stopServer() -> Bool {
        guard let process = server.withLock({ $0.take() }) else { return false }
        return process.killAndWait()
    }

    /// Runs 2–4 committing clients and a stalled upload, and kills the server with SIGKILL at a random moment
    /// after at least 50 more commits were acknowledged.
    private func runTraffic(cycle: Int, wire: Wire, device: SavingDevice, ledger: Ledger) async throws -> Traffic {
        let workers = Int.random(in: 2...4)
        let start = ledger.snapshot.acknowledgedCommits
        let target = start + 50 + Int.random(in: 0...40)
        let live = ledger.snapshot.items.filter { !$0.value.isDeleted }.keys.sorted { $0.string < $1.string }
        ledger.resume(workers: workers)
        var traffic = Traffic(workers: workers)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                let owned = stride(from: worker, to: live.count, by: workers).map { live[$0] }
                let client = Client(
                    worker: worker, cycle: cycle, wire: wire, device: device, ledger: ledger, owned: owned)
                group.addTask { await client.work() }
            }
            group.addTask { await Self.stalledUpload(wire: wire) }
            // A guard against a hang, not a speed limit: on a loaded machine 50 commits have taken over a minute.
            let deadline = ContinuousClock.now.advanced(by: .seconds(600))
            while ledger.snapshot.acknowledgedCommits < target && ledger.snapshot.activeWorkers > 0
                && ContinuousClock.now < deadline
            {
                try? await Task.sleep(for: .milliseconds(2))
            }
            traffic.uploadsInFlight = await Self.waitForIncomingEntry(incoming)
            if Bool.random() {
                await Self.waitForUnansweredOperation(ledger)
                try? await Task.sleep(for: .microseconds(Int.random(in: 0...2_000)))
            } else {
                try? await Task.sleep(for: .microseconds(Int.random(in: 0...20_000)))
            }
            ledger.stop()
            traffic.killedBySignal = stopServer()
            group.cancelAll()
        }
        let model = ledger.snapshot
        traffic.acknowledged = model.acknowledgedCommits - start
        traffic.pending = model.pending.count
        #expect(
            traffic.acknowledged >= 50,
            "cycle \(cycle): only \(traffic.acknowledged) commits were acknowledged before the kill")
        return traffic
    }

    /// Polls (at most 1 s) until some client waits for the answer to an item operation.
    private static func waitForUnansweredOperation(_ ledger: Ledger) async {
        let deadline = ContinuousClock.now.advanced(by: .seconds(1))
        while ledger.snapshot.pending.isEmpty && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .microseconds(200))
        }
    }

    /// Polls (at most 10 s) until `incoming` holds something; returns how many entries it holds.
    private static func waitForIncomingEntry(_ incoming: URL) async -> Int {
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while true {
            let count = (try? FileManager.default.contentsOfDirectory(atPath: incoming.path).count) ?? 0
            if count > 0 || ContinuousClock.now >= deadline { return count }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// A chunk upload that sends its head and a first piece, larger than the service keeps in memory (so it has a
    /// file in `incoming/`), then nothing more until it is cancelled or the server dies; begun again should it end
    /// before (a loaded machine's cycle can outlast any one request's deadline).
    private static func stalledUpload(wire: Wire) async {
        while !Task.isCancelled {
            let bytes = randomBytes(2 << 20)
            guard let hash = try? sha256(bytes) else { return }
            var request = HTTPClientRequest(url: wire.url(wire.containerPath("chunks/\(hash)")))
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(wire.token ?? "")")
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            let (body, continuation) = AsyncStream<ByteBuffer>.makeStream()
            continuation.yield(ByteBuffer(bytes: bytes.prefix(3 << 19)))
            request.body = .stream(body, length: .known(Int64(bytes.count)))
            _ = try? await wire.client.execute(request, timeout: .seconds(600))
            continuation.finish()
            // Nothing to await here: the request already ended (failed). The pause only keeps a dead server's
            // instant refusals, until the cycle cancels this task, from spinning.
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// What happened in one cycle of traffic.
private struct Traffic {
    var workers: Int
    var acknowledged = 0
    var pending = 0
    var uploadsInFlight = 0
    var killedBySignal = false
}

/// The answer to a registration, of which only the status matters.
private struct RegisterAnswer: Decodable {}

// MARK: - The client's record

/// An item's state as far as the client knows it.
private struct ItemState: Hashable, Sendable {
    var path: ItemPath
    var isDeleted: Bool
    var current: VersionID?
}

/// An operation sent whose answer has not arrived: the item's state if the server applied it.
private struct PendingOperation: Sendable {
    var state: ItemState
    var version: VersionRecord?
    var isCreate: Bool
}

/// Everything the clients were told the server did, and what they were waiting for.
private struct Model: Sendable {
    /// Each item's state as last acknowledged.
    var items: [ItemID: ItemState] = [:]
    /// Each item's acknowledged versions, as sent.
    var versions: [ItemID: [VersionID: VersionRecord]] = [:]
    /// The operation each client had sent and not had answered, by item.
    var pending: [ItemID: PendingOperation] = [:]
    /// Commits (creations with content and new versions) acknowledged in all cycles.
    var acknowledgedCommits = 0
    var activeWorkers = 0
    var stopped = false
}

/// The record the clients share.
private final class Ledger: Sendable {
    private let model = Mutex(Model())

    var snapshot: Model { model.withLock { $0 } }
    var isStopped: Bool { model.withLock { $0.stopped } }

    func resume(workers: Int) {
        model.withLock {
            $0.stopped = false
            $0.activeWorkers = workers
        }
    }

    func stop() { model.withLock { $0.stopped = true } }

    func workerEnded() { model.withLock { $0.activeWorkers -= 1 } }

    func begin(_ item: ItemID, _ operation: PendingOperation) {
        model.withLock { $0.pending[item] = operation }
    }

    /// Records the answer to the pending operation on `item`.
    func acknowledge(_ item: ItemID) {
        model.withLock {
            guard let operation = $0.pending.removeValue(forKey: item) else { return }
            $0.items[item] = operation.state
            if let version = operation.version {
                $0.versions[item, default: [:]][version.id] = version
                $0.acknowledgedCommits += 1
            }
        }
    }

    /// Takes the state the restarted server holds as the starting point of the next cycle.
    func restart(from check: Checker.Result) {
        model.withLock {
            $0.items = check.states
            $0.versions = check.versions
            $0.pending = [:]
        }
    }
}

// MARK: - Clients

/// An answer that was not what the client asked for.
private struct UnexpectedAnswer: Error, CustomStringConvertible {
    let description: String
}

/// One committing client: it works on its own items only, one request at a time, so an item's state is always
/// either its last acknowledged state or the state its one unanswered operation would make.
private struct Client: Sendable {
    let worker: Int
    let cycle: Int
    let wire: Wire
    let device: SavingDevice
    let ledger: Ledger
    let owned: [ItemID]

    func work() async {
        defer { ledger.workerEnded() }
        var owned = owned
        var serial = 0
        while !ledger.isStopped {
            serial += 1
            do {
                try await step(&owned, serial: serial)
            } catch let error as UnexpectedAnswer {
                Issue.record("client \(worker): \(error)")
                return
            } catch {
                if !ledger.isStopped { Issue.record("client \(worker): \(error)") }
                return
            }
        }
    }

    private func step(_ owned: inout [ItemID], serial: Int) async throws {
        let choice = Double.random(in: 0..<1)
        guard owned.count >= 3, choice >= 0.35 else {
            owned.append(try await create(serial: serial))
            return
        }
        let index = Int.random(in: 0..<owned.count)
        let item = owned[index]
        guard let state = ledger.snapshot.items[item] else {
            throw UnexpectedAnswer(description: "item \(item) is not in the record")
        }
        if choice < 0.75 {
            try await commit(item, state)
        } else if choice < 0.9 {
            try await rename(item, state)
        } else {
            try await delete(item, state)
            owned.remove(at: index)
        }
    }

    private func create(serial: Int) async throws -> ItemID {
        let id = ItemID()
        let path = try ItemPath("Client \(worker)/c\(cycle)-\(serial).bin")
        let version = try await upload(id, basedOn: nil, reusing: nil)
        let state = ItemState(path: path, isDeleted: false, current: version.id)
        ledger.begin(id, PendingOperation(state: state, version: version, isCreate: true))
        let response = try await wire.send(
            .POST, wire.containerPath("items"),
            json: CreateItemRequest(id: id, path: path, kind: .file, version: version)
        ).decode(ItemResponse.self, expecting: [201])
        try expect(response, state: state, outcome: .current, version: version.id)
        ledger.acknowledge(id)
        return id
    }

    private func commit(_ item: ItemID, _ state: ItemState) async throws {
        let previous = state.current.flatMap { ledger.snapshot.versions[item]?[$0] }
        let version = try await upload(item, basedOn: state.current, reusing: previous?.manifest.chunks.first)
        var next = state
        next.current = version.id
        ledger.begin(item, PendingOperation(state: next, version: version, isCreate: false))
        let response = try await wire.send(.POST, wire.containerPath("items/\(item)/versions"), json: version)
            .decode(ItemResponse.self, expecting: [201])
        try expect(response, state: next, outcome: .current, version: version.id)
        ledger.acknowledge(item)
    }

    private func rename(_ item: ItemID, _ state: ItemState) async throws {
        var next = state
        next.path = try ItemPath("Client \(worker)/renamed-\(UUID().uuidString.prefix(8)).bin")
        ledger.begin(item, PendingOperation(state: next, version: nil, isCreate: false))
        let response = try await wire.send(
            .PATCH, wire.containerPath("items/\(item)"), json: MoveItemRequest(path: next.path)
        ).decode(ItemResponse.self)
        try expect(response, state: next)
        ledger.acknowledge(item)
    }

    private func delete(_ item: ItemID, _ state: ItemState) async throws {
        var next = state
        next.isDeleted = true
        ledger.begin(item, PendingOperation(state: next, version: nil, isCreate: false))
        let basedOn = state.current.map { "?basedOn=\($0)" } ?? ""
        let response = try await wire.send(.DELETE, wire.containerPath("items/\(item)\(basedOn)"))
            .decode(ItemResponse.self)
        try expect(response, state: next)
        ledger.acknowledge(item)
    }

    /// Uploads 1–3 new chunks of random bytes (after `reusing`, an already stored chunk, when given) and returns
    /// the version to commit.
    private func upload(_ item: ItemID, basedOn: VersionID?, reusing: ChunkReference?) async throws -> VersionRecord {
        let pieces = (0..<Int.random(in: 1...3)).map { _ in randomBytes(Int.random(in: 256...8192)) }
        let fresh = try pieces.map { ChunkReference(hash: try sha256($0), size: Int64($0.count)) }
        let missing = try await wire.send(
            .POST, wire.containerPath("chunks/missing"), json: MissingChunksRequest(chunks: fresh)
        ).decode(MissingChunksResponse.self).missing
        for (piece, reference) in zip(pieces, fresh) where missing.contains(reference.hash) {
            _ = try await wire.send(.PUT, wire.containerPath("chunks/\(reference.hash)"), body: piece)
                .expect([200, 201])
        }
        var chunks = fresh
        var content = pieces.flatMap { $0 }
        if let reusing, Bool.random() {
            let answer = try await wire.send(.GET, wire.containerPath("chunks/\(reusing.hash)")).expect([200])
            chunks.insert(reusing, at: 0)
            content = answer.body + content
        }
        return VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(chunks), contentHash: try sha256(content),
            modificationDate: Date(), savingDevice: device, basedOn: basedOn)
    }

    private func expect(
        _ response: ItemResponse, state: ItemState, outcome: CommitOutcome? = nil, version: VersionID? = nil
    ) throws {
        let answered = ItemState(
            path: response.item.path, isDeleted: response.item.isDeleted, current: response.item.currentVersion)
        guard answered == state, response.outcome == outcome, response.version?.id == version else {
            throw UnexpectedAnswer(
                description: "expected \(state) (\(String(describing: outcome))), the server answered \(response)")
        }
    }
}

// MARK: - HTTP

/// An answer: the request it answers, its status and body.
private struct Reply {
    let request: String
    let status: UInt
    let body: [UInt8]

    @discardableResult
    func expect(_ statuses: Set<UInt> = Set(200..<300)) throws -> Reply {
        guard statuses.contains(status) else {
            throw UnexpectedAnswer(
                description: "\(request) answered \(status): \(String(decoding: body.prefix(500), as: UTF8.self))")
        }
        return self
    }

    func decode<T: Decodable>(_ type: T.Type, expecting statuses: Set<UInt> = Set(200..<300)) throws -> T {
        try expect(statuses)
        do {
            return try JSONDecoder().decode(type, from: Data(body))
        } catch {
            throw UnexpectedAnswer(description: "\(request) answered a body that is no \(type): \(error)")
        }
    }
}

/// A client of the server at `127.0.0.1:port`, signed in with `token`.
private struct Wire: Sendable {
    let client: HTTPClient
    let port: Int
    let token: String?

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func containerPath(_ rest: String) -> String { "/v1/containers/\(CrashRun.container)/\(rest)" }

    func send(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, isJSON: Bool = false) async throws -> Reply {
        var request = HTTPClientRequest(url: url(path))
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: isJSON ? "application/json" : "application/octet-stream")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await client.execute(request, timeout: .seconds(600))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        return Reply(request: "\(method) \(path)", status: response.status.code, body: Array(bytes.readableBytesView))
    }

    func send(_ method: HTTPMethod, _ path: String, json value: some Encodable) async throws -> Reply {
        try await send(method, path, body: Array(try JSONEncoder().encode(value)), isJSON: true)
    }
}

// MARK: - Checks

/// The checks of a restarted server against the client's record.
private struct Checker: Sendable {
    let wire: Wire
    let account: AccountID
    let data: URL

    /// What the server holds, and what is wrong with it.
    struct Result: Sendable {
        var problems: [String] = []
        var states: [ItemID: ItemState] = [:]
        var versions: [ItemID: [VersionID: VersionRecord]] = [:]
        var versionCount: Int { versions.values.reduce(0) { $0 + $1.count } }
    }

    /// Deletes the chunk's file, or, packed, inverts its bytes in the pack (the service stopped).
    static func spoil(_ hash: ChunkHash, account: AccountID, data: URL) throws {
        let store = try FileChunkStore(root: data.appendingPathComponent("chunks", isDirectory: true))
        let file = store.location(of: hash, of: account)
        if FileManager.default.fileExists(atPath: file.path) {
            try FileManager.default.removeItem(at: file)
            return
        }
        let packed = try #require(try store.packedLocation(of: hash, of: account))
        let handle = try FileHandle(forUpdating: packed.pack)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(packed.offset))
        let bytes = try #require(try handle.read(upToCount: Int(packed.length)))
        try handle.seek(toOffset: UInt64(packed.offset))
        try handle.write(contentsOf: Data(bytes.map { ~$0 }))
    }

    func verify(against model: Model) async throws -> Result {
        var result = Result()
        let incoming = data.appendingPathComponent("chunks/incoming", isDirectory: true)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: incoming.path)
        if !leftovers.isEmpty { result.problems.append("incoming/ holds \(leftovers) after the restart") }

        let list = try await wire.send(.GET, wire.containerPath("items")).decode(ItemListResponse.self)
        var details: [ItemID: ItemDetail] = [:]
        for item in list.items {
            let detail = try await wire.send(.GET, wire.containerPath("items/\(item.id)")).decode(ItemDetail.self)
            if detail.item != item {
                result.problems.append("item \(item.id) is \(detail.item) in detail, \(item) listed")
            }
            details[item.id] = detail
            result.states[item.id] = ItemState(
                path: detail.item.path, isDeleted: detail.item.isDeleted, current: detail.item.currentVersion)
            result.versions[item.id] = Dictionary(uniqueKeysWithValues: detail.versions.map { ($0.id, $0) })
        }
        result.problems += compare(details, with: model)
        result.problems += try await checkContent(of: details)
        result.problems += try await checkFeed(list: list, details: details)
        result.problems += checkChunkFiles()
        return result
    }

    /// Every acknowledged item and version is there; nothing is there that no operation asked for.
    private func compare(_ details: [ItemID: ItemDetail], with model: Model) -> [String] {
        var problems: [String] = []
        for (id, acknowledged) in model.items {
            guard let detail = details[id] else {
                problems.append("acknowledged item \(id) (\(acknowledged)) is gone")
                continue
            }
            let pending = model.pending[id]
            let state = ItemState(
                path: detail.item.path, isDeleted: detail.item.isDeleted, current: detail.item.currentVersion)
            if state != acknowledged && state != pending?.state {
                problems.append(
                    "item \(id) is \(state); acknowledged \(acknowledged), unanswered \(String(describing: pending))")
            }
            let stored = Dictionary(uniqueKeysWithValues: detail.versions.map { ($0.id, $0) })
            for (versionID, sent) in model.versions[id] ?? [:] {
                guard let version = stored[versionID] else {
                    problems.append("acknowledged version \(versionID) of item \(id) is gone")
                    continue
                }
                problems += Self.compare(version, with: sent)
            }
            for version in detail.versions where model.versions[id]?[version.id] == nil {
                if let sent = pending?.version, sent.id == version.id {
                    problems += Self.compare(version, with: sent)
                } else {
                    problems.append("item \(id) has version \(version.id), which no commit made")
                }
            }
        }
        for (id, detail) in details where model.items[id] == nil {
            let state = ItemState(
                path: detail.item.path, isDeleted: detail.item.isDeleted, current: detail.item.currentVersion)
            guard let pending = model.pending[id], pending.isCreate, pending.state == state,
                let sent = pending.version, detail.versions.map(\.id) == [sent.id]
            else {
                problems.append("item \(id) (\(detail)) is there, but no creation of it was sent")
                continue
            }
            problems += Self.compare(detail.versions[0], with: sent)
        }
        return problems
    }

    private static func compare(_ stored: VersionRecord, with sent: VersionRecord) -> [String] {
        guard stored.itemID == sent.itemID, stored.manifest == sent.manifest, stored.contentHash == sent.contentHash,
            stored.basedOn == sent.basedOn
        else { return ["version \(sent.id) is stored as \(stored), sent as \(sent)"] }
        return []
    }

    /// Every chunk of every version downloads and matches its hash and size; every version's content matches its
    /// content hash.
    private func checkContent(of details: [ItemID: ItemDetail]) async throws -> [String] {
        var problems: [String] = []
        var sizes: [ChunkHash: Int64] = [:]
        for chunk in details.values.flatMap(\.versions).flatMap(\.manifest.chunks) { sizes[chunk.hash] = chunk.size }
        let hashes = sizes.keys.sorted()
        var chunks: [ChunkHash: [UInt8]] = [:]
        let wire = wire
        try await withThrowingTaskGroup(of: (ChunkHash, Reply).self) { group in
            var next = 0
            func add() {
                guard next < hashes.count else { return }
                let hash = hashes[next]
                next += 1
                group.addTask { (hash, try await wire.send(.GET, wire.containerPath("chunks/\(hash)"))) }
            }
            for _ in 0..<4 { add() }
            while let (hash, reply) = try await group.next() {
                add()
                guard reply.status == 200 else {
                    problems.append("chunk \(hash) does not download: \(reply.status)")
                    continue
                }
                let actual = try sha256(reply.body)
                if actual != hash || Int64(reply.body.count) != sizes[hash] {
                    problems.append("chunk \(hash) downloads as \(reply.body.count) bytes hashing to \(actual)")
                }
                chunks[hash] = reply.body
            }
        }
        for version in details.values.flatMap(\.versions) {
            let parts = version.manifest.chunks.map { chunks[$0.hash] }
            guard !parts.contains(where: { $0 == nil }) else { continue }
            let content = parts.compactMap { $0 }.flatMap { $0 }
            if try sha256(content) != version.contentHash {
                problems.append("version \(version.id) of \(version.itemID) does not hash to its content hash")
            }
        }
        let usedBytes = try await wire.send(.GET, "/v1/account").decode(AccountInfo.self).usedBytes
        if usedBytes < sizes.values.reduce(0, +) {
            problems.append("the account uses \(usedBytes) bytes, less than its versions' chunks take")
        }
        return problems
    }

    /// The feed from the start pages to the position the item list reflects and tells of every item and version.
    private func checkFeed(list: ItemListResponse, details: [ItemID: ItemDetail]) async throws -> [String] {
        var problems: [String] = []
        var changes: [Change] = []
        var since: ChangeToken?
        var pages = 0
        while true {
            pages += 1
            let query = "changes?limit=50" + (since.map { "&since=\($0)" } ?? "")
            let page = try await wire.send(.GET, wire.containerPath(query)).decode(ChangePage.self)
            changes += page.changes
            since = page.nextToken
            if page.changes.count > 50 { problems.append("a feed page of limit 50 has \(page.changes.count) changes") }
            if !page.hasMore { break }
            guard !page.changes.isEmpty, pages < 10_000 else {
                problems.append("the feed pages on without end (page \(pages) is empty and has more)")
                break
            }
        }
        if since != list.token {
            problems.append("the feed ends at \(String(describing: since)), the item list reflects \(list.token)")
        }
        var paths: [ItemID: ItemPath] = [:]
        var current: [ItemID: VersionID] = [:]
        var added: Set<String> = []
        var deleted: Set<ItemID> = []
        for change in changes {
            if details[change.itemID] == nil { problems.append("the feed tells of unknown item \(change.itemID)") }
            switch change {
            case .itemCreated(let id, let path, _): paths[id] = path
            case .itemMoved(let id, _, let path): paths[id] = path
            case .itemChanged(let id, let version): current[id] = version
            case .versionAdded(let id, let version): added.insert("\(id)/\(version)")
            case .itemDeleted(let id): deleted.insert(id)
            case .versionResolved, .versionRemoved: break
            }
        }
        for item in list.items {
            if paths[item.id] != item.path {
                problems.append(
                    "the feed puts item \(item.id) at \(String(describing: paths[item.id])), not \(item.path)")
            }
            if current[item.id] != item.currentVersion {
                problems.append("the feed makes \(String(describing: current[item.id])) current for \(item.id)")
            }
            if item.isDeleted != deleted.contains(item.id) {
                problems.append("the feed and the list disagree on whether \(item.id) is deleted")
            }
            for version in details[item.id]?.versions ?? [] where !added.contains("\(item.id)/\(version.id)") {
                problems.append("the feed never adds version \(version.id) of \(item.id)")
            }
        }
        return problems
    }

    /// Every chunk file of the account holds the bytes its name is the hash of.
    private func checkChunkFiles() -> [String] {
        let folder = data.appendingPathComponent("chunks/\(account.string)", isDirectory: true)
        guard let files = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        var problems: [String] = []
        for case let file as String in files {
            let url = folder.appendingPathComponent(file)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            guard let bytes = try? Data(contentsOf: url), let hash = try? sha256(Array(bytes)),
                hash.string == url.lastPathComponent
            else {
                problems.append("chunk file \(file) does not hold the bytes its name is the hash of")
                continue
            }
        }
        return problems
    }
}

// MARK: - Bytes

private func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 8)
    while bytes.count < count { withUnsafeBytes(of: generator.next() as UInt64) { bytes += $0 } }
    return Array(bytes.prefix(count))
}

private func sha256(_ bytes: [UInt8]) throws -> ChunkHash {
    try ChunkHash(digest: SHA256.hash(data: bytes))
}
