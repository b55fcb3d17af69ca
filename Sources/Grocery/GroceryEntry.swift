import Foundation
import UbiquityKit

/// One item of the list as the app shows it: what the query found, and the name read from the package when it is
/// on this device.
public struct GroceryEntry: Hashable, Sendable {
    /// The state light the seeds' app draws beside each item.
    public enum Light: String, Hashable, Sendable {
        /// Normal: here, in step with the service.
        case green
        /// Saving or syncing: a change is on its way up or down.
        case yellow
        /// In conflict: versions from several devices wait to be resolved.
        case red
        /// A placeholder: known from the service, its contents not on this device.
        case notDownloaded = "not downloaded"
    }

    /// The item's id: the UUID in its file name.
    public var id: String
    /// The package's file name, `Item_<uuid>.gro`.
    public var fileName: String
    /// Where the package is (or will be, once downloaded).
    public var url: URL
    /// The item's name; `nil` for a placeholder.
    public var name: String?
    /// Whether the item has an image (`nil` for a placeholder).
    public var hasImage: Bool?
    /// The package's size in bytes, as the service knows it.
    public var size: Int64
    /// When the item was made (kept in its package, so the same on every device); `nil` for a placeholder.
    public var creationDate: Date?
    /// Downloaded, current, or not downloaded.
    public var downloadingStatus: UbiquitousItemResourceValues.DownloadingStatus
    /// Whether the item waits for a conflict's resolution.
    public var hasUnresolvedConflicts: Bool
    /// Whether the service has the item's latest contents.
    public var isUploaded: Bool
    /// Whether a transfer is under way.
    public var isTransferring: Bool

    /// The state light.
    public var light: Light {
        if hasUnresolvedConflicts { return .red }
        if downloadingStatus == .notDownloaded { return .notDownloaded }
        if isTransferring || !isUploaded { return .yellow }
        return .green
    }

    /// The name, or a stand-in for a placeholder.
    public var displayName: String { name ?? "(\(fileName))" }

    /// The entry of an item just saved on this device, before the engine has taken it up: here, not uploaded yet.
    init(saved url: URL, contents: GroceryItemDocument.Contents, size: Int64, creationDate: Date?) {
        self.id = GroceryItemType.id(ofFile: url.lastPathComponent)
        self.fileName = url.lastPathComponent
        self.url = url
        self.name = contents.name
        self.hasImage = contents.image != nil
        self.size = size
        self.creationDate = creationDate
        self.downloadingStatus = .current
        self.hasUnresolvedConflicts = false
        self.isUploaded = false
        self.isTransferring = false
    }

    /// The entry for a query result, reading the name from the package when it is here.
    init(_ item: MetadataItem) {
        let url = item.url
        let namePath = url.appendingPathComponent(GroceryItemDocument.nameFile).path
        let present = item.downloadingStatus != .notDownloaded
        self.id = GroceryItemType.id(ofFile: item.fileName)
        self.fileName = item.fileName
        self.url = url
        self.name =
            present ? FileManager.default.contents(atPath: namePath).map { String(decoding: $0, as: UTF8.self) } : nil
        self.hasImage =
            present
            ? FileManager.default.fileExists(atPath: url.appendingPathComponent(GroceryItemDocument.imageFile).path)
            : nil
        self.size = item.fileSize
        self.creationDate =
            present
            ? FileManager.default.contents(atPath: url.appendingPathComponent(GroceryItemDocument.createdFile).path)
                .flatMap(GroceryItemDocument.date)
            : nil
        self.downloadingStatus = item.downloadingStatus
        self.hasUnresolvedConflicts = item.hasUnresolvedConflicts
        self.isUploaded = item.isUploaded
        self.isTransferring = item.isDownloading || item.isUploading
    }
}
