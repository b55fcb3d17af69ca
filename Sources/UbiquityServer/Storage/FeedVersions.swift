import UbiquityProtocol

/// Which version records a page of the change feed carries (``ChangePage/versions``): the first versions of items
/// the page creates, when small and still what the item is, so that a device hearing of many new small files at once
/// need not ask about each.
///
/// A device takes such an item as the page says it was made (path and version) when nothing else on the page speaks
/// of it; so a version is carried only while its item is still at the path it was made at, not deleted, with that
/// version current. Otherwise the device asks, and hears the item as it is now: a device catching up on a long feed
/// does not first download, place and then replace every file's first version.
package enum FeedVersions {
    /// A version a page may carry: the first version of an item the page creates at `path`.
    package struct Wanted: Sendable, Equatable {
        package var version: VersionID
        package var item: ItemID
        package var path: ItemPath
    }

    /// The most chunks (and package entries) a version's manifest may name to travel in a page.
    package static let maximumChunks = 16

    /// The first versions `changes` add to items they also create: the ones a page may carry.
    package static func wanted(by changes: [Change]) -> [Wanted] {
        var created: [ItemID: ItemPath] = [:]
        var wanted: [Wanted] = []
        for change in changes {
            switch change {
            case .itemCreated(let item, let path, _): created[item] = path
            case .versionAdded(let item, let version):
                // The first only: a later one is not what the item was made with.
                if let path = created.removeValue(forKey: item) {
                    wanted.append(Wanted(version: version, item: item, path: path))
                }
            default: break
            }
        }
        return wanted
    }

    /// Whether the item `wanted` names, as the service holds it now (`current`), is still what its creation made it:
    /// at that path, not deleted, `wanted`'s version current.
    package static func isStill(_ wanted: Wanted, path: String, currentVersion: String?, isDeleted: Bool) -> Bool {
        !isDeleted && path == wanted.path.string && currentVersion == wanted.version.string
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
