import Foundation
import SyncEngine
import UbiquityProtocol

/// One simulated history: 2 to 4 devices, each running the real ``SyncPlanner`` and ``LocalObservation`` and the
/// observations' outcome rules against a simulated world — a service with the real version and path rules, disks
/// whose writes keep or change inodes and land in coarse clock ticks, a network that partitions, operations that
/// complete in any order, engines that crash between an operation's effect and its record — all chosen by one
/// seeded generator, so a seed replays the same history exactly.
///
/// After the busy phase the world goes quiet (every device online, no user) and the engines run until nothing is
/// left to do; then the invariants are checked: planning terminated; every device holds the service's live items at
/// their paths with their current content and nothing else; every save a user made and did not overwrite or delete
/// themselves is a version on the service (current, conflict or history) — nothing lost.
public struct SimulatedHistory {
    /// What to simulate.
    public struct Configuration: Sendable {
        /// Steps of the busy phase.
        public var steps: Int = 120
        /// The executor acts on the plan's view of a local copy without checking it again when it removes it: the
        /// old engine's remote delete (a check, then an uncoordinated removal). For showing that the simulation
        /// catches what that loses.
        public var uncheckedLocalRemoval = false
        /// The planner's policy.
        public var planner = SyncPlanner.Configuration(eagerDownloadLimit: 1 << 20)

        /// The defaults.
        public init() {}
    }

    /// What went wrong in a history.
    public struct Failure: Error, CustomStringConvertible {
        public let seed: UInt64
        public let problems: [String]
        public let trace: [String]

        public var description: String {
            "history \(seed) failed:\n  " + problems.joined(separator: "\n  ") + "\ntrace (last 80 steps):\n  "
                + trace.suffix(80).joined(separator: "\n  ")
        }
    }

    public let seed: UInt64
    let configuration: Configuration
    var random: SeededGenerator
    var service = SimulatedService()
    var devices: [SimulatedDevice]
    /// The simulated clock, in nanoseconds since 1970.
    var now: Int64 = 1_700_000_000_000_000_000
    var nextInode: UInt64 = 1
    var saveCounter = 0
    /// The last content a user saved into each file (device, inode) and has not overwritten or deleted since.
    var liveSaves: [SaveKey: String] = [:]
    /// What happened, step by step.
    public private(set) var trace: [String] = []

    struct SaveKey: Hashable {
        let device: Int
        let inode: UInt64
    }

    static let paths = ["Documents/a.txt", "Documents/b.txt", "Documents/c.txt", "Documents/d.txt"].map {
        try! ItemPath($0)
    }

    /// A history for `seed`.
    public init(seed: UInt64, configuration: Configuration = Configuration()) {
        self.seed = seed
        self.configuration = configuration
        random = SeededGenerator(seed: seed)
        let count = Int.random(in: 2...4, using: &random)
        devices = (0..<count).map { SimulatedDevice(index: $0) }
    }

    /// Runs the history and checks it.
    /// - Throws: ``Failure`` with the seed, what broke and the trace.
    public mutating func run() throws {
        for _ in 0..<configuration.steps { busyStep() }
        log("-- quiet")
        for index in devices.indices { devices[index].online = true }
        guard settle() else { throw failure(["planning did not terminate: operations still planned after 400 passes"]) }
        let problems = checkInvariants()
        if !problems.isEmpty { throw failure(problems) }
    }

    private func failure(_ problems: [String]) -> Failure {
        Failure(seed: seed, problems: problems, trace: trace)
    }

    mutating func log(_ line: String) { trace.append("[\(trace.count)] " + line) }

    /// One random step of the busy phase.
    mutating func busyStep() {
        now += Int64(Int.random(in: 0...2, using: &random)) * 500_000_000
        let device = Int.random(in: 0..<devices.count, using: &random)
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<22: userAction(on: device)
        case 22..<36: observeLocal(device)
        case 36..<50: observeRemote(device)
        case 50..<64: plan(device)
        case 64..<94: completeOne(device, crashBeforeRecord: random.chance(0.05))
        case 94..<97:
            devices[device].online.toggle()
            log("device\(device) \(devices[device].online ? "back online" : "partitioned")")
        default:
            devices[device].inFlight = [:]
            log("device\(device) engine crashed (operations under way lost)")
        }
    }

    /// The quiet phase: every device observes, plans and completes everything, until no device has work.
    /// In its first passes an app's save may still land on a file an operation is about to replace or remove.
    mutating func settle() -> Bool {
        for pass in 0..<400 {
            var busy = false
            for device in devices.indices {
                observeLocal(device)
                observeRemote(device)
                plan(device, all: true)
                while !devices[device].inFlight.isEmpty {
                    busy = true
                    if pass < 3, random.chance(0.3) { appSaveLands(on: device) }
                    completeOne(device, crashBeforeRecord: false)
                }
            }
            // Racy identities need the clock to move on before their content can be trusted.
            now += 700_000_000
            if !busy { return true }
        }
        return false
    }
}
