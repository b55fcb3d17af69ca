import UbiquityProtocol

/// Which version records a page of the change feed carries (``ChangePage/versions``): the first versions of items
/// the page creates, when small, so that a device hearing of many new small files at once need not ask about each.
package enum FeedVersions {
    /// The most chunks (and package entries) a version's manifest may name to travel in a page.
    package static let maximumChunks = 16

    /// The versions `changes` add to items they also create: the ones a page may carry.
    package static func wanted(by changes: [Change]) -> [VersionID] {
        var created = Set<ItemID>()
        var wanted: [VersionID] = []
        for change in changes {
            switch change {
            case .itemCreated(let item, _, _): created.insert(item)
            case .versionAdded(let item, let version) where created.contains(item): wanted.append(version)
            default: break
            }
        }
        return wanted
    }

    /// Whether `record` is small enough to travel in a page.
    package static func carries(_ record: VersionRecord) -> Bool {
        switch record.manifest {
        case .file(let chunks): chunks.count <= maximumChunks
        case .package(let entries):
            entries.count <= maximumChunks && entries.reduce(0) { $0 + $1.chunks.count } <= maximumChunks
        }
    }
}
