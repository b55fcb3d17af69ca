import Crypto
import Foundation
import SyncEngine
import UbiquityProtocol

/// Every item of a container and its kept versions, as the service holds them at one moment.
struct ServiceSnapshot: Sendable {
    var details: [ItemDetail]

    /// Reads every item of `container` and its versions.
    static func take(_ client: ServiceClient, _ container: ContainerID) async throws -> ServiceSnapshot {
        var details: [ItemDetail] = []
        for item in try await client.items(in: container).items {
            details.append(try await client.item(item.id, in: container))
        }
        return ServiceSnapshot(details: details)
    }

    /// The item that is at `path` now (not deleted).
    func live(at path: ItemPath) -> ItemDetail? {
        details.first { !$0.item.isDeleted && $0.item.path == path }
    }

    /// The content hash of every file item's current version, by path.
    var currentFiles: [ItemPath: ChunkHash] {
        var files: [ItemPath: ChunkHash] = [:]
        for detail in details where !detail.item.isDeleted && detail.item.kind == .file {
            guard let current = detail.versions.first(where: { $0.id == detail.item.currentVersion }) else { continue }
            files[detail.item.path] = current.contentHash
        }
        return files
    }

    /// Where `hash` is kept, if anywhere: item path and role of each version holding it.
    func whereIs(_ hash: ChunkHash) -> [String] {
        details.flatMap { detail in
            detail.versions.filter { $0.contentHash == hash }.map { version in
                "\(detail.item.path)\(detail.item.isDeleted ? " (deleted)" : "") as \(role(of: version, in: detail))"
            }
        }
    }

    /// "current", "conflict" (unresolved) or "old".
    func role(of version: VersionRecord, in detail: ItemDetail) -> String {
        version.id == detail.item.currentVersion
            ? "current" : version.isConflict && !version.isResolved ? "conflict" : "old"
    }

    /// What a file in `.ubiquity/tmp` named `<item>.<version>.<purpose>.partial` holds: the item's path and the
    /// version's role.
    func describeTemporaryFile(_ name: String) -> String {
        let parts = name.split(separator: ".")
        guard parts.count >= 2, let detail = details.first(where: { $0.item.id.string == parts[0] }) else {
            return name
        }
        let version = detail.versions.first { $0.id.string == parts[1] }
        return "\(name) (\(detail.item.path), "
            + (version.map { "\(role(of: $0, in: detail)) version" } ?? "a version gone")
            + ")"
    }

    /// What is wrong with `save` on the service: its content must be a version of the item at its path — with
    /// `current`, the current version or an unresolved conflict version.
    func problem(with save: RecordedSave, current: Bool) -> String? {
        let roles =
            live(at: save.path).map { detail in
                detail.versions.filter { $0.contentHash == save.hash }.map { role(of: $0, in: detail) }
            } ?? []
        let kept = current ? roles.contains { $0 == "current" || $0 == "conflict" } : !roles.isEmpty
        guard !kept else { return nil }
        let elsewhere = whereIs(save.hash)
        return "\(save) is \(current ? "neither the current nor a conflict version" : "no version") of its item"
            + (roles.isEmpty ? "" : " (it is \(roles.joined(separator: ", ")))")
            + (elsewhere.isEmpty ? "; it is nowhere on the service" : "; it is kept at \(elsewhere)")
            + "; the item's versions: \(history(at: save.path))"
    }

    /// The versions of the item at `path`, oldest first: saving device, modification time, role, content.
    func history(at path: ItemPath) -> String {
        guard let detail = live(at: path) else { return "none (no item there)" }
        let versions = detail.versions.sorted { $0.modificationDate < $1.modificationDate }
        let ids = Dictionary(uniqueKeysWithValues: versions.enumerated().map { ($1.id, $0 + 1) })
        return versions.enumerated().map { number, version in
            "\(number + 1): \(version.savingDevice.name) \(clock(version.modificationDate)) "
                + "\(role(of: version, in: detail)) \(version.contentHash.string.prefix(12))"
                + (version.basedOn.map { " on \(ids[$0].map(String.init) ?? "?")" } ?? "")
        }.joined(separator: ", ")
    }
}

/// How the files of a container folder (all but `.ubiquity/`) differ from `expected` (content hashes by path):
/// missing, extra or different files. Blocking: call it off the shared concurrency threads.
func differences(of folder: URL, from expected: [ItemPath: ChunkHash]) throws -> [String] {
    var found: [String: ChunkHash] = [:]
    let names = FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []
    for name in names where name != ".ubiquity" && !name.hasPrefix(".ubiquity/") {
        let url = folder.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
        else { continue }
        guard let bytes = try? Data(contentsOf: url) else { continue }  // gone since it was listed
        found[name] = try contentHash(bytes)
    }
    var problems: [String] = []
    for (path, hash) in expected.sorted(by: { $0.key < $1.key }) {
        switch found.removeValue(forKey: path.string) {
        case nil: problems.append("\(path) is missing")
        case let local? where local != hash:
            problems.append(
                "\(path) holds \(local.string.prefix(12)), the current version is \(hash.string.prefix(12))")
        default: break
        }
    }
    for name in found.keys.sorted() { problems.append("\(name) is there, but is no item's current version") }
    return problems
}
