import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

@testable import UbiquityKit

/// Metadata items made without a disk: placeholders (or local copies nobody wrote) of a container under a root that
/// does not exist.
enum QueryFixtures {
    static let container = try! ContainerID("TEAM.com.example.query")
    static let otherContainer = try! ContainerID("TEAM.com.example.other")
    /// The one server version every record names, so that two records made alike are equal.
    static let version = VersionID()

    static func layout(_ container: ContainerID = container) -> ContainerLayout {
        ContainerLayout(root: URL(fileURLWithPath: "/nonexistent/query-root", isDirectory: true), container: container)
    }

    /// The record of a file at `path`.
    static func record(
        _ path: String, id: ItemID = ItemID(), size: Int64 = 1, placeholder: Bool = true, conflicts: Bool = false
    ) -> LocalItem {
        LocalItem(
            id: id, path: try! ItemPath(path), kind: .file, serverVersion: version, size: size,
            isPlaceholder: placeholder, hasUnresolvedConflicts: conflicts)
    }

    /// The metadata of a file at `path`.
    static func item(
        _ path: String, id: ItemID = ItemID(), size: Int64 = 1, placeholder: Bool = true, conflicts: Bool = false,
        transfer: ItemTransfer? = nil, in container: ContainerID = container
    ) -> MetadataItem {
        metadata(
            record(path, id: id, size: size, placeholder: placeholder, conflicts: conflicts), transfer: transfer,
            in: container)
    }

    /// The metadata of `record`.
    static func metadata(
        _ record: LocalItem, transfer: ItemTransfer? = nil, in container: ContainerID = container
    ) -> MetadataItem {
        let layout = layout(container)
        return MetadataItem(
            record: record, transfer: transfer, layout: layout, folderPath: layout.folder.path, types: .default)
    }
}
