extension MetadataItem {
    /// The file name (`kMDItemFSName`).
    public static let fsNameKey = "kMDItemFSName"
    /// The display name (`kMDItemDisplayName`).
    public static let displayNameKey = "kMDItemDisplayName"
    /// The full path (`kMDItemPath`).
    public static let pathKey = "kMDItemPath"
    /// The URL (`kMDItemURL`).
    public static let urlKey = "kMDItemURL"
    /// The size in bytes (`kMDItemFSSize`).
    public static let fsSizeKey = "kMDItemFSSize"
    /// The content change date (`kMDItemFSContentChangeDate`).
    public static let fsContentChangeDateKey = "kMDItemFSContentChangeDate"
    /// The creation date (`kMDItemFSCreationDate`).
    public static let fsCreationDateKey = "kMDItemFSCreationDate"
    /// The content type (`kMDItemContentType`).
    public static let contentTypeKey = "kMDItemContentType"
    /// Whether the item is ubiquitous.
    public static let isUbiquitousKey = "NSMetadataItemIsUbiquitousKey"
    /// The downloading status.
    public static let downloadingStatusKey = "NSMetadataUbiquitousItemDownloadingStatusKey"
    /// Whether it is downloading.
    public static let isDownloadingKey = "NSMetadataUbiquitousItemIsDownloadingKey"
    /// The percent downloaded.
    public static let percentDownloadedKey = "NSMetadataUbiquitousItemPercentDownloadedKey"
    /// Whether it is uploaded.
    public static let isUploadedKey = "NSMetadataUbiquitousItemIsUploadedKey"
    /// Whether it is uploading.
    public static let isUploadingKey = "NSMetadataUbiquitousItemIsUploadingKey"
    /// The percent uploaded.
    public static let percentUploadedKey = "NSMetadataUbiquitousItemPercentUploadedKey"
    /// Whether it has unresolved conflicts.
    public static let hasUnresolvedConflictsKey = "NSMetadataUbiquitousItemHasUnresolvedConflictsKey"
    /// The downloading error.
    public static let downloadingErrorKey = "NSMetadataUbiquitousItemDownloadingErrorKey"
    /// The uploading error.
    public static let uploadingErrorKey = "NSMetadataUbiquitousItemUploadingErrorKey"

    static let attributeKeys = [
        fsNameKey, displayNameKey, pathKey, urlKey, fsSizeKey, fsContentChangeDateKey, fsCreationDateKey,
        contentTypeKey, isUbiquitousKey, downloadingStatusKey, isDownloadingKey, percentDownloadedKey, isUploadedKey,
        isUploadingKey, percentUploadedKey, hasUnresolvedConflictsKey, downloadingErrorKey, uploadingErrorKey,
    ]
}

/// Apple's name of ``MetadataItem/fsNameKey``.
public let NSMetadataItemFSNameKey = MetadataItem.fsNameKey
/// Apple's name of ``MetadataItem/displayNameKey``.
public let NSMetadataItemDisplayNameKey = MetadataItem.displayNameKey
/// Apple's name of ``MetadataItem/pathKey``.
public let NSMetadataItemPathKey = MetadataItem.pathKey
/// Apple's name of ``MetadataItem/urlKey``.
public let NSMetadataItemURLKey = MetadataItem.urlKey
/// Apple's name of ``MetadataItem/fsSizeKey``.
public let NSMetadataItemFSSizeKey = MetadataItem.fsSizeKey
/// Apple's name of ``MetadataItem/fsContentChangeDateKey``.
public let NSMetadataItemFSContentChangeDateKey = MetadataItem.fsContentChangeDateKey
/// Apple's name of ``MetadataItem/fsCreationDateKey``.
public let NSMetadataItemFSCreationDateKey = MetadataItem.fsCreationDateKey
/// Apple's name of ``MetadataItem/contentTypeKey``.
public let NSMetadataItemContentTypeKey = MetadataItem.contentTypeKey
/// Apple's name of ``MetadataItem/isUbiquitousKey``.
public let NSMetadataItemIsUbiquitousKey = MetadataItem.isUbiquitousKey
/// Apple's name of ``MetadataItem/downloadingStatusKey``.
public let NSMetadataUbiquitousItemDownloadingStatusKey = MetadataItem.downloadingStatusKey
/// Apple's name of ``MetadataItem/isDownloadingKey``.
public let NSMetadataUbiquitousItemIsDownloadingKey = MetadataItem.isDownloadingKey
/// Apple's name of ``MetadataItem/percentDownloadedKey``.
public let NSMetadataUbiquitousItemPercentDownloadedKey = MetadataItem.percentDownloadedKey
/// Apple's name of ``MetadataItem/isUploadedKey``.
public let NSMetadataUbiquitousItemIsUploadedKey = MetadataItem.isUploadedKey
/// Apple's name of ``MetadataItem/isUploadingKey``.
public let NSMetadataUbiquitousItemIsUploadingKey = MetadataItem.isUploadingKey
/// Apple's name of ``MetadataItem/percentUploadedKey``.
public let NSMetadataUbiquitousItemPercentUploadedKey = MetadataItem.percentUploadedKey
/// Apple's name of ``MetadataItem/hasUnresolvedConflictsKey``.
public let NSMetadataUbiquitousItemHasUnresolvedConflictsKey = MetadataItem.hasUnresolvedConflictsKey
/// Apple's name of ``MetadataItem/downloadingErrorKey``.
public let NSMetadataUbiquitousItemDownloadingErrorKey = MetadataItem.downloadingErrorKey
/// Apple's name of ``MetadataItem/uploadingErrorKey``.
public let NSMetadataUbiquitousItemUploadingErrorKey = MetadataItem.uploadingErrorKey
/// The downloading status of a placeholder.
public let NSMetadataUbiquitousItemDownloadingStatusNotDownloaded =
    "NSMetadataUbiquitousItemDownloadingStatusNotDownloaded"
/// The downloading status of an out-of-date local copy.
public let NSMetadataUbiquitousItemDownloadingStatusDownloaded = "NSMetadataUbiquitousItemDownloadingStatusDownloaded"
/// The downloading status of a current local copy.
public let NSMetadataUbiquitousItemDownloadingStatusCurrent = "NSMetadataUbiquitousItemDownloadingStatusCurrent"
