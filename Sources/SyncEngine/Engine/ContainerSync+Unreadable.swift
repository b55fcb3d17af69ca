import Foundation
import UbiquityProtocol

extension ProtocolError.Code {
    /// The item's folder or package is there but could not be read (unreadable, a failing disk, no file descriptor
    /// left): what is in it is left as it was, here and on the service, until it can be read. Local: the service
    /// never sends it.
    public static let localCopyUnreadable = ProtocolError.Code(rawValue: "localCopyUnreadable")
}

/// Folders and packages that are there but cannot be read. What is in one is not known, which is not the same as
/// nothing being there: its items are left as they were (a scan that took it for empty would delete them on the
/// service and every device), the rest of the container syncs, and the item of the folder or package carries an
/// upload error (``ProtocolError/Code/localCopyUnreadable``) that apps see, as Apple's uploading error. Each round
/// looks at it again until it can be read, then the error goes.
extension ContainerSync {
    /// The state database's key for the folders and packages found unreadable.
    static let unreadableKey = "unreadable"

    /// The folders and packages the last observations found unreadable and not readable since, with why. A stored
    /// list that cannot be read (a damaged value) is taken for none, and logged: the next full scan finds them
    /// again, while a list that failed every round would stop all syncing.
    func unreadablePaths() throws -> [ItemPath: String] {
        if let unreadable { return unreadable }
        var found: [ItemPath: String] = [:]
        if let stored = try state.value(forKey: Self.unreadableKey) {
            do {
                for (path, why) in try JSONDecoder().decode([String: String].self, from: Data(stored.utf8)) {
                    if let path = try? ItemPath(path) { found[path] = why }
                }
            } catch {
                logger.error(
                    "the list of folders that could not be read is damaged; taken for none",
                    metadata: ["error": "\(error)"])
            }
        }
        unreadable = found
        return found
    }

    /// Takes what an observation found unreadable: `found`, within `roots` (the paths observed and what is below
    /// them; `nil`: the whole container). The items at the paths newly found get the upload error, those at paths
    /// of `roots` readable again lose it, and the set is kept for the next rounds (see ``unreadablePaths()``).
    func noteUnreadable(_ found: [ItemPath: String], within roots: Set<String>?) async throws {
        let before = try unreadablePaths()
        var after = before.filter { path, _ in
            guard let roots else { return false }
            return !roots.contains { path.string == $0 || path.string.hasPrefix($0 + "/") }
        }
        after.merge(found) { _, new in new }
        guard after != before else { return }
        let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }
        for path in changed.sorted() {
            if let why = after[path] {
                logger.warning(
                    "a folder or package could not be read; what is in it stays as it was until it can be",
                    metadata: ["path": "\(path)", "error": "\(why)"])
            } else {
                logger.info("a folder or package can be read again", metadata: ["path": "\(path)"])
            }
        }
        var writes: [RecordWrite] = []
        for old in try state.records(at: changed.sorted()) where changed.contains(old.path) {
            var updated = old
            if let why = after[old.path] {
                updated.uploadError = Self.unreadableError(why)
            } else if old.uploadError?.code == .localCopyUnreadable {
                updated.uploadError = nil
            }
            if updated != old { writes.append(RecordWrite(updated, inStep: isInStep(updated), if: .unchanged(old))) }
        }
        // What writes keep the error by (see keepingUnreadableErrors(_:unreadable:)), these included.
        unreadable = after
        let applied: Set<ItemID>
        do {
            applied = Set(try await commit(writes).map(\.id))
        } catch {
            unreadable = before  // the next observation tries again
            throw error
        }
        for write in writes where !applied.contains(write.id) {
            // Its record changed meanwhile: told again at the next observation of the path.
            guard case .unchanged(let old?) = write.condition else { continue }
            after[old.path] = before[old.path]
        }
        let stored = Dictionary(uniqueKeysWithValues: after.map { ($0.key.string, $0.value) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try state.setValue(
            stored.isEmpty ? nil : String(decoding: try encoder.encode(stored), as: UTF8.self),
            forKey: Self.unreadableKey)
        unreadable = after
    }

    /// The upload error of the item of a folder or package that could not be read, with why.
    static func unreadableError(_ why: String) -> ItemError {
        ItemError(code: .localCopyUnreadable, message: "could not be read: \(why)")
    }

    /// `writes`, with the upload error kept on the items of folders and packages still unreadable: an operation
    /// that succeeds on one (its move sent up, say) clears its item's upload error, which would otherwise stay gone
    /// while the folder still cannot be read, until the set of unreadable paths next changed.
    static func keepingUnreadableErrors(_ writes: [RecordWrite], unreadable: [ItemPath: String]) -> [RecordWrite] {
        writes.map { write in
            guard var record = write.record, record.uploadError == nil, let why = unreadable[record.path] else {
                return write
            }
            record.uploadError = unreadableError(why)
            var kept = write
            kept.record = record
            return kept
        }
    }
}
