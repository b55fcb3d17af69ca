import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One seeded history of 2 to 4 devices, each running the engine itself — ``ContainerSync``: its scans, planner,
/// lanes, coordinated writes and state database — against a simulated world: an in-memory service with the real
/// service's rules (``ServiceWorld``), a disk in memory per device (``SimulatedVolume``) on a simulated clock, a
/// network that holds every request until the history delivers it (in any order, or never: partitions, lost
/// answers), changes to a disk that need space, reads and coordinated accesses refused now and then (a full or
/// failing disk, locks not had in time), and engines
/// killed at any wait or right after any change they make to the disk, then started again from their state database
/// and disk as they were. Every engine task runs on the history's own thread, one job at a time in an order the seed
/// chooses, and users' saves land between any two of them; so a seed replays the same history exactly.
///
/// After the busy phase the world goes quiet (every device online, nothing killed, no user) and each device runs
/// rounds until a whole pass changes nothing; then the invariants are checked (``EngineHistory/problems()``).
public final class EngineHistory: @unchecked Sendable {
    /// What to simulate.
    public struct Configuration: Sendable {
        /// Steps of the busy phase.
        public var steps = 80
        /// The chance that an engine is killed right after a change it makes to its disk, in the busy phase.
        public var crashAfterChange = 0.01
        /// The chance that a change an engine makes to its disk that needs space fails, as on a full disk, in the
        /// busy phase. Drawn from a generator of its own, so a history runs as it would without until one fails.
        public var failedGrowth = 0.03
        /// The chance that an engine's opening of a file to read it, or listing of a folder, fails, as on a failing
        /// disk or for an item made unreadable, in the busy phase (drawn as ``failedGrowth`` is).
        public var failedRead = 0.03
        /// The chance that a coordinated access an engine takes fails before it looks at anything, as when its
        /// locks are not had in time or a presenter's save fails, in the busy phase (drawn as ``failedGrowth`` is).
        public var failedCoordination = 0.02
        /// The chance, at each step of the busy phase, that a user takes a folder's permissions away (the engine
        /// can then neither list it nor reach anything below it) or gives a folder's back (drawn as ``failedGrowth``
        /// is). Every folder's are given back as the world goes quiet.
        public var closedFolder = 0.02
        /// The chance that a killed engine's state database is found damaged, in the busy phase: its successor
        /// starts afresh, from an empty one, as the engine does with a damaged one it moved aside (drawn as
        /// ``failedGrowth`` is).
        public var lostState = 0.1
        /// The chance, at each step of the busy phase, that a device's container folder is unmounted under its
        /// engine (an empty mount point of another device in its place) or mounted again (drawn as ``failedGrowth``
        /// is). Every one is mounted again as the world goes quiet.
        public var unmounted = 0.01
        /// The chance that a user's save lands between two of an engine's jobs, in the busy phase.
        public var saveBetweenJobs = 0.01
        /// The engine's check of a local copy inside its coordinated write sees what the last scan saw, not the
        /// disk: a check outside the lock followed by an act (the old engine's remote delete). For showing that the
        /// simulation catches what that loses.
        public var staleChecks = false
        /// Requests and answers go through JSON, as on the wire (`nil`: in every other history, by seed).
        public var wireFormat: Bool? = nil
        /// Files are cut into chunks of a few bytes, and contents are long enough to hold several, so a save of a
        /// file others hold goes up as a manifest delta against its base (`nil`: in every third history, by seed).
        public var smallChunks: Bool? = nil

        /// The defaults.
        public init() {}
    }

    /// What went wrong in a history.
    public struct Failure: Error, CustomStringConvertible {
        public let seed: UInt64
        public let problems: [String]
        public let trace: [String]

        public var description: String {
            "engine history \(seed) failed:\n  " + problems.joined(separator: "\n  ")
                + "\ntrace (last 2000 lines):\n  " + trace.suffix(2000).joined(separator: "\n  ")
        }
    }

    /// One run of a device's engine, from its start to its death.
    final class Engine: @unchecked Sendable {
        let sync: ContainerSync
        let disk: SimulatedDisk
        let executor: SimulatedExecutor
        var alive = true
        var roundRunning = false
        var roundsEnded = 0
        var lastRoundFailed = false

        init(sync: ContainerSync, disk: SimulatedDisk, executor: SimulatedExecutor) {
            self.sync = sync
            self.disk = disk
            self.executor = executor
        }
    }

    /// One simulated device.
    final class Device: @unchecked Sendable {
        let index: Int
        let volume: SimulatedVolume
        let saving: SavingDevice
        let layout: ContainerLayout
        var state: LocalStateStore
        var engine: Engine!
        var online = true
        /// Paths users changed since the device's last round began, for a round that scans only them.
        var touched: Set<String> = []

        init(index: Int, volume: SimulatedVolume, saving: SavingDevice, layout: ContainerLayout, state: LocalStateStore)
        {
            self.index = index
            self.volume = volume
            self.saving = saving
            self.layout = layout
            self.state = state
        }
    }

    /// A request on its way to the service.
    struct Request {
        let device: Int
        let engine: Engine
        let label: String
        let work: @Sendable () throws -> any Sendable
        let answer: UnsafeContinuation<any Sendable, any Error>
    }

    /// A request that did not reach the service, or whose answer did not come back.
    struct NetworkFailure: Error, CustomStringConvertible {
        var description: String { "the network failed" }
    }

    public let seed: UInt64
    let configuration: Configuration
    var random: SeededGenerator
    /// Where a disk's failures are drawn from (``Configuration/failedGrowth``).
    var faults: SeededGenerator
    let clock = SimulatedClock()
    let world: ServiceWorld
    let container = ServiceWorld.defaultContainer
    var devices: [Device] = []
    var dead: [Engine] = []
    var pending: [Request] = []
    /// The drafts' growth on its way to each device by push: device, item, version, length.
    var draftPushes: [(device: Int, item: ItemID, version: VersionID, count: Int)] = []
    /// The last content a user saved into each file (device, the file's serial on its volume) and has not overwritten
    /// or deleted since.
    var liveSaves: [SaveKey: [UInt8]] = [:]
    /// Deletions an engine sent of items whose file was still where it was, unchanged (see
    /// ``checkDeletion(of:by:)``).
    var spuriousDeletions: [String] = []
    var saveCounter = 0
    var quiet = false
    let root: URL
    let thread = pthread_self()
    var strayThread = false
    /// What happened, step by step.
    public private(set) var trace: [String] = []

    struct SaveKey: Hashable {
        let device: Int
        let serial: UInt64
    }

    static let names = ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]
    static let folders = ["Documents", "Documents/Notes"]
    /// A client the engines never use (their service is the simulated one), for ``ContainerSync``'s signature.
    static let unusedClient = ServiceClient(baseURL: "http://simulated.invalid")

    /// A history for `seed`.
    /// Whether this history cuts files into small chunks (``Configuration/smallChunks``).
    var usesSmallChunks: Bool { configuration.smallChunks ?? (seed % 3 == 1) }
    /// How many items out of step each engine plans at once: one to three for most seeds, so that a history's few
    /// items span pages; the engine's default for every fourth.
    var planningPage: Int { seed % 4 == 3 ? ContainerSync.defaultPlanningPage : Int(seed / 4 % 3) + 1 }
    /// How many changes a page of the service's feed holds: one or two for one seed in three, so that a round reads
    /// the feed over several pages and settles what each brought before the next; the service's default for the rest.
    static func feedPage(seed: UInt64) -> Int { seed % 3 == 2 ? Int(seed / 3 % 2) + 1 : 1_000 }
    /// From what size a first version goes up while it is cut: every file's for two seeds in five, so that the
    /// pipelined upload meets the histories' edits, moves and crashes; the engine's default (none here) for the rest.
    var pipelinedUploadBytes: Int64 { seed % 5 < 2 ? 0 : 16 << 20 }
    /// Up to what size a version's chunks go in the request that commits it: none for three seeds in seven, so that
    /// small files' chunks also go up first on their own; the engine's default for the rest.
    var inlineUploadBytes: Int64 { seed % 7 < 3 ? 0 : 64 << 10 }
    /// How many bytes of new small files' content a feed page is asked to carry: none for four seeds in eleven, so
    /// that they are downloaded too; the engine's default for the rest.
    var feedChunkBytes: Int { seed % 11 < 4 ? 0 : ChangePage.maximumChunkBytes }

    /// Chunks of 2 to 32 bytes, about 8 on average.
    static let smallChunker = FileChunker(
        chunker: try! FastCDC(
            FastCDC.Configuration(minimumSize: 2, averageSize: 8, maximumSize: 32, normalizationLevel: 1)))

    public init(seed: UInt64, configuration: Configuration = Configuration()) throws {
        self.seed = seed
        self.configuration = configuration
        world = ServiceWorld(limits: .init(changesPerPage: Self.feedPage(seed: seed)))
        random = SeededGenerator(seed: seed)
        faults = SeededGenerator(seed: ~seed)
        root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-sim-\(getpid())-\(seed)-\(UUID().uuidString.prefix(8))")
        let count = Int.random(in: 2...4, using: &random)
        for index in 0..<count {
            let layout = ContainerLayout(root: root.appendingPathComponent("device\(index)"), container: container)
            let volume = SimulatedVolume(device: UInt64(index + 1), clock: clock)
            try volume.makeDirectory(layout.documents.path)
            try volume.makeDirectory(layout.temporary.path)
            let saving = SavingDevice(
                id: DeviceID(uuid: UUID(uuid: (UInt8(index), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))),
                name: "device\(index)")
            let device = Device(
                index: index, volume: volume, saving: saving, layout: layout, state: try LocalStateStore.inMemory())
            devices.append(device)
            device.engine = try start(device)
        }
    }

    /// The engines still running let their locks go: a task a history left suspended (a request never delivered)
    /// keeps its engine alive, and with it the lock file's descriptor.
    deinit {
        for device in devices { device.engine?.sync.releaseLock() }
        try? FileManager.default.removeItem(at: root)
    }

    func log(_ line: String) { trace.append("[\(trace.count)] " + line) }

    /// Runs the history.
    /// - Throws: ``Failure`` with the seed, what broke and the trace.
    public func run() throws {
        for _ in 0..<configuration.steps {
            try busyStep()
        }
        log("-- quiet")
        quiet = true
        for device in devices {
            device.online = true
            for folder in device.volume.closedFolders.sorted() { setPermissions(of: folder, on: device, open: true) }
            if device.volume.unmountedFolder != nil {
                device.volume.setUnmounted(nil)
                log("device\(device.index) container folder mounted again")
            }
        }
        var problems = try settle()
        if problems.isEmpty { problems = self.problems() }
        if strayThread { problems.append("an engine task ran off the history's thread: the history is not replayable") }
        if !problems.isEmpty { throw Failure(seed: seed, problems: problems, trace: trace) }
    }

    // MARK: Engines

    /// Starts an engine for `device` from its state database and disk as they are.
    func start(_ device: Device) throws -> Engine {
        let executor = SimulatedExecutor()
        let holder = EngineHolder()
        let disk = SimulatedDisk(
            volume: device.volume,
            beforeAccess: { [unowned self] in try self.beforeAccess($0, on: device, by: holder) },
            afterChange: { [unowned self] in try self.afterChange(on: device, by: holder) },
            onCall: { [unowned self] in self.checkThread() })
        let service = SimulatedSyncService(
            world: world, container: container, device: device.saving,
            usesJSON: self.configuration.wireFormat ?? (seed % 2 == 0),
            onDelete: { [unowned self] id in self.checkDeletion(of: id, by: device) }
        ) {
            [unowned self] label, work in
            try await self.send(label, work, from: device, by: holder)
        }
        let configuration = ContainerSync.Configuration(
            eagerDownloadLimit: 1 << 20,
            chunker: usesSmallChunks ? Self.smallChunker : FileChunker(),
            disk: self.configuration.staleChecks ? StaleDisk(disk) : disk,
            makeIdentifier: { [unowned self] in self.random.uuid() }, taskExecutor: executor,
            // Pages of a few items, so that histories plan across pages: a page's waiting items give way to the next.
            planningPage: planningPage, pipelinedUploadBytes: pipelinedUploadBytes,
            inlineUploadBytes: inlineUploadBytes, feedChunkBytes: feedChunkBytes)
        // A killed engine's lock was let go (unlocked, not only closed), so a new engine takes it at once.
        let sync = try ContainerSync(
            layout: device.layout, client: Self.unusedClient, service: service, device: device.saving,
            configuration: configuration, state: device.state)
        let engine = Engine(sync: sync, disk: disk, executor: executor)
        holder.engine = engine
        // As the engine's start does: what a killed engine left in its temporary folder goes.
        Task(executorPreference: executor) { await sync.clearTemporaryFiles() }
        return engine
    }

    /// Kills `device`'s engine now: its disk and network are cut (what it still runs reaches neither), its state
    /// database stays as it was committed, and a new engine starts from there.
    func kill(_ device: Device, _ why: String) throws {
        let old = device.engine!
        old.alive = false
        old.disk.kill()
        old.sync.releaseLock()
        dead.append(old)
        // The next engine starts with its disk mounted (an engine started on an empty mount point would open a new
        // state database there, and the disk mounted over it later would need another start).
        if device.volume.unmountedFolder != nil {
            device.volume.setUnmounted(nil)
            log("device\(device.index) container folder mounted again")
        }
        if !quiet, faults.chance(configuration.lostState) {
            device.state = try LocalStateStore.inMemory()
            device.engine = try start(device)
            log("device\(device.index) engine killed \(why); its state database damaged, it starts afresh")
            return
        }
        device.state = try device.state.snapshot()
        device.engine = try start(device)
        log("device\(device.index) engine killed \(why); restarted")
    }

    func beforeAccess(_ access: SimulatedDisk.Access, on device: Device, by holder: EngineHolder) throws {
        guard !quiet, let engine = holder.engine, engine.alive else { return }
        switch access {
        case .growth where faults.chance(configuration.failedGrowth):
            log("device\(device.index) disk full: a change the engine makes fails")
            throw POSIXError(.ENOSPC)
        case .read where faults.chance(configuration.failedRead):
            log("device\(device.index) a read the engine makes fails")
            throw POSIXError(.EIO)
        case .list where faults.chance(configuration.failedRead):
            log("device\(device.index) a folder listing the engine makes fails")
            throw POSIXError(.EIO)
        case .coordination where faults.chance(configuration.failedCoordination):
            log("device\(device.index) a coordinated access the engine takes fails")
            throw FileCoordinationError(.timedOut, "the simulation's coordination failed")
        default: return
        }
    }

    func afterChange(on device: Device, by holder: EngineHolder) throws {
        guard !quiet, let engine = holder.engine, engine.alive, random.chance(configuration.crashAfterChange) else {
            return
        }
        try kill(device, "right after a change to its disk")
        throw SimulatedCrash()
    }

    func checkThread() {
        if pthread_equal(pthread_self(), thread) == 0 { strayThread = true }
    }

    // MARK: The network

    /// Holds a request until the history delivers it; refused at once when the device is offline.
    func send(
        _ label: String, _ work: @escaping @Sendable () throws -> any Sendable, from device: Device,
        by holder: EngineHolder
    ) async throws -> any Sendable {
        try await withUnsafeThrowingContinuation { answer in
            checkThread()
            guard let engine = holder.engine, engine.alive, device.online else {
                return answer.resume(throwing: NetworkFailure())
            }
            pending.append(Request(device: device.index, engine: engine, label: label, work: work, answer: answer))
        }
    }

    /// Delivers the request at `index`: it reaches the service (unless its device went offline meanwhile), and
    /// its answer comes back — or, now and then in the busy phase, is lost on the way.
    func deliver(_ index: Int) {
        let request = pending.remove(at: index)
        let name = "device\(request.device)"
        guard request.engine.alive, devices[request.device].online else {
            log("\(name) \(request.label): no answer")
            return request.answer.resume(throwing: NetworkFailure())
        }
        let result = Result { try request.work() }
        if !quiet, random.chance(0.04) {
            log("\(name) \(request.label): done, answer lost")
            return request.answer.resume(throwing: NetworkFailure())
        }
        switch result {
        case .success: log("\(name) \(request.label)")
        case .failure(let error): log("\(name) \(request.label): \(error)")
        }
        request.answer.resume(with: result)
    }

    // MARK: Running the engines

    /// Every executor with jobs waiting: the live engines' and the dead ones' (which wind down, reaching nothing).
    var executors: [(Int, SimulatedExecutor)] {
        (devices.map { ($0.index, $0.engine.executor) } + dead.map { (-1, $0.executor) }).filter {
            $0.1.waiting > 0
        }
    }

    /// Runs one waiting job, chosen by the seed; a user's save may land first. Returns `false` when none waits.
    func runOneJob() throws -> Bool {
        let ready = executors
        guard let (device, executor) = ready.randomElement(using: &random) else { return false }
        if !quiet, device >= 0, random.chance(configuration.saveBetweenJobs) {
            try userSave(on: devices[device], between: true)
        }
        executor.run(Int.random(in: 0..<executor.waiting, using: &random))
        return true
    }

    /// Runs jobs until every task waits for the network or has ended.
    func runUntilWaiting() throws {
        var count = 0
        while try runOneJob() {
            count += 1
            if count > 500_000 { throw Failure(seed: seed, problems: ["engines ran on without end"], trace: trace) }
        }
    }

    /// Starts a round on `device` unless one runs.
    func startRound(_ device: Device, scope: ScanScope) {
        let engine = device.engine!
        guard !engine.roundRunning else { return }
        engine.roundRunning = true
        device.touched = []
        log("device\(device.index) round (\(scope == .everything ? "full scan" : "scan of changes"))")
        Task(executorPreference: engine.executor) { [unowned self] in
            var failure: (any Error)?
            do { try await engine.sync.syncOnce(scanning: scope) } catch { failure = error }
            engine.roundRunning = false
            engine.roundsEnded += 1
            engine.lastRoundFailed = failure != nil
            if engine.alive {
                log("device\(device.index) round ended\(failure.map { ": \($0)" } ?? "")")
            }
        }
    }

    // MARK: The busy phase

    func busyStep() throws {
        clock.advance(by: Int64(Int.random(in: 0...2, using: &random)) * 500_000_000)
        let device = devices.randomElement(using: &random)!
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<26: try userAction(on: device)
        case 26..<54:
            if !pending.isEmpty { deliver(Int.random(in: 0..<pending.count, using: &random)) }
        case 54..<58:
            pushDraft()
        case 58..<82:
            let scope: ScanScope = random.chance(0.5) ? .everything : .paths(device.touched)
            startRound(device, scope: scope)
        case 82..<90:
            try requestDownloadOrEviction(on: device)
        case 90..<96:
            device.online.toggle()
            log("device\(device.index) \(device.online ? "back online" : "partitioned")")
        default:
            try kill(device, "while it waited")
        }
        if faults.chance(configuration.closedFolder) { togglePermissions() }
        if faults.chance(configuration.unmounted) { toggleMount() }
        try runUntilWaiting()
    }

    /// A device's container folder is unmounted under its engine, or mounted again.
    func toggleMount() {
        let device = devices[Int.random(in: 0..<devices.count, using: &faults)]
        let mounted = device.volume.unmountedFolder != nil
        device.volume.setUnmounted(mounted ? nil : device.layout.folder.path)
        log("device\(device.index) container folder \(mounted ? "mounted again" : "unmounted under the engine")")
    }

    /// A user takes a folder's permissions away on some device, or gives a folder's back.
    func togglePermissions() {
        let device = devices[Int.random(in: 0..<devices.count, using: &faults)]
        if let folder = device.volume.closedFolders.sorted().first, faults.chance(0.5) {
            setPermissions(of: folder, on: device, open: true)
            return
        }
        let folder = device.layout.folder.appendingPathComponent(Self.folders.randomElement(using: &faults)!).path
        guard device.volume.identity(at: folder)?.isDirectory == true else { return }
        setPermissions(of: folder, on: device, open: false)
    }

    /// Takes the permissions of `folder` (a path on `device`'s volume) away, or gives them back; the watcher names
    /// it, as a real one reports the change of its attributes.
    func setPermissions(of folder: String, on device: Device, open: Bool) {
        device.volume.setPermissions(of: folder, open: open)
        let url = URL(fileURLWithPath: folder)
        touch(url, on: device)
        log(
            "device\(device.index) user \(open ? "gives back" : "takes away") the permissions of \(relativePath(url, on: device))"
        )
    }

    /// Tells one device, as push would, of a draft's growth the world had news of (any device's, its own too: the
    /// engine leaves out what it uploads itself); lost when the device is offline or its engine dead.
    func pushDraft() {
        for news in world.takeDraftNews() {
            draftPushes += devices.map { ($0.index, news.item, news.version, news.count) }
        }
        guard !draftPushes.isEmpty else { return }
        let push = draftPushes.remove(at: Int.random(in: 0..<draftPushes.count, using: &random))
        let device = devices[push.device]
        guard let engine = device.engine, engine.alive, device.online else { return }
        log("device\(push.device) push: draft of \(push.version) of \(push.item) at \(push.count)")
        Task(executorPreference: engine.executor) {
            await engine.sync.draftGrew(push.item, version: push.version, count: push.count)
        }
    }

    /// An app asks for an item's download, or evicts its local copy, through the engine's API.
    func requestDownloadOrEviction(on device: Device) throws {
        let engine = device.engine!
        let items = try device.state.items().filter { $0.kind == .file }
        guard let item = items.randomElement(using: &random) else { return }
        let evict = random.chance(0.5)
        log("device\(device.index) app asks to \(evict ? "evict" : "download") \(item.path)")
        Task(executorPreference: engine.executor) {
            if evict {
                try? await engine.sync.evict(item.path)
            } else {
                try? await engine.sync.download(item.path)
            }
        }
    }

    // MARK: The quiet phase

    /// Runs rounds on every device until a whole pass changes nothing. Returns what kept it from settling.
    func settle() throws -> [String] {
        var previous = ""
        var beforeLast = ""  // the fingerprint before the last pass, to tell what it changed should none settle
        for _ in 0..<40 {
            for device in devices {
                startRound(device, scope: .everything)
                while device.engine.roundRunning {
                    try runUntilWaiting()
                    guard device.engine.roundRunning else { break }
                    guard !pending.isEmpty else {
                        return ["device\(device.index)'s round waits for nothing: it never ends"]
                    }
                    deliver(Int.random(in: 0..<pending.count, using: &random))
                }
                try runUntilWaiting()
            }
            clock.advance(by: 3_000_000_000)
            let now = try fingerprint()
            if now == previous, !devices.contains(where: \.engine.lastRoundFailed) { return [] }
            (beforeLast, previous) = (previous, now)
        }
        let changed = Self.linesChanged(from: beforeLast, to: previous)
        let failed = devices.filter(\.engine.lastRoundFailed).map { "device\($0.index)" }
        return ["the devices did not settle in 40 passes of rounds; the last pass changed:"]
            + (changed.isEmpty
                ? ["  nothing, but the last round failed on \(failed.joined(separator: ", "))"] : changed)
    }

    /// The lines of `new` not in `old` and of `old` not in `new` (at most five of each, each cut to 2,000 characters).
    static func linesChanged(from old: String, to new: String) -> [String] {
        let (before, after) = (old.split(separator: "\n"), new.split(separator: "\n"))
        let gone = before.filter { !after.contains($0) }.prefix(5).map { "  - " + $0.prefix(2_000) }
        let came = after.filter { !before.contains($0) }.prefix(5).map { "  + " + $0.prefix(2_000) }
        return gone + came
    }

    /// Everything a pass of rounds may change: the service, every disk, every state database.
    func fingerprint() throws -> String {
        var parts = [world.summary]
        for device in devices {
            let files = device.volume.files(below: device.layout.folder.path)
            // A line for each file and record, so that what a pass changed can be told line by line.
            parts += files.keys.sorted().map {
                "device\(device.index) \($0)=\(files[$0]!.serial):\(files[$0]!.bytes.count)"
            }
            parts += try device.state.records().sorted { $0.id < $1.id }.map { "device\(device.index) \($0)" }
        }
        return parts.joined(separator: "\n")
    }
}

/// Where a disk's and network's hooks find the engine they belong to, once it is made.
final class EngineHolder: @unchecked Sendable {
    /// Weak: the engine's disk holds its holder.
    weak var engine: EngineHistory.Engine?
}
