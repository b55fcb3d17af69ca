import Crypto
import Foundation
import GRDB
import Testing

@testable import RecordStore

/// Large binary values of attributes that allow it live beside the database as files of their own, as Core Data's
/// external storage keeps them; they sync inside the logs as any value.
@Suite("Record store external binary data")
struct ExternalDataTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(
            name: "Photo",
            attributes: [
                AttributeDescription(name: "name", type: .string, defaultValue: .string("")),
                AttributeDescription(
                    name: "image", type: .binaryData, isOptional: true, allowsExternalBinaryDataStorage: true),
                AttributeDescription(name: "thumbnail", type: .binaryData, isOptional: true),
            ])
    ])

    /// `count` bytes that differ with `seed`.
    static func bytes(_ count: Int, seed: UInt8) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed })
    }

    static func hash(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    /// The files of a store's external data folder.
    static func files(of store: URL) -> Set<String> {
        let folder = ExternalData(storeURL: store).folder
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return Set(names.filter { !$0.hasPrefix(".") })
    }

    @Test(
        "a large value is a file beside the store, read back whole on this device and on another, and removed once replaced"
    )
    func largeValuesLiveBesideTheStore() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("container/TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content, model: Self.model)
            let b = try StoreFixture(in: folder, name: "b", content: content, model: Self.model)
            let storeA = folder.appendingPathComponent("a.sqlite")
            let storeB = folder.appendingPathComponent("b.sqlite")
            #expect(ExternalData(storeURL: storeA).folder.path.hasSuffix(".a_SUPPORT/_EXTERNAL_DATA"))

            let large = Self.bytes(AttributeDescription.externalStorageThreshold + 1, seed: 1)
            let small = Self.bytes(1_000, seed: 2)
            let context = a.context()
            let photo = EntityDescription.insertNewObject(forEntityName: "Photo", into: context)
            photo.setValue("Beach", forKey: "name")
            photo.setValue(large, forKey: "image")
            photo.setValue(small, forKey: "thumbnail")
            // Small enough to stay in the database although its attribute allows a file.
            let icon = EntityDescription.insertNewObject(forEntityName: "Photo", into: context)
            icon.setValue("Icon", forKey: "name")
            icon.setValue(small, forKey: "image")
            try context.saveWritingLogs()

            #expect(Self.files(of: storeA) == [Self.hash(large)])
            let kinds = try a.store.database.read { access in
                try String.fetchAll(access.db, sql: "SELECT typeof(a_image) FROM e_Photo ORDER BY a_name")
            }
            #expect(kinds == ["text", "blob"], "the beach's image is a reference, the icon's is in its row")

            let fresh = a.context()
            let read = try fresh.existingObject(with: photo.objectID)
            #expect(read.value(forKey: "image") as? Data == large)
            #expect(read.value(forKey: "thumbnail") as? Data == small)
            #expect(try fresh.existingObject(with: icon.objectID).value(forKey: "image") as? Data == small)

            // The other device imports the value from the log and keeps it as a file of its own. B's store watches the
            // content folder, so its own import may have applied the log first; either way it holds it after this.
            _ = try b.coordinator.importUbiquitousContent()
            #expect(Self.files(of: storeB) == [Self.hash(large)])
            let onB = b.context()
            #expect(try onB.existingObject(with: photo.objectID).value(forKey: "image") as? Data == large)

            // Replaced: the new value's file is there and the old one is gone once the save committed.
            let larger = Self.bytes(AttributeDescription.externalStorageThreshold * 2, seed: 3)
            photo.setValue(larger, forKey: "image")
            try context.saveWritingLogs()
            #expect(Self.files(of: storeA) == [Self.hash(larger)])
            _ = try b.coordinator.importUbiquitousContent()
            #expect(Self.files(of: storeB) == [Self.hash(larger)])
            let laterOnB = b.context()
            #expect(try laterOnB.existingObject(with: photo.objectID).value(forKey: "image") as? Data == larger)

            // Two objects with the same bytes share one file; it stays while one of them still holds it.
            let copy = EntityDescription.insertNewObject(forEntityName: "Photo", into: context)
            copy.setValue("Beach again", forKey: "name")
            copy.setValue(larger, forKey: "image")
            try context.saveWritingLogs()
            copy.setValue(nil, forKey: "image")
            try context.saveWritingLogs()
            #expect(Self.files(of: storeA) == [Self.hash(larger)])
            let laterOnA = a.context()
            #expect(try laterOnA.existingObject(with: photo.objectID).value(forKey: "image") as? Data == larger)
        }
    }

    @Test("a damaged or missing file is a clear error, never other bytes")
    func damagedFilesAreErrors() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder, name: "store", model: Self.model)
            let store = folder.appendingPathComponent("store.sqlite")
            let large = Self.bytes(AttributeDescription.externalStorageThreshold + 100, seed: 4)
            let context = fixture.context()
            let photo = EntityDescription.insertNewObject(forEntityName: "Photo", into: context)
            photo.setValue(large, forKey: "image")
            try context.saveWritingLogs()
            let file = ExternalData(storeURL: store).folder.appendingPathComponent(Self.hash(large))

            var damaged = large
            damaged[10] ^= 0xff
            try damaged.write(to: file)
            let error = #expect(throws: RecordStoreError.self) {
                try fixture.store.database.read { try $0.snapshot(photo.objectID) }
            }
            #expect(error?.code == .storeFailed)
            #expect(error?.message.contains("damaged") == true)

            try FileManager.default.removeItem(at: file)
            let missing = #expect(throws: RecordStoreError.self) {
                try fixture.store.database.read { try $0.snapshot(photo.objectID) }
            }
            #expect(missing?.message.contains("missing") == true)
        }
    }
}
