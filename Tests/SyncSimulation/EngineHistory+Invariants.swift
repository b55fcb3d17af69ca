import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

extension EngineHistory {
    /// What is wrong once the world is quiet: each device must hold the service's live items at their paths with
    /// their current content and nothing else, know every item in step with the same conflict versions as the
    /// service, and keep no temporary file; and every save a user made and did not overwrite or delete themselves
    /// must be content the service keeps — nothing lost; and no engine may have deleted an item whose file was
    /// still there (``checkDeletion(of:by:)``).
    func problems() -> [String] {
        var problems: [String] = spuriousDeletions
        var files: [String: [UInt8]] = [:]
        var folders: Set<String> = []
        var conflicts: [ItemPath: Set<VersionID>] = [:]
        for (id, item) in world.liveItems() {
            switch item.kind {
            case .directory:
                folders.insert(item.path.string)
            case .file, .package:
                guard let current = item.current, let bytes = world.content(of: current) else {
                    problems.append("the service's \(item.path) has no content")
                    continue
                }
                files[item.path.string] = bytes
            }
            conflicts[item.path] = Set(
                world.allVersions(of: id).filter { $0.isConflict && !$0.isResolved }.map(\.id))
        }
        for device in devices {
            let name = "device\(device.index)"
            var found: [String: [UInt8]] = [:]
            for (path, node) in device.volume.files(below: device.layout.folder.path) {
                if path.hasPrefix(ItemPath.reservedFolderName + "/tmp/") {
                    problems.append("\(name) left a temporary file: \(path)")
                } else if !path.hasPrefix(ItemPath.reservedFolderName + "/") {
                    found[path] = node.bytes
                }
            }
            // Evicted items are placeholders by request: their content stays on the service until asked for.
            let evicted = Set(((try? device.state.items()) ?? []).filter(\.isPlaceholder).map(\.path.string))
            for path in Set(files.keys).union(found.keys).sorted()
            where files[path] != found[path] && !(found[path] == nil && evicted.contains(path)) {
                let want = files[path].map { String(decoding: $0, as: UTF8.self) } ?? "nothing"
                let have = found[path].map { String(decoding: $0, as: UTF8.self) } ?? "nothing"
                problems.append("\(name) holds \(have) at \(path), the service \(want)")
            }
            for folder in folders.sorted()
            where device.volume.identity(at: device.layout.folder.appendingPathComponent(folder).path)?.isDirectory
                != true
            {
                problems.append("\(name) has no folder \(folder)")
            }
            do {
                for item in try device.state.records() where !item.observation.isInStep {
                    problems.append("\(name) is not in step with \(item.item.path): \(item.observation)")
                }
                for item in try device.state.items() {
                    let recorded = Set(
                        try device.state.otherVersions(of: item.id).filter { $0.isConflict && !$0.isResolved }
                            .map(\.id))
                    if let want = conflicts[item.path], recorded != want {
                        problems.append(
                            "\(name) knows \(recorded.count) unresolved conflict versions of \(item.path), the service \(want.count)"
                        )
                    }
                }
            } catch {
                problems.append("\(name)'s state database cannot be read: \(error)")
            }
        }
        let kept = world.contentHashesKept
        for (key, bytes) in liveSaves.sorted(by: { ($0.key.device, $0.key.serial) < ($1.key.device, $1.key.serial) })
        where !kept.contains(ServiceWorld.hash(of: bytes)) {
            problems.append("lost: device\(key.device) saved \(String(decoding: bytes, as: UTF8.self))")
        }
        return problems
    }
}

extension EngineHistory {
    /// Checks a deletion of item `id` from `device` as it reaches the service: the file the device last agreed on
    /// with the service must not still be at its path unchanged (the same inode, size and times). No user deleted
    /// that file; an engine that took it for gone (a folder it could not list read as empty, say) deletes it on
    /// every device, and even if it comes back as a new item, its history and versions do not.
    func checkDeletion(of id: ItemID, by device: Device) {
        guard let record = try? device.state.records([id]).first, let synced = record.observation.synced,
            synced.kind == .file, let known = synced.identity
        else { return }
        let url = device.layout.folder.appendingPathComponent(synced.path.string)
        guard let now = device.volume.identity(at: url.path), !now.isDirectory, now.inode == known.inode,
            now.size == known.size, now.modified == known.modified, now.changed == known.changed
        else { return }
        spuriousDeletions.append(
            "device\(device.index) deleted \(synced.path) (\(id)) while its file was there, unchanged")
    }
}

/// A disk whose checks see the past: the identity of what is at a path is the one last seen when its folder was
/// listed (by a scan), not what is there now — the check outside the lock followed by an act that loses a save
/// landing in between. Kept to show the simulation catches it.
final class StaleDisk: LocalDisk, @unchecked Sendable {
    let disk: SimulatedDisk
    private let lock = NSLock()
    private var seen: [String: FileIdentity] = [:]

    init(_ disk: SimulatedDisk) { self.disk = disk }

    func identity(at url: URL) -> FileIdentity? {
        lock.lock()
        let stale = seen[url.path]
        lock.unlock()
        if let stale, disk.identity(at: url) != nil {
            var past = stale
            past.capturedAt = disk.volume.clock.now
            return past
        }
        return disk.identity(at: url)
    }

    func lookUp(_ url: URL) throws -> FileIdentity? {
        guard try disk.lookUp(url) != nil else { return nil }
        return identity(at: url)
    }

    func contentsOfDirectory(at url: URL) throws -> [String] {
        let names = try disk.contentsOfDirectory(at: url)
        for name in names {
            let member = url.appendingPathComponent(name)
            let found = disk.identity(at: member)
            lock.lock()
            seen[member.path] = found
            lock.unlock()
        }
        return names
    }

    func coordinationBegins() throws { try disk.coordinationBegins() }
    func createDirectory(at url: URL) throws { try disk.createDirectory(at: url) }
    func removeItem(at url: URL) throws { try disk.removeItem(at: url) }
    func removeEmptyDirectory(at url: URL) -> Bool { disk.removeEmptyDirectory(at: url) }
    func moveItem(at source: URL, to target: URL) throws { try disk.moveItem(at: source, to: target) }
    func replaceItem(at target: URL, withItemAt source: URL) throws {
        try disk.replaceItem(at: target, withItemAt: source)
    }
    func setModificationTime(of url: URL, to nanoseconds: Int64) throws {
        try disk.setModificationTime(of: url, to: nanoseconds)
    }
    func openFile(at url: URL) throws -> any DiskFile { try disk.openFile(at: url) }
    func openFileForReading(at url: URL) throws -> any DiskFile { try disk.openFileForReading(at: url) }
    func chunksAndContentHash(ofFileAt url: URL, chunker: FileChunker) throws -> ChunkedContent {
        try disk.chunksAndContentHash(ofFileAt: url, chunker: chunker)
    }
    var blocksThreads: Bool { false }
}
