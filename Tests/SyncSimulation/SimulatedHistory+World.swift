import Foundation
import SyncEngine
import UbiquityProtocol

extension SimulatedHistory {
    /// A user changes device `index`'s disk: creates, edits in place (same inode, same size: a same-tick edit keeps
    /// the identity), saves safely (a new inode renamed over), renames or deletes a file.
    mutating func userAction(on index: Int) {
        if random.chance(0.5), appSaveLands(on: index) { return }
        let present = devices[index].disk.keys.sorted()
        let free = Self.paths.filter { devices[index].disk[$0] == nil }
        let choice = Int.random(in: 0..<100, using: &random)
        if present.isEmpty || (choice < 25 && !free.isEmpty) {
            guard let path = free.randomElement(using: &random) else { return }
            let file = SimulatedFile(inode: newInode(), content: newContent(index), modified: now, changed: now)
            devices[index].disk[path] = file
            liveSaves[SaveKey(device: index, inode: file.inode)] = file.content
            log("device\(index) user creates \(path) = \(file.content)")
            return
        }
        let path = present.randomElement(using: &random)!
        var file = devices[index].disk[path]!
        switch choice {
        case 25..<55:
            editInPlace(path, on: index, by: "user edits")
        case 55..<75:
            liveSaves[SaveKey(device: index, inode: file.inode)] = nil
            let saved = SimulatedFile(inode: newInode(), content: newContent(index), modified: now, changed: now)
            devices[index].disk[path] = saved
            liveSaves[SaveKey(device: index, inode: saved.inode)] = saved.content
            log("device\(index) user saves \(path) safely = \(saved.content)")
        case 75..<88:
            guard let target = free.randomElement(using: &random) else { return }
            file.changed = now
            devices[index].disk[path] = nil
            devices[index].disk[target] = file
            log("device\(index) user renames \(path) to \(target)")
        default:
            devices[index].disk[path] = nil
            liveSaves[SaveKey(device: index, inode: file.inode)] = nil
            log("device\(index) user deletes \(path)")
        }
    }

    /// An app's save landing on a file the engine is about to replace or remove (in place, in the same clock tick
    /// as often as not): the race every executor check is there for. Returns whether there was such a file.
    @discardableResult
    mutating func appSaveLands(on index: Int) -> Bool {
        let targets = devices[index].inFlight.values.compactMap(Self.localTarget).sorted()
        guard let path = targets.randomElement(using: &random), devices[index].disk[path] != nil else { return false }
        editInPlace(path, on: index, by: "app saves while the engine works on")
        return true
    }

    /// Writes new content of the same size into the file at `path` (same inode, modified now): a save.
    mutating func editInPlace(_ path: ItemPath, on index: Int, by who: String) {
        guard var file = devices[index].disk[path] else { return }
        file.content = newContent(index)
        file.modified = now
        file.changed = now
        devices[index].disk[path] = file
        liveSaves[SaveKey(device: index, inode: file.inode)] = file.content
        log("device\(index) \(who) \(path) = \(file.content)")
    }

    /// The local file an operation replaces or removes.
    static func localTarget(of operation: SyncOperation) -> ItemPath? {
        switch operation {
        case .download(_, _, let path, let replacing?): replacing.size >= 0 ? path : nil
        case .deleteLocal(_, let path, _), .evict(_, let path, _), .moveLocal(_, let path, _, _): path
        default: nil
        }
    }

    mutating func newInode() -> UInt64 {
        defer { nextInode += 1 }
        return nextInode
    }

    /// A new content, always the same length (so edits keep the size).
    mutating func newContent(_ device: Int) -> String {
        saveCounter += 1
        let text = "d\(device)s\(saveCounter)"
        return text + String(repeating: ".", count: max(0, 12 - text.count))
    }

    /// The engine of device `index` scans its disk.
    mutating func observeLocal(_ index: Int) {
        var scanned: [ItemPath: ScannedItem] = [:]
        for (path, file) in devices[index].disk {
            scanned[path] = ScannedItem(path: path, kind: .file, identity: devices[index].identity(of: file, at: now))
        }
        var items = devices[index].items
        LocalObservation.apply(scanned, to: &items) { ItemID(uuid: random.uuid()) }
        devices[index].items = items
    }

    /// The engine of device `index` reads the service's records (when online).
    mutating func observeRemote(_ index: Int) {
        guard devices[index].online else { return }
        for id in service.items.keys {
            let view = service.view(of: id)!
            if devices[index].items[id] == nil {
                if view.isDeleted { continue }
                devices[index].items[id] = ItemObservation(id: id)
            }
            devices[index].items[id]?.remote = view
        }
    }

    /// The engine of device `index` plans, and starts some of the operations (all of them with `all`).
    mutating func plan(_ index: Int, all: Bool = false) {
        let planner = SyncPlanner(configuration: configuration.planner)
        let items = devices[index].items.values.sorted { $0.id.string < $1.id.string }
        for operation in planner.plan(items, inFlight: Set(devices[index].inFlight.keys))
        where all || random.chance(0.7) {
            devices[index].inFlight[operation.itemID] = operation
        }
    }

    /// Completes one operation of device `index` under way, chosen at random.
    mutating func completeOne(_ index: Int, crashBeforeRecord: Bool) {
        let started = devices[index].inFlight.keys.sorted { $0.string < $1.string }
        guard let id = started.randomElement(using: &random), let operation = devices[index].inFlight[id] else {
            return
        }
        devices[index].inFlight[id] = nil
        execute(operation, on: index, crashBeforeRecord: crashBeforeRecord)
    }
}
