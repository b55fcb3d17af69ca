import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

extension EngineKillRun {
    /// What the end of a run found: the folders' differences from the service when waiting stopped.
    struct Convergence: Sendable {
        var laptop: [String] = []
        var desktop: [String] = []
    }

    /// Waits until every laptop save is on the service, then until both folders show the service's current
    /// versions (the desktop syncing meanwhile).
    func converge() async throws -> Convergence {
        _ = try await eventually(within: .seconds(30)) {
            try await self.confirmWaitingSaves()
            return self.ledger.withLock { $0.unconfirmed.isEmpty }
        }
        var last = Convergence()
        let (laptop, desktop) = (laptop.folder, desktop.layout.folder)
        _ = try await eventually(within: .seconds(30), every: .milliseconds(200)) {
            try await self.syncDesktop()
            let current = try await ServiceSnapshot.take(self.observer, Self.container).currentFiles
            last = try await offPool {
                Convergence(
                    laptop: try differences(of: laptop, from: current),
                    desktop: try differences(of: desktop, from: current))
            }
            return last.laptop.isEmpty && last.desktop.isEmpty
        }
        return last
    }

    /// Checks the service and both folders against every recorded save.
    func check(converged: Convergence) async throws {
        let snapshot = try await ServiceSnapshot.take(observer, Self.container)
        let ledger = ledger.withLock { $0 }
        var problems: [String] = []
        // Every save is kept; the last one of each path by each device is current or a conflict version, unless
        // the other device saved that path after it.
        let last = Set(
            [Self.laptopName, Self.desktopName].flatMap { ledger.lastSaves(of: $0).values.map(\.sequence) })
        for save in ledger.saves {
            let mustBeCurrent = last.contains(save.sequence) && !ledger.isSuperseded(save)
            if let problem = snapshot.problem(with: save, current: false)
                ?? (mustBeCurrent ? snapshot.problem(with: save, current: true) : nil)
            {
                problems.append(problem)
            }
        }
        for detail in snapshot.details where !detail.item.isDeleted {
            let name = detail.item.path.string.split(separator: "/").last.map(String.init) ?? ""
            if name.hasSuffix(".tmp") || name.contains("conflicted copy") {
                problems.append("the service holds an item \(detail.item.path) that no one saved")
            }
        }
        problems += converged.laptop.map { "on the laptop, \($0)" }
        problems += converged.desktop.map { "on the desktop, \($0)" }
        let current = snapshot.currentFiles
        let (laptop, desktop) = (laptop.folder, desktop.layout.folder)
        problems += try await offPool { try differences(of: laptop, from: current) }.map {
            "finally on the laptop, \($0)"
        }
        problems += try await offPool { try differences(of: desktop, from: current) }.map {
            "finally on the desktop, \($0)"
        }
        let laptopSaves = ledger.saves.filter { $0.device == Self.laptopName }
        print(
            "EngineKillTests: seed \(seed), \(kills) kills, \(laptopSaves.count) laptop saves "
                + "(\(laptopSaves.filter { $0.kills == Self.kills }.count) after the last kill), "
                + "\(ledger.saves.count - laptopSaves.count) desktop saves, \(snapshot.details.count) items, "
                + "\(snapshot.details.flatMap(\.versions).filter { $0.isConflict && !$0.isResolved }.count) conflicts")
        let longest = longest.withLock { $0 }.sorted { $0.value > $1.value }
        print("EngineKillTests: longest steps: " + longest.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        // A guard against hangs, not a timing assertion: no single step needs anywhere near this long (the streams
        // and the convergence wait are bounded and checked otherwise).
        let bounded: Set = ["phase: streams", "phase: convergence"]
        for (step, duration) in longest where duration > .seconds(45) && !bounded.contains(step) {
            problems.append("a step hung: \(step) took \(duration)")
        }
        #expect(
            problems.isEmpty,
            "seed \(seed):\n\(problems.joined(separator: "\n"))\nthe engine's last log:\n\(engineLogTail)")
        #expect(laptopSaves.contains { $0.kills == Self.kills }, "no save was made while the engine was dead")
    }
}
