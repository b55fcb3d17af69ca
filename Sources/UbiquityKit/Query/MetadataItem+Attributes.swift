import Foundation

extension MetadataItem {
    /// The names of the attributes ``value(forAttribute:)`` answers (Apple's `attributes`).
    public var attributes: [String] { Self.attributeKeys }

    /// The value of an attribute by Apple's key (`NSMetadataItemFSNameKey`, `NSMetadataUbiquitousItemIsUploadedKey`,
    /// …): a `String`, `URL`, `Int64`, `Date`, `Bool`, `Double` or ``ItemError``, typed as the Swift property of the
    /// same name is; the downloading status is Apple's string (`NSMetadataUbiquitousItemDownloadingStatusCurrent`,
    /// …). `nil` for an unknown key or a missing value.
    ///
    /// ```swift
    /// let size = item.value(forAttribute: NSMetadataItemFSSizeKey) as? Int64
    /// ```
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
        case Self.isUbiquitousKey: isUbiquitous
        case Self.downloadingStatusKey: downloadingStatus.appleValue
        case Self.isDownloadingKey: isDownloading
        case Self.percentDownloadedKey: percentDownloaded
        case Self.isUploadedKey: isUploaded
        case Self.isUploadingKey: isUploading
        case Self.percentUploadedKey: percentUploaded
        case Self.hasUnresolvedConflictsKey: hasUnresolvedConflicts
        case Self.downloadingErrorKey: downloadingError
        case Self.uploadingErrorKey: uploadingError
        default: nil
        }
    }

    /// The values of several attributes (Apple's `values(forAttributes:)`); keys without a value are left out.
    public func values(forAttributes keys: [String]) -> [String: Any] {
        var values: [String: Any] = [:]
        for key in keys {
            if let value = value(forAttribute: key) { values[key] = value }
        }
        return values
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
