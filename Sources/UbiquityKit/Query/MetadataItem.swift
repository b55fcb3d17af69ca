import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// One result of a ``MetadataQuery`` (Apple's `NSMetadataItem`): an item of a container — here, or a placeholder —
/// with its file attributes and ubiquitous state, as Swift properties (for `#Predicate` and `SortDescriptor`) and
/// under Apple's attribute keys (``value(forAttribute:)``). An item is a snapshot: an update brings a new one with
/// the same ``id``.
///
/// ```swift
/// let name = item.value(forAttribute: NSMetadataItemFSNameKey) as? String
/// if item.downloadingStatus == .notDownloaded { try FileManager.default.startDownloadingUbiquitousItem(at: item.url) }
/// ```
public final class MetadataItem: Sendable, Identifiable, CustomStringConvertible {
    /// The item's stable id: the same item across updates, renames and moves.
    public let id: ItemID
    /// The container the item is in (`TEAM.com.example.app`).
    public let containerIdentifier: String
    /// The scope the item is in: under `Documents/` or elsewhere in the container.
    public let scope: MetadataQuery.SearchScope
    /// The item's full path (`NSMetadataItemPathKey`).
    public let path: String
    /// The file name, extension included (`NSMetadataItemFSNameKey`).
    public let fileName: String
    /// The name shown to people: the file name without its extension (`NSMetadataItemDisplayNameKey`).
    public let displayName: String
    /// The content's size in bytes, as the engine last knew it (`NSMetadataItemFSSizeKey`).
    public let fileSize: Int64
    /// The content type's identifier, such as `public.plain-text` (`NSMetadataItemContentTypeKey`).
    public let contentType: String
    /// The item's ubiquitous state: downloading status, transfers, conflicts, errors.
    public let ubiquitous: UbiquitousItemResourceValues
    /// The engine's record the item was made from, and the transfer under way then.
    let record: LocalItem
    let transfer: ItemTransfer?
    private let dates: Mutex<FileDates?>

    /// The metadata of `record`, in the container at `folderPath` (`layout.folder.path`, passed in so that gathering
    /// many items computes it once).
    init(
        record: LocalItem, transfer: ItemTransfer?, layout: ContainerLayout, folderPath: String,
        types: DocumentTypeRegistry
    ) {
        id = record.id
        containerIdentifier = layout.container.string
        scope = record.path.isDocument ? .ubiquitousDocuments : .ubiquitousData
        path = folderPath.hasSuffix("/") ? folderPath + record.path.string : folderPath + "/" + record.path.string
        let name = record.path.name
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        fileName = name
        displayName = dot.map { String(name[..<$0]) } ?? name
        let pathExtension = dot.map { String(name[name.index(after: $0)...]) } ?? ""
        contentType = Self.contentType(forExtension: pathExtension, kind: record.kind, types: types)
        fileSize = record.size
        ubiquitous = UbiquitousItemResourceValues(item: record, transfer: transfer, layout: layout)
        self.record = record
        self.transfer = transfer
        dates = Mutex(record.isPlaceholder ? FileDates() : nil)
    }

    private static func contentType(forExtension pathExtension: String, kind: ItemKind, types: DocumentTypeRegistry)
        -> String
    {
        guard !pathExtension.isEmpty else { return kind == .file ? DocumentType.dataIdentifier : "public.folder" }
        let found = types.type(forFilenameExtension: pathExtension).identifier
        return kind == .directory && found.hasPrefix("dyn.") ? "public.folder" : found
    }

    /// Where the item is (`NSMetadataItemURLKey`).
    public var url: URL { URL(fileURLWithPath: path, isDirectory: record.kind != .file) }

    /// When the local copy's content last changed (`NSMetadataItemFSContentChangeDateKey`); `nil` for a placeholder.
    /// Read from the file the first time it is asked for.
    public var contentChangeDate: Date? { fileDates.contentChange }

    /// When the local copy was created (`NSMetadataItemFSCreationDateKey`); `nil` for a placeholder, or when the file
    /// system does not keep creation times. Read from the file the first time it is asked for.
    public var creationDate: Date? { fileDates.creation }

    private var fileDates: FileDates {
        dates.withLock { dates in
            if let dates { return dates }
            let read = FileDates(ofItemAt: path)
            dates = read
            return read
        }
    }

    /// Whether the item is in a container and synced (`NSMetadataItemIsUbiquitousKey`): always `true` for a result.
    public var isUbiquitous: Bool { ubiquitous.isUbiquitousItem }
    /// The item's downloading status (`NSMetadataUbiquitousItemDownloadingStatusKey`).
    public var downloadingStatus: UbiquitousItemResourceValues.DownloadingStatus { ubiquitous.downloadingStatus }
    /// Whether content is coming down (`NSMetadataUbiquitousItemIsDownloadingKey`).
    public var isDownloading: Bool { ubiquitous.isDownloading }
    /// How much of the download under way is done, 0 to 100 (`NSMetadataUbiquitousItemPercentDownloadedKey`).
    public var percentDownloaded: Double? { ubiquitous.percentDownloaded }
    /// Whether the service has the local content (`NSMetadataUbiquitousItemIsUploadedKey`).
    public var isUploaded: Bool { ubiquitous.isUploaded }
    /// Whether local content is going up, or waits to (`NSMetadataUbiquitousItemIsUploadingKey`).
    public var isUploading: Bool { ubiquitous.isUploading }
    /// How much of the upload under way is done, 0 to 100 (`NSMetadataUbiquitousItemPercentUploadedKey`).
    public var percentUploaded: Double? { ubiquitous.percentUploaded }
    /// Whether conflict versions wait to be resolved (`NSMetadataUbiquitousItemHasUnresolvedConflictsKey`).
    public var hasUnresolvedConflicts: Bool { ubiquitous.hasUnresolvedConflicts }
    /// Why the last download failed (`NSMetadataUbiquitousItemDownloadingErrorKey`).
    public var downloadingError: ItemError? { ubiquitous.downloadingError }
    /// Why the last upload failed (`NSMetadataUbiquitousItemUploadingErrorKey`).
    public var uploadingError: ItemError? { ubiquitous.uploadingError }

    /// The item's file name and downloading status.
    public var description: String { "MetadataItem(\(fileName), \(downloadingStatus.rawValue))" }

    /// Whether `other` says the same of the item as this one (an update that does not need telling).
    func isSame(as other: MetadataItem) -> Bool {
        id == other.id && record == other.record && transfer == other.transfer && ubiquitous == other.ubiquitous
    }
}
