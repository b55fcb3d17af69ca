import Crypto
import Foundation
import GRDB

/// Where a store keeps binary values too large for its database: as Core Data does, in
/// `.<store name>_SUPPORT/_EXTERNAL_DATA/` beside the store's file, one file per value.
///
/// A value of a binary attribute that allows external storage (``AttributeDescription/allowsExternalBinaryDataStorage``)
/// and is larger than ``AttributeDescription/externalStorageThreshold`` is written to a file named by the SHA-256 of
/// its bytes, and its column holds the text `external:<hash>` instead of the bytes (a binary column otherwise holds
/// only blobs, so the two never mix up). Reading checks the file against its name: a missing or damaged file is a
/// clear ``RecordStoreError/Code/storeFailed``, never other bytes.
///
/// The file is written, and flushed, before the transaction that refers to it commits: a crash leaves at most a file
/// nothing refers to. A file is removed after the commit of the transaction that made nothing refer to it any more.
/// Values travel inside transaction logs and baselines as any other value; only the store keeps them apart.
struct ExternalData: Sendable {
    /// The folder of the files.
    let folder: URL

    /// The prefix of a column that refers to a file.
    static let referencePrefix = "external:"

    /// The folder for the store at `storeURL`.
    init(storeURL: URL) {
        let name = storeURL.deletingPathExtension().lastPathComponent
        folder = storeURL.deletingLastPathComponent()
            .appendingPathComponent(".\(name)_SUPPORT", isDirectory: true)
            .appendingPathComponent("_EXTERNAL_DATA", isDirectory: true)
    }

    /// Keeps `data` in its file (written once: the name is its content's hash) and returns the column's reference.
    func store(_ data: Data) throws(RecordStoreError) -> String {
        let hash = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        let file = folder.appendingPathComponent(hash, isDirectory: false)
        if FileManager.default.fileExists(atPath: file.path) { return Self.referencePrefix + hash }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let temporary = folder.appendingPathComponent(
                ".\(hash).\(UUID().uuidString.prefix(8)).tmp", isDirectory: false)
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
                throw RecordStoreError(.storeFailed, "cannot create \(temporary.path)")
            }
            let handle = try FileHandle(forWritingTo: temporary)
            do {
                try handle.write(contentsOf: data)
                try handle.synchronize()
                try handle.close()
            } catch {
                try? handle.close()
                try? FileManager.default.removeItem(at: temporary)
                throw error
            }
            guard rename(temporary.path, file.path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                throw RecordStoreError(.storeFailed, "cannot put \(file.lastPathComponent) in place (errno \(errno))")
            }
            Self.synchronize(folder: folder)
        } catch let error as RecordStoreError {
            throw error
        } catch {
            throw RecordStoreError(.storeFailed, "cannot keep a large value in \(folder.path)", underlying: error)
        }
        return Self.referencePrefix + hash
    }

    /// The bytes a column's reference names, checked against their hash.
    func load(_ reference: String, for property: String) throws(RecordStoreError) -> Data {
        let hash = String(reference.dropFirst(Self.referencePrefix.count))
        guard hash.count == 64, hash.allSatisfy(\.isHexDigit) else {
            throw RecordStoreError(.storeFailed, "\(property) refers to \(String(reflecting: reference)), not a file")
        }
        let file = folder.appendingPathComponent(hash, isDirectory: false)
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw RecordStoreError(.storeFailed, "\(property)'s value is missing: \(file.path) cannot be read")
        }
        guard SHA256.hash(data: data).map({ String(format: "%02x", $0) }).joined() == hash else {
            throw RecordStoreError(.storeFailed, "\(property)'s value is damaged: \(file.path) does not match its hash")
        }
        return data
    }

    /// Removes, after the current transaction commits, the files of `references` that no column refers to then.
    func removeAfterCommit(_ references: Set<String>, in db: Database, schema: StoreSchema) {
        guard !references.isEmpty else { return }
        let columns = schema.externalColumns
        db.afterNextTransaction(onCommit: { db in
            for reference in references {
                let used = columns.contains { table, column in
                    (try? Bool.fetchOne(
                        db, sql: "SELECT EXISTS (SELECT 1 FROM \(table) WHERE \"\(column)\" = ?)",
                        arguments: [reference])) ?? true
                }
                guard !used else { continue }
                let hash = String(reference.dropFirst(Self.referencePrefix.count))
                try? FileManager.default.removeItem(at: folder.appendingPathComponent(hash, isDirectory: false))
            }
        })
    }

    private static func synchronize(folder: URL) {
        let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }
}
