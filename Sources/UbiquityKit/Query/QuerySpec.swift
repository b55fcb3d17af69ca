import DocumentKit
import Foundation
import SyncEngine

/// What a run of a ``MetadataQuery`` looks for — its scopes, predicate and order, fixed when the run starts — and how an
/// engine record becomes a result.
struct QuerySpec: Sendable {
    /// The scopes searched.
    let scopes: Set<MetadataQuery.SearchScope>
    /// Which items are results (`nil`: all in scope).
    let predicate: Predicate<MetadataItem>?
    /// The results' order.
    let sort: QuerySort
    /// Where content types come from.
    let types: DocumentTypeRegistry

    /// The metadata of `record` when it is a result: a file or package in scope that matches the predicate (one
    /// whose evaluation throws does not).
    func result(
        _ record: LocalItem, transfer: ItemTransfer?, layout: ContainerLayout, folderPath: String
    ) -> MetadataItem? {
        guard record.kind != .directory,
            scopes.contains(record.path.isDocument ? .ubiquitousDocuments : .ubiquitousData)
        else { return nil }
        let item = MetadataItem(
            record: record, transfer: transfer, layout: layout, folderPath: folderPath, types: types)
        guard let predicate else { return item }
        return (try? predicate.evaluate(item)) == true ? item : nil
    }

    /// The results among what `session` knows now.
    func results(of records: some Collection<LocalItem>, in session: ContainerSession) -> [MetadataItem] {
        let folderPath = session.layout.folder.path
        return records.compactMap {
            result($0, transfer: session.transfer(of: $0.id), layout: session.layout, folderPath: folderPath)
        }
    }
}
