import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// One result of a ``MetadataQuery`` (Apple's `NSMetadataItem`): an item of a container — on this machine or a
/// placeholder — with its file attributes and ubiquitous state, as Swift properties (for `#Predicate` and
/// `SortDescriptor`) and under Apple's attribute keys (``value(forAttribute:)``).
///
/// ```swift
/// let name = item.value(forAttribute: NSMetadataItemFSNameKey) as? String
/// let placeholder = item.downloadingStatus == .notDownloaded
/// ```
public final class MetadataItem: Sendable, CustomStringConvertible {
    /// The item's stable id (the same item across updates).
    public let itemID: ItemID
    /// Where the item is (`NSMetadataItemURLKey`).
    public let url: URL
    /// The item's full path (`NSMetadataItemPathKey`).
    public let path: String
    /// The file name, extension included (`NSMetadataItemFSNameKey`).
    public let fileName: String
    /// The name shown to people: the file name without its extension (`NSMetadataItemDisplayNameKey`).
    public let displayName: String
    /// The content's size in bytes (`NSMetadataItemFSSizeKey`).
    public let fileSize: Int64
    /// When the local copy's content last changed (`NSMetadataItemFSContentChangeDateKey`); `nil` for a placeholder.
    public let contentChangeDate: Date?
    /// When the local copy was made (`NSMetadataItemFSCreationDateKey`); `nil` for a placeholder.
    public let creationDate: Date?
    /// The content type's identifier (`NSMetadataItemContentTypeKey`), such as `public.plain-text`.
    public let contentType: String
    /// Whether the item is in the documents scope (under `Documents/`).
    public let isDocument: Bool
    /// The item's ubiquitous state (downloading status, transfers, conflicts, errors).
    public let ubiquitous: UbiquitousItemResourceValues

    /// The item's downloading status (`NSMetadataUbiquitousItemDownloadingStatusKey`).
    public var downloadingStatus: UbiquitousItemResourceValues.DownloadingStatus { ubiquitous.downloadingStatus }
    /// Whether content is coming down (`NSMetadataUbiquitousItemIsDownloadingKey`).
    public var isDownloading: Bool { ubiquitous.isDownloading }
    /// Whether the service has the local content (`NSMetadataUbiquitousItemIsUploadedKey`).
    public var isUploaded: Bool { ubiquitous.isUploaded }
    /// Whether local content is going up (`NSMetadataUbiquitousItemIsUploadingKey`).
    public var isUploading: Bool { ubiquitous.isUploading }
    /// Whether conflict versions wait to be resolved (`NSMetadataUbiquitousItemHasUnresolvedConflictsKey`).
    public var hasUnresolvedConflicts: Bool { ubiquitous.hasUnresolvedConflicts }

    init(item: LocalItem, transfer: ItemTransfer?, layout: ContainerLayout, types: DocumentTypeRegistry) {
        itemID = item.id
        url = layout.url(of: item.path)
        path = url.path
        fileName = url.lastPathComponent
        displayName = url.deletingPathExtension().lastPathComponent
        fileSize = item.size
        isDocument = item.path.string.hasPrefix("Documents/")
        ubiquitous = UbiquitousItemResourceValues(item: item, transfer: transfer, layout: layout)
        var info = stat()
        if !item.isPlaceholder, lstat(url.path, &info) == 0 {
            contentChangeDate = Date(
                timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
            creationDate = Date(
                timeIntervalSince1970: TimeInterval(info.st_ctim.tv_sec) + TimeInterval(info.st_ctim.tv_nsec) / 1e9)
        } else {
            contentChangeDate = nil
            creationDate = nil
        }
        contentType = types.type(forFileAt: url, isDirectory: item.kind != .file).identifier
    }

    /// The names of the attributes ``value(forAttribute:)`` answers.
    public var attributes: [String] { Self.attributeKeys }

    /// The value of an attribute by Apple's key (`NSMetadataItemFSNameKey`, `NSMetadataUbiquitousItemIsUploadedKey`,
    /// …); `nil` for an unknown key or a missing value.
    public func value(forAttribute key: String) -> Any? {
        switch key {
        case Self.fsNameKey: fileName
        case Self.displayNameKey: displayName
        case Self.pathKey: path
        case Self.urlKey: url
        case Self.fsSizeKey: fileSize
        case Self.fsContentChangeDateKey: contentChangeDate
        case Self.fsCreationDateKey: creationDate
        case Self.contentTypeKey: contentType
        case Self.isUbiquitousKey: true
        case Self.downloadingStatusKey: downloadingStatus.appleValue
        case Self.isDownloadingKey: isDownloading
        case Self.percentDownloadedKey: ubiquitous.percentDownloaded
        case Self.isUploadedKey: isUploaded
        case Self.isUploadingKey: isUploading
        case Self.percentUploadedKey: ubiquitous.percentUploaded
        case Self.hasUnresolvedConflictsKey: hasUnresolvedConflicts
        case Self.downloadingErrorKey: ubiquitous.downloadingError
        case Self.uploadingErrorKey: ubiquitous.uploadingError
        default: nil
        }
    }

    public var description: String { "MetadataItem(\(fileName), \(downloadingStatus.rawValue))" }

    /// Whether two items say the same of their item.
    func isSame(as other: MetadataItem) -> Bool {
        itemID == other.itemID && path == other.path && fileSize == other.fileSize && ubiquitous == other.ubiquitous
            && contentChangeDate == other.contentChangeDate
    }
}

extension UbiquitousItemResourceValues.DownloadingStatus {
    /// Apple's string value (`NSMetadataUbiquitousItemDownloadingStatusCurrent`, …).
    public var appleValue: String {
        switch self {
        case .notDownloaded: NSMetadataUbiquitousItemDownloadingStatusNotDownloaded
        case .downloaded: NSMetadataUbiquitousItemDownloadingStatusDownloaded
        case .current: NSMetadataUbiquitousItemDownloadingStatusCurrent
        }
    }
}
