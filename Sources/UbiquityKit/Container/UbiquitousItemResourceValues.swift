import Foundation
import SyncEngine
import UbiquityProtocol

/// What a URL's ubiquitous resource values say of an item (Apple's `URLResourceValues` ubiquitous keys:
/// `ubiquitousItemDownloadingStatus`, `ubiquitousItemIsDownloading`, `ubiquitousItemIsUploaded`, …), as the
/// container's engine knows it.
///
/// ```swift
/// let values = try url.ubiquitousResourceValues()
/// if values.downloadingStatus == .notDownloaded { try FileManager.default.startDownloadingUbiquitousItem(at: url) }
/// ```
public struct UbiquitousItemResourceValues: Hashable, Sendable {
    /// Whether the content is here, and whether it is the latest (Apple's `URLUbiquitousItemDownloadingStatus`).
    public enum DownloadingStatus: String, Hashable, Sendable, Codable {
        /// Only the metadata is here: a placeholder (`.notDownloaded`).
        case notDownloaded
        /// A local copy is here, not the latest version (`.downloaded`).
        case downloaded
        /// The local copy is the latest version (`.current`).
        case current
    }

    /// Whether the item is in a container and synced (`isUbiquitousItem`).
    public var isUbiquitousItem: Bool
    /// The item's downloading status (`ubiquitousItemDownloadingStatus`).
    public var downloadingStatus: DownloadingStatus
    /// Whether its content is coming down now (`ubiquitousItemIsDownloading`).
    public var isDownloading: Bool
    /// How much of a download under way is done, 0 to 100 (`NSMetadataUbiquitousItemPercentDownloadedKey`); `nil`
    /// when none is under way.
    public var percentDownloaded: Double?
    /// Whether the service has the local content (`ubiquitousItemIsUploaded`).
    public var isUploaded: Bool
    /// Whether local content is going up, or waits to (`ubiquitousItemIsUploading`).
    public var isUploading: Bool
    /// How much of an upload under way is done, 0 to 100 (`NSMetadataUbiquitousItemPercentUploadedKey`); `nil` when
    /// none is under way.
    public var percentUploaded: Double?
    /// Whether the item has conflict versions not yet resolved (`ubiquitousItemHasUnresolvedConflicts`).
    public var hasUnresolvedConflicts: Bool
    /// Why the last download failed, until one succeeds (`ubiquitousItemDownloadingError`).
    public var downloadingError: ItemError?
    /// Why the last upload failed, until one succeeds (`ubiquitousItemUploadingError`).
    public var uploadingError: ItemError?
    /// The content's size in bytes, as last known.
    public var fileSize: Int64

    /// The values of `item`, given the transfer under way and the container it is in.
    init(item: LocalItem, transfer: ItemTransfer?, layout: ContainerLayout) {
        isUbiquitousItem = true
        downloadingStatus =
            item.isPlaceholder
            ? .notDownloaded
            : (item.baseVersion != nil && item.baseVersion == item.serverVersion ? .current : .downloaded)
        let downloading = transfer?.direction == .download ? transfer : nil
        let uploading = transfer?.direction == .upload ? transfer : nil
        isDownloading = downloading != nil
        percentDownloaded = downloading?.percentDone
        let changed = item.hasLocalChanges(in: layout)
        isUploading = uploading != nil || (changed && item.uploadError == nil)
        isUploaded = !item.isPlaceholder && !changed && uploading == nil
        percentUploaded = uploading?.percentDone
        hasUnresolvedConflicts = item.hasUnresolvedConflicts
        downloadingError = item.downloadError
        uploadingError = item.uploadError
        fileSize = item.size
    }

    /// The values of a file in a container that the engine has not recorded yet (just written): to be uploaded.
    init(unrecordedFileOfSize size: Int64) {
        isUbiquitousItem = true
        downloadingStatus = .current
        isDownloading = false
        isUploaded = false
        isUploading = true
        hasUnresolvedConflicts = false
        fileSize = size
    }
}
