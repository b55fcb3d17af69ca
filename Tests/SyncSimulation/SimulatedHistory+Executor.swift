import Foundation
import SyncEngine
import UbiquityProtocol

/// The simulated executor: each operation's effect on the world, checked as the real executor checks it (a local
/// copy is touched only if it is still what the operation expects, read inside the same step), then its outcome
/// recorded in the device's observations — unless the engine crashes in between.
extension SimulatedHistory {
    mutating func execute(_ operation: SyncOperation, on index: Int, crashBeforeRecord: Bool) {
        let id = operation.itemID
        guard var item = devices[index].items[id] else { return }
        let online = devices[index].online
        let name = "device\(index)"
        var record = true
        switch operation {
        case .hashLocal(_, let expecting):
            guard let path = item.local?.path, let file = devices[index].disk[path],
                devices[index].identity(of: file, at: now) == expecting
            else { return log("\(name) hash of \(id.short) found another file") }
            item.recordHash(SimulatedService.hash(file.content), of: expecting, readAt: now)
            log("\(name) hashed \(path)")

        case .createRemote(_, let path, let kind):
            guard online else { return log("\(name) create \(path): offline") }
            do {
                item.recordCreated(try service.create(id, path: path, kind: kind))
                log("\(name) created \(id.short) at \(path)")
            } catch { return log("\(name) create \(path): \(error.code)") }

        case .uploadContent(_, let basedOn, let expecting):
            guard online else { return log("\(name) upload: offline") }
            guard let path = item.local?.path, let file = devices[index].disk[path],
                devices[index].identity(of: file, at: now).isUnchanged(since: expecting)
            else { return log("\(name) upload of \(id.short): changed while read") }
            do {
                let (version, view) = try service.commit(
                    id, content: file.content, modified: file.modified, basedOn: basedOn, device: devices[index].saving,
                    versionID: VersionID(uuid: random.uuid()))
                item.recordCommitted(
                    version, hash: SimulatedService.hash(file.content), size: Int64(file.content.utf8.count),
                    identity: devices[index].identity(of: file, at: now), record: view)
                log(
                    "\(name) uploaded \(path) = \(file.content) as \(version.short), current \(view.version?.short ?? "-")"
                )
            } catch { return log("\(name) upload \(path): \(error.code)") }

        case .moveRemote(_, let path):
            guard online else { return log("\(name) move: offline") }
            do {
                item.recordMovedRemote(try service.move(id, to: path))
                log("\(name) moved \(id.short) to \(path) on the service")
            } catch { return log("\(name) move to \(path): \(error.code)") }

        case .deleteRemote(_, let basedOn):
            guard online else { return log("\(name) delete: offline") }
            do {
                try service.delete(id, basedOn: basedOn)
                devices[index].items[id] = nil
                record = false
                log("\(name) deleted \(id.short) on the service")
            } catch {
                if error.code == .itemNotFound, basedOn == nil {
                    devices[index].items[id] = nil
                    record = false
                    log("\(name) \(id.short) never reached the service")
                    break
                }
                guard error.code == .staleDelete, let view = service.view(of: id) else {
                    return log("\(name) delete: \(error.code)")
                }
                item.recordStaleDelete(view)
                log("\(name) delete of \(id.short) was stale")
            }

        case .agreePath(_, let path):
            item.recordAgreedPath(path)
            log("\(name) agreed on \(id.short) at \(path)")

        case .recordPlaceholder(_, let view):
            item.recordPlaceholder(view)
            log("\(name) placeholder \(id.short) at \(view.path)")

        case .download(_, let version, let path, let replacing):
            guard online else { return log("\(name) download: offline") }
            guard let view = service.view(of: id, version: version), let hash = view.contentHash,
                let content = service.contents[hash]
            else { return log("\(name) download of \(id.short): version gone") }
            guard localCopyStands(on: index, at: path, expecting: replacing, synced: item.synced) else {
                return log("\(name) download to \(path): the local copy changed first")
            }
            let file = SimulatedFile(inode: newInode(), content: content, modified: now, changed: now)
            devices[index].disk[path] = file
            var placed = view
            placed.path = path
            item.recordPlaced(placed, identity: devices[index].identity(of: file, at: now))
            log("\(name) downloaded \(content) to \(path)")

        case .makeFolder(_, let path):
            return log("\(name) make folder \(path): the simulated disk has no folders")

        case .adoptEarlier(_, let version, let contentHash, let identity):
            item.recordAdoptedEarlier(version, contentHash: contentHash, identity: identity)
            log("\(name) adopted \(id.short) as its earlier version \(version)")

        case .adoptLocal(_, let view, let identity):
            item.recordAdopted(view, identity: identity)
            log("\(name) adopted \(id.short) at \(view.path)")

        case .moveLocal(_, let from, let to, let expecting):
            guard let file = devices[index].disk[from], file.inode == expecting.inode, devices[index].disk[to] == nil
            else { return log("\(name) move \(from) to \(to): not possible now") }
            var moved = file
            moved.changed = now
            devices[index].disk[from] = nil
            devices[index].disk[to] = moved
            item.recordMovedLocal(to: to, identity: devices[index].identity(of: moved, at: now))
            log("\(name) moved \(from) to \(to)")

        case .deleteLocal(_, let path, let expecting), .evict(_, let path, let expecting):
            let evicting = if case .evict = operation { true } else { false }
            let stands =
                configuration.uncheckedLocalRemoval && !evicting
                ? devices[index].disk[path] != nil
                : localCopyStands(on: index, at: path, expecting: expecting, synced: item.synced)
            guard stands else { return log("\(name) removal of \(path): the local copy changed first") }
            devices[index].disk[path] = nil
            if evicting {
                item.recordLocalRemoved(evicted: true)
            } else {
                devices[index].items[id] = nil
                record = false
            }
            log("\(name) \(evicting ? "evicted" : "removed") \(path)")

        case .moveAside(_, let path, let expecting):
            guard let file = devices[index].disk[path], file.inode == expecting.inode else {
                return log("\(name) move aside \(path): not possible now")
            }
            let target = asideName(for: path, on: index)
            var moved = file
            moved.changed = now
            devices[index].disk[path] = nil
            devices[index].disk[target] = moved
            item.recordMovedAside(to: target, identity: devices[index].identity(of: moved, at: now))
            log("\(name) moved \(path) aside to \(target)")

        case .detachLocal:
            item.recordDetached()
            log("\(name) let the local copy of \(id.short) go")

        case .forget:
            devices[index].items[id] = nil
            record = false
            log("\(name) forgot \(id.short)")
        }
        if crashBeforeRecord {
            devices[index].inFlight = [:]
            log("\(name) engine crashed before recording")
            return
        }
        if record { devices[index].items[id] = item }
    }

    /// Whether the local copy at `path` is still what an operation expects — nothing when `expecting` is `nil`;
    /// else the same file, unchanged, and for a racy identity the synced content — read now, as the real executor
    /// reads it inside its coordinated write.
    func localCopyStands(on index: Int, at path: ItemPath, expecting: LocalFileIdentity?, synced: SyncedView?) -> Bool {
        guard let expecting else { return devices[index].disk[path] == nil }
        guard let file = devices[index].disk[path] else { return false }
        let now = devices[index].identity(of: file, at: self.now)
        guard now.isUnchanged(since: expecting) else { return false }
        guard expecting.isRacy || synced?.identity?.isRacy == true else { return true }
        return SimulatedService.hash(file.content) == synced?.contentHash
    }

    /// "Name (conflicted copy).ext", numbered when taken.
    func asideName(for path: ItemPath, on index: Int) -> ItemPath {
        let base = (path.name as NSString).deletingPathExtension
        let ext = (path.name as NSString).pathExtension
        let folder = (path.string as NSString).deletingLastPathComponent
        for number in 1... {
            let label = number == 1 ? "conflicted copy" : "conflicted copy \(number)"
            let candidate = try! ItemPath("\(folder)/\(base) (\(label)).\(ext)")
            if devices[index].disk[candidate] == nil { return candidate }
        }
        fatalError("unreachable")
    }
}

extension UUIDIdentifier {
    /// The first characters of the id, for traces.
    var short: String { String(string.prefix(6)) }
}
