extension MetadataQuery {
    /// Where a query looks (Apple's `NSMetadataQueryUbiquitousDocumentsScope` and `…DataScope`), in every container
    /// of the app; the raw values are Apple's.
    public enum SearchScope: String, Hashable, Sendable, Codable, CaseIterable {
        /// Items under each container's `Documents/`.
        case ubiquitousDocuments = "NSMetadataQueryUbiquitousDocumentsScope"
        /// Items elsewhere in each container (but its private `.ubiquity/`).
        case ubiquitousData = "NSMetadataQueryUbiquitousDataScope"
    }
}

/// Apple's name of ``MetadataQuery/SearchScope/ubiquitousDocuments``.
public let NSMetadataQueryUbiquitousDocumentsScope = MetadataQuery.SearchScope.ubiquitousDocuments
/// Apple's name of ``MetadataQuery/SearchScope/ubiquitousData``.
public let NSMetadataQueryUbiquitousDataScope = MetadataQuery.SearchScope.ubiquitousData
