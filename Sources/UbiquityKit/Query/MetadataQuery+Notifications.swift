import Foundation

extension MetadataQuery {
    /// Posted when gathering starts (`NSMetadataQueryDidStartGathering`); the object is the query.
    public static let didStartGatheringNotification = Notification.Name("NSMetadataQueryDidStartGatheringNotification")
    /// Posted as gathering goes (`NSMetadataQueryGatheringProgress`); the object is the query.
    public static let gatheringProgressNotification = Notification.Name("NSMetadataQueryGatheringProgressNotification")
    /// Posted when the first results are in (`NSMetadataQueryDidFinishGathering`); the object is the query, whose
    /// ``results`` are those results.
    public static let didFinishGatheringNotification = Notification.Name(
        "NSMetadataQueryDidFinishGatheringNotification")
    /// Posted when results changed after gathering (`NSMetadataQueryDidUpdate`); the object is the query, and the
    /// user info holds the added, changed and removed items (`[MetadataItem]`, each list in result order) under
    /// ``addedItemsKey``, ``changedItemsKey`` and ``removedItemsKey``.
    public static let didUpdateNotification = Notification.Name("NSMetadataQueryDidUpdateNotification")
    /// The user-info key of the items that became results (`NSMetadataQueryUpdateAddedItemsKey`).
    public static let addedItemsKey = "kMDQueryUpdateAddedItems"
    /// The user-info key of the results that changed, as they are now (`NSMetadataQueryUpdateChangedItemsKey`).
    public static let changedItemsKey = "kMDQueryUpdateChangedItems"
    /// The user-info key of the items that are no longer results, as they were (`NSMetadataQueryUpdateRemovedItemsKey`).
    public static let removedItemsKey = "kMDQueryUpdateRemovedItems"

    /// What a query tells: the notifications, as ``updates()`` delivers them.
    public enum Event: Sendable {
        /// Gathering started (``didStartGatheringNotification``).
        case didStartGathering
        /// Gathering has found this many results so far (``gatheringProgressNotification``).
        case gatheringProgress(Int)
        /// Gathering is over; these are the results, in order (``didFinishGatheringNotification``).
        case didFinishGathering([MetadataItem])
        /// Results changed (``didUpdateNotification``); each list is in result order.
        case didUpdate(added: [MetadataItem], changed: [MetadataItem], removed: [MetadataItem])
    }

    /// Every event from now on — gathering, progress, updates — in the order, and right after, the notifications
    /// are posted; the sequence ends when the query stops. A listener that falls more than 8,192 events behind loses
    /// the oldest.
    ///
    /// ```swift
    /// for await event in query.updates() {
    ///     if case .didUpdate(let added, _, _) = event { print("new:", added.map(\.fileName)) }
    /// }
    /// ```
    public func updates() -> AsyncStream<Event> { broadcast.stream() }

    /// Posts the notification of `event`, then hands it to ``updates()``'s listeners.
    func tell(_ event: Event) {
        let name: Notification.Name
        var info: [String: [MetadataItem]]?
        switch event {
        case .didStartGathering: name = Self.didStartGatheringNotification
        case .gatheringProgress: name = Self.gatheringProgressNotification
        case .didFinishGathering: name = Self.didFinishGatheringNotification
        case .didUpdate(let added, let changed, let removed):
            name = Self.didUpdateNotification
            info = [Self.addedItemsKey: added, Self.changedItemsKey: changed, Self.removedItemsKey: removed]
        }
        NotificationCenter.default.post(name: name, object: self, userInfo: info)
        broadcast.send(event)
    }
}

/// Apple's name of ``MetadataQuery/didStartGatheringNotification``.
public let NSMetadataQueryDidStartGathering = MetadataQuery.didStartGatheringNotification
/// Apple's name of ``MetadataQuery/gatheringProgressNotification``.
public let NSMetadataQueryGatheringProgress = MetadataQuery.gatheringProgressNotification
/// Apple's name of ``MetadataQuery/didFinishGatheringNotification``.
public let NSMetadataQueryDidFinishGathering = MetadataQuery.didFinishGatheringNotification
/// Apple's name of ``MetadataQuery/didUpdateNotification``.
public let NSMetadataQueryDidUpdate = MetadataQuery.didUpdateNotification
/// Apple's name of ``MetadataQuery/addedItemsKey``.
public let NSMetadataQueryUpdateAddedItemsKey = MetadataQuery.addedItemsKey
/// Apple's name of ``MetadataQuery/changedItemsKey``.
public let NSMetadataQueryUpdateChangedItemsKey = MetadataQuery.changedItemsKey
/// Apple's name of ``MetadataQuery/removedItemsKey``.
public let NSMetadataQueryUpdateRemovedItemsKey = MetadataQuery.removedItemsKey
