import Foundation
import SyncEngine
import UbiquityProtocol

extension SimulatedHistory {
    /// What must hold once the world is quiet; each broken rule as a sentence.
    func checkInvariants() -> [String] {
        var problems: [String] = []
        var expected: [ItemPath: String] = [:]
        for (_, item) in service.items where !item.versions.isDeleted {
            guard let current = item.versions.current, let record = item.versions.versions[current] else { continue }
            expected[item.path] = service.contents[record.contentHash]
        }
        for device in devices {
            let disk = device.disk.mapValues(\.content)
            if disk != expected {
                let extra = disk.filter { expected[$0.key] != $0.value }.map { "\($0.key)=\($0.value)" }.sorted()
                let missing = expected.filter { disk[$0.key] != $0.value }.map { "\($0.key)=\($0.value)" }.sorted()
                problems.append(
                    "device\(device.index) is not the service's state: has \(extra), lacks \(missing)")
            }
            var seen: [ItemPath: ItemID] = [:]
            for item in device.items.values {
                guard let path = item.local?.path else { continue }
                if let other = seen[path] {
                    problems.append("device\(device.index): items \(other.short) and \(item.id.short) both at \(path)")
                }
                seen[path] = item.id
            }
            let items = device.items.values.sorted { $0.id.string < $1.id.string }
            for operation in SyncPlanner(configuration: configuration.planner).plan(items) {
                let item = device.items[operation.itemID]
                problems.append("device\(device.index): still planned \(operation) for \(String(describing: item))")
            }
        }
        let kept = service.allContents
        for (key, content) in liveSaves.sorted(by: { $0.value < $1.value }) where !kept.contains(content) {
            problems.append("lost: device\(key.device) saved \(content) (inode \(key.inode)), which no version holds")
        }
        return problems
    }
}
