import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

@testable import UbiquityKit

@Suite("Metadata items")
struct MetadataItemTests {
    typealias F = QueryFixtures

    @Test("Apple's attribute keys and names have Apple's values")
    func keys() {
        #expect(NSMetadataItemFSNameKey == "kMDItemFSName")
        #expect(MetadataItem.fsNameKey == NSMetadataItemFSNameKey)
        #expect(NSMetadataItemDisplayNameKey == "kMDItemDisplayName")
        #expect(NSMetadataItemURLKey == "kMDItemURL")
        #expect(NSMetadataItemPathKey == "kMDItemPath")
        #expect(NSMetadataItemFSSizeKey == "kMDItemFSSize")
        #expect(NSMetadataItemFSCreationDateKey == "kMDItemFSCreationDate")
        #expect(NSMetadataItemFSContentChangeDateKey == "kMDItemFSContentChangeDate")
        #expect(NSMetadataItemContentTypeKey == "kMDItemContentType")
        #expect(NSMetadataUbiquitousItemDownloadingStatusKey == "NSMetadataUbiquitousItemDownloadingStatusKey")
        #expect(NSMetadataUbiquitousItemPercentDownloadedKey == "NSMetadataUbiquitousItemPercentDownloadedKey")
        #expect(NSMetadataQueryUpdateAddedItemsKey == "kMDQueryUpdateAddedItems")
        #expect(NSMetadataQueryDidFinishGathering.rawValue == "NSMetadataQueryDidFinishGatheringNotification")
        #expect(NSMetadataQueryUbiquitousDocumentsScope.rawValue == "NSMetadataQueryUbiquitousDocumentsScope")
        #expect(NSMetadataQueryUbiquitousDataScope == .ubiquitousData)
    }

    @Test("A placeholder's attributes: names, path, URL, size, type, not downloaded, no dates")
    func placeholder() throws {
        let item = F.item("Documents/Lists/Item_Milk.txt", size: 42, conflicts: true)
        #expect(item.fileName == "Item_Milk.txt")
        #expect(item.displayName == "Item_Milk")
        #expect(item.path == "/nonexistent/query-root/TEAM.com.example.query/Documents/Lists/Item_Milk.txt")
        #expect(item.url.path == item.path)
        #expect(item.scope == .ubiquitousDocuments)
        #expect(item.containerIdentifier == "TEAM.com.example.query")
        #expect(item.contentType == "public.plain-text")
        #expect(item.downloadingStatus == .notDownloaded)
        #expect(item.contentChangeDate == nil && item.creationDate == nil)
        #expect(Set(item.attributes) == Set(MetadataItem.attributeKeys))
        #expect(item.value(forAttribute: NSMetadataItemFSNameKey) as? String == "Item_Milk.txt")
        #expect(item.value(forAttribute: NSMetadataItemDisplayNameKey) as? String == "Item_Milk")
        #expect(item.value(forAttribute: NSMetadataItemURLKey) as? URL == item.url)
        #expect(item.value(forAttribute: NSMetadataItemFSSizeKey) as? Int64 == 42)
        #expect(item.value(forAttribute: NSMetadataItemIsUbiquitousKey) as? Bool == true)
        #expect(
            item.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
                == NSMetadataUbiquitousItemDownloadingStatusNotDownloaded)
        #expect(item.value(forAttribute: NSMetadataUbiquitousItemHasUnresolvedConflictsKey) as? Bool == true)
        #expect(item.value(forAttribute: NSMetadataUbiquitousItemIsUploadedKey) as? Bool == false)
        #expect(item.value(forAttribute: NSMetadataItemFSContentChangeDateKey) == nil)
        #expect(item.value(forAttribute: "kMDItemNoSuchThing") == nil)
        #expect(item.values(forAttributes: [NSMetadataItemFSNameKey, NSMetadataItemFSCreationDateKey]).count == 1)
    }

    @Test("A download under way shows as downloading with its percentage; data items are in the data scope")
    func transfersAndScopes() {
        let downloading = F.item(
            "Library/cache.bin", transfer: ItemTransfer(direction: .download, completed: 25, total: 100))
        #expect(downloading.scope == .ubiquitousData)
        #expect(downloading.isDownloading)
        #expect(downloading.percentDownloaded == 25)
        #expect(downloading.value(forAttribute: NSMetadataUbiquitousItemPercentDownloadedKey) as? Double == 25)
        #expect(downloading.contentType.hasPrefix("dyn."))
        #expect(F.item("Documents/README").contentType == "public.data")
        #expect(F.item("Documents/.hidden").displayName == ".hidden")
    }

    @Test("Predicates over names, sizes, paths and the ubiquitous state evaluate on Linux")
    func predicates() throws {
        let milk = F.item("Documents/Item_Milk.txt", size: 10)
        let eggs = F.item(
            "Documents/Item_Eggs.txt", size: 2000, placeholder: false,
            transfer: ItemTransfer(direction: .upload, completed: 1, total: 2))
        let notDownloaded = UbiquitousItemResourceValues.DownloadingStatus.notDownloaded
        let documents = MetadataQuery.SearchScope.ubiquitousDocuments
        let named = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") && $0.fileSize < 100 }
        let placeholders = #Predicate<MetadataItem> { $0.downloadingStatus == notDownloaded }
        let uploading = #Predicate<MetadataItem> { $0.isUploading && ($0.percentUploaded ?? 0) >= 50 }
        let inDocuments = #Predicate<MetadataItem> { $0.path.contains("/Documents/") && $0.scope == documents }
        #expect(try named.evaluate(milk) && !named.evaluate(eggs))
        #expect(try placeholders.evaluate(milk) && !placeholders.evaluate(eggs))
        #expect(try uploading.evaluate(eggs) && !uploading.evaluate(milk))
        #expect(try inDocuments.evaluate(milk))
    }

    @Test("A local copy's dates come from its file: content change from the modification time, creation when kept")
    func dates() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "query-item-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let layout = ContainerLayout(root: root, container: F.container)
        try FileManager.default.createDirectory(at: layout.documents, withIntermediateDirectories: true)
        let file = layout.documents.appendingPathComponent("Here.txt")
        try Data("here".utf8).write(to: file)
        let modified = Date(timeIntervalSince1970: 1_700_000_000.25)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file.path)
        let item = MetadataItem(
            record: F.record("Documents/Here.txt", placeholder: false), transfer: nil, layout: layout,
            folderPath: layout.folder.path, types: .default)
        let changed = try #require(item.contentChangeDate)
        #expect(abs(changed.timeIntervalSince(modified)) < 0.001)
        #expect(item.value(forAttribute: NSMetadataItemFSContentChangeDateKey) as? Date == changed)
        if let created = item.creationDate { #expect(created <= Date() && created > Date() - 600) }
        #expect(item.downloadingStatus != .notDownloaded)
    }
}
