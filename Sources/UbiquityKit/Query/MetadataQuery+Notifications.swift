import Foundation

extension MetadataQuery {
    /// Posted when gathering starts (`NSMetadataQueryDidStartGathering`).
    public static let didStartGatheringNotification = Notification.Name("NSMetadataQueryDidStartGatheringNotification")
    /// Posted as gathering goes (`NSMetadataQueryGatheringProgress`).
    public static let gatheringProgressNotification = Notification.Name("NSMetadataQueryGatheringProgressNotification")
    /// Posted when the first results are in (`NSMetadataQueryDidFinishGathering`).
    public static let didFinishGatheringNotification = Notification.Name(
        "NSMetadataQueryDidFinishGatheringNotification")
    /// Posted when results changed after gathering (`NSMetadataQueryDidUpdate`); the user info holds the added,
    /// changed and removed items under ``addedItemsKey``, ``changedItemsKey`` and ``removedItemsKey``.
    public static let didUpdateNotification = Notification.Name("NSMetadataQueryDidUpdateNotification")
    /// The user-info key of the added items (`[MetadataItem]`).
    public static let addedItemsKey = "kMDQueryUpdateAddedItems"
    /// The user-info key of the changed items (`[MetadataItem]`).
    public static let changedItemsKey = "kMDQueryUpdateChangedItems"
    /// The user-info key of the removed items (`[MetadataItem]`).
    public static let removedItemsKey = "kMDQueryUpdateRemovedItems"

    /// What a query tells, as notifications and as ``MetadataQuery/updates()``.
    public enum Event: Sendable {
        /// Gathering started.
        case didStartGathering
        /// Gathering found this many results so far.
        case gatheringProgress(Int)
        /// Gathering is over; these are the results.
        case didFinishGathering([MetadataItem])
        /// Results changed.
        case didUpdate(added: [MetadataItem], changed: [MetadataItem], removed: [MetadataItem])
    }

    /// Tells observers (on ``operationQueue`` when set) and listeners of an event.
    func tell(_ event: Event) {
        broadcast.send(event)
        let (name, info): (Notification.Name, [String: [MetadataItem]]?) =
            switch event {
            case .didStartGathering: (Self.didStartGatheringNotification, nil)
            case .gatheringProgress: (Self.gatheringProgressNotification, nil)
            case .didFinishGathering: (Self.didFinishGatheringNotification, nil)
            case .didUpdate(let added, let changed, let removed):
                (
                    Self.didUpdateNotification,
                    [Self.addedItemsKey: added, Self.changedItemsKey: changed, Self.removedItemsKey: removed]
                )
            }
        let post: @Sendable () -> Void = {
            NotificationCenter.default.post(name: name, object: self, userInfo: info)
        }
        if let queue = operationQueue { queue.addOperation(post) } else { post() }
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
/// Apple's name of ``MetadataQuery/SearchScope/ubiquitousDocuments``.
public let NSMetadataQueryUbiquitousDocumentsScope = MetadataQuery.SearchScope.ubiquitousDocuments
/// Apple's name of ``MetadataQuery/SearchScope/ubiquitousData``.
public let NSMetadataQueryUbiquitousDataScope = MetadataQuery.SearchScope.ubiquitousData
