extension MetadataItem {
    /// The key of ``fileName`` (`kMDItemFSName`).
    public static let fsNameKey = "kMDItemFSName"
    /// The key of ``displayName`` (`kMDItemDisplayName`).
    public static let displayNameKey = "kMDItemDisplayName"
    /// The key of ``path`` (`kMDItemPath`).
    public static let pathKey = "kMDItemPath"
    /// The key of ``url`` (`kMDItemURL`).
    public static let urlKey = "kMDItemURL"
    /// The key of ``fileSize`` (`kMDItemFSSize`).
    public static let fsSizeKey = "kMDItemFSSize"
    /// The key of ``contentChangeDate`` (`kMDItemFSContentChangeDate`).
    public static let fsContentChangeDateKey = "kMDItemFSContentChangeDate"
    /// The key of ``creationDate`` (`kMDItemFSCreationDate`).
    public static let fsCreationDateKey = "kMDItemFSCreationDate"
    /// The key of ``contentType`` (`kMDItemContentType`).
    public static let contentTypeKey = "kMDItemContentType"
    /// The key of ``isUbiquitous`` (`NSMetadataItemIsUbiquitousKey`).
    public static let isUbiquitousKey = "NSMetadataItemIsUbiquitousKey"
    /// The key of ``downloadingStatus`` (`NSMetadataUbiquitousItemDownloadingStatusKey`).
    public static let downloadingStatusKey = "NSMetadataUbiquitousItemDownloadingStatusKey"
    /// The key of ``isDownloading`` (`NSMetadataUbiquitousItemIsDownloadingKey`).
    public static let isDownloadingKey = "NSMetadataUbiquitousItemIsDownloadingKey"
    /// The key of ``percentDownloaded`` (`NSMetadataUbiquitousItemPercentDownloadedKey`).
    public static let percentDownloadedKey = "NSMetadataUbiquitousItemPercentDownloadedKey"
    /// The key of ``isUploaded`` (`NSMetadataUbiquitousItemIsUploadedKey`).
    public static let isUploadedKey = "NSMetadataUbiquitousItemIsUploadedKey"
    /// The key of ``isUploading`` (`NSMetadataUbiquitousItemIsUploadingKey`).
    public static let isUploadingKey = "NSMetadataUbiquitousItemIsUploadingKey"
    /// The key of ``percentUploaded`` (`NSMetadataUbiquitousItemPercentUploadedKey`).
    public static let percentUploadedKey = "NSMetadataUbiquitousItemPercentUploadedKey"
    /// The key of ``hasUnresolvedConflicts`` (`NSMetadataUbiquitousItemHasUnresolvedConflictsKey`).
    public static let hasUnresolvedConflictsKey = "NSMetadataUbiquitousItemHasUnresolvedConflictsKey"
    /// The key of ``downloadingError`` (`NSMetadataUbiquitousItemDownloadingErrorKey`).
    public static let downloadingErrorKey = "NSMetadataUbiquitousItemDownloadingErrorKey"
    /// The key of ``uploadingError`` (`NSMetadataUbiquitousItemUploadingErrorKey`).
    public static let uploadingErrorKey = "NSMetadataUbiquitousItemUploadingErrorKey"

    /// Every key an item answers, in the order of ``attributes``.
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
/// Apple's downloading status of a placeholder: only the metadata is here.
public let NSMetadataUbiquitousItemDownloadingStatusNotDownloaded =
    "NSMetadataUbiquitousItemDownloadingStatusNotDownloaded"
/// Apple's downloading status of a local copy that is not the latest version.
public let NSMetadataUbiquitousItemDownloadingStatusDownloaded = "NSMetadataUbiquitousItemDownloadingStatusDownloaded"
/// Apple's downloading status of a local copy that is the latest version.
public let NSMetadataUbiquitousItemDownloadingStatusCurrent = "NSMetadataUbiquitousItemDownloadingStatusCurrent"
