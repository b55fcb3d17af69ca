import Foundation
import UbiquityKit

extension GroceryApp {
    /// How the list is ordered: a preference kept in the key-value store, so every device shows the same order.
    public enum SortOrder: String, CaseIterable, Sendable {
        /// By name, A to Z (placeholders last).
        case name
        /// Newest first.
        case newest
    }

    /// The key of the sort order in the key-value store.
    public static let sortOrderKey = "sortOrder"
    /// The key of the quick list (the seeds' chapter 2: the whole list as one array in the key-value store).
    public static let quickListKey = "groceryList"

    /// The preferred order (default ``SortOrder/name``).
    public var sortOrder: SortOrder {
        store.string(forKey: Self.sortOrderKey).flatMap(SortOrder.init(rawValue:)) ?? .name
    }

    /// Sets the preferred order; it reaches the other devices with the next sync.
    public func setSortOrder(_ order: SortOrder) async throws {
        try store.setValue(.string(order.rawValue), forKey: Self.sortOrderKey)
        await store.synchronized()
    }

    /// The quick list: names kept as one array in the key-value store, as the seeds' app does before it gives each
    /// item a document of its own.
    public var quickList: [String] {
        (store.array(forKey: Self.quickListKey) ?? []).compactMap { $0 as? String }
    }

    /// Adds `name` to the quick list.
    public func addToQuickList(_ name: String) async throws {
        let name = try Self.validName(name)
        try store.setValue(.array((quickList + [name]).map { .string($0) }), forKey: Self.quickListKey)
        await store.synchronized()
    }

    /// Removes every `name` from the quick list (any case).
    public func removeFromQuickList(_ name: String) async throws {
        let list = quickList
        let kept = list.filter { $0.lowercased() != name.lowercased() }
        guard kept.count < list.count else {
            throw GroceryError(.noSuchItem, "\"\(name)\" is not on the quick list")
        }
        try store.setValue(.array(kept.map { .string($0) }), forKey: Self.quickListKey)
        await store.synchronized()
    }
}
