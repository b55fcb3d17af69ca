import UbiquityProtocol

/// The engine's decisions, as a pure function: from every item's observations (``ItemObservation``) and the items
/// with an operation in flight, the next operations — at most one per item, none for an item in flight. No I/O, no
/// clock; the same input gives the same plan.
///
/// Properties (checked by the planner's randomized tests):
/// - Any operation of a batch may complete first, or fail: each touches only its own item, and the executor checks
///   what it expects (``SyncOperation``) before it acts.
/// - Completing an operation and planning again moves toward "in step" ( ``ItemObservation/isInStep``): with the
///   world quiet, planning and completing terminates.
/// - Nothing saved is lost: a local copy is replaced, removed or evicted only while it is the synced content; a local
///   edit is uploaded (as a new version, or a conflict version) before anything replaces it; a delete is based on the
///   synced version, so the service refuses it when the other side changed since; an edit wins over a delete.
///
/// The rules, per item (`R` remote, `L` local, `S` synced):
/// 1. Never in step (`S` missing): new here → create on the service, unless another item holds the path there —
///    the same content is adopted, other content moves aside; new there → a placeholder; both at one path → the
///    same content is adopted, an earlier version of the item is taken for that version (and updated), other
///    content moves aside; gone on both → forget.
/// 2. Deleted on the service: an unchanged local copy is removed; a changed one is uploaded (the edit brings the
///    item back); nothing here → forget.
/// 3. Deleted here (`S` had a copy, `L` missing): deleted on the service based on `S`'s version — unless the
///    service has a newer version, which wins over the delete and comes back as a placeholder.
/// 4. Moved: on the service → the local copy follows (the service wins when both moved); here only → the service's
///    record follows.
/// 5. Content: edited here → uploaded based on `S` (or adopted when it is the service's content already); edited on
///    the service only → downloaded over the unchanged copy, or recorded as a placeholder (large items, evicted ones);
///    racy identities → the content is hashed first.
/// 6. Requests: download a placeholder; evict an unchanged, uploaded copy. A folder on the service is made here.
public struct SyncPlanner: Sendable {
    /// What the planner's policy depends on.
    public struct Configuration: Hashable, Sendable {
        /// Items up to this size are downloaded as soon as they are heard of; larger ones stay placeholders until
        /// asked for (default 1 MiB).
        public var eagerDownloadLimit: Int64

        /// Creates a configuration.
        public init(eagerDownloadLimit: Int64 = 1 << 20) { self.eagerDownloadLimit = eagerDownloadLimit }
    }

    /// Facts about other items that one item's decision needs: who holds a path on the service; and of the item's
    /// own, its earlier versions when its copy here may be one.
    public struct Context: Sendable {
        /// The live item on the service at each path (by ``ItemPath/collisionKey``).
        var remoteOwners: [String: ItemID]
        /// The earlier versions (not conflict versions) of the items ``asksEarlierVersions(_:)`` names, by content
        /// hash: a copy here that is one of them is that version, not an edit made here (a device set up again over
        /// old copies, a damaged state database moved aside). Items not named here have none known.
        public var earlierVersions: [ItemID: [ChunkHash: VersionID]] = [:]

        /// No other items.
        public static let empty = Context(remoteOwners: [:])

        /// The context of `items`. Only the paths some item's decision asks about are looked up (none in a container
        /// in step, so planning one costs no path normalisation).
        public init(_ items: some Collection<ItemObservation>) {
            let needed = Self.askedKeys(items)
            var owners: [String: ItemID] = [:]
            if !needed.isEmpty {
                for item in items {
                    guard let remote = item.remote, !remote.isDeleted else { continue }
                    let key = remote.path.collisionKey
                    if needed.contains(key) { owners[key] = item.id }
                }
            }
            remoteOwners = owners
        }

        init(remoteOwners: [String: ItemID]) { self.remoteOwners = remoteOwners }

        /// The paths (by ``ItemPath/collisionKey``) the decisions on `items` ask who holds on the service: those of
        /// items never agreed on, deleted on the service, or moved on either side.
        public static func askedKeys(_ items: some Collection<ItemObservation>) -> Set<String> {
            var needed = Set<String>()
            for item in items {
                guard let local = item.local else { continue }
                let asks =
                    item.synced == nil || item.remote?.isDeleted == true || local.path != item.synced?.path
                    || item.remote.map { $0.path != local.path } == true
                if asks {
                    needed.insert(local.path.collisionKey)
                    if let remote = item.remote { needed.insert(remote.path.collisionKey) }
                }
            }
            return needed
        }
    }

    /// The policy.
    public var configuration: Configuration

    /// Creates a planner.
    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// Whether deciding on `item` needs its earlier versions (``Context/earlierVersions``): a file the two sides
    /// never agreed on, here at the service's path with a content other than the service's.
    public static func asksEarlierVersions(_ item: ItemObservation) -> Bool {
        guard item.synced == nil, let remote = item.remote, !remote.isDeleted, remote.version != nil,
            let local = item.local, local.kind == .file, remote.kind == .file, local.path == remote.path,
            let hash = local.contentHash
        else { return false }
        return hash != remote.contentHash
    }

    /// The next operations for `items`, none for the items in `inFlight`; empty when everything is in step.
    /// `earlierVersions`: those of the items ``asksEarlierVersions(_:)`` names.
    public func plan(
        _ items: [ItemObservation], inFlight: Set<ItemID> = [],
        earlierVersions: [ItemID: [ChunkHash: VersionID]] = [:]
    ) -> [SyncOperation] {
        var context = Context(items)
        context.earlierVersions = earlierVersions
        var byID: [ItemID: ItemObservation]?  // made only when an adoption needs to look at another item
        var operations: [SyncOperation] = []
        for item in items where !inFlight.contains(item.id) {
            guard let operation = Self.decide(item, context: context, configuration: configuration) else { continue }
            // An item adopting the content of the one holding its path waits while that one has its own work.
            if case .adoptLocal = operation, let owner = Self.owner(of: item, in: context), owner != item.id {
                if byID == nil { byID = Dictionary(items.map { ($0.id, $0) }) { first, _ in first } }
                if inFlight.contains(owner) || byID?[owner].map({ !$0.isInStep }) == true { continue }
            }
            operations.append(operation)
        }
        return operations
    }

    private static func owner(of item: ItemObservation, in context: Context) -> ItemID? {
        item.local.flatMap { context.remoteOwners[$0.path.collisionKey] }
    }

    /// The one next operation for `item`, or `nil` when it is in step (or waits for another item).
    public static func decide(
        _ item: ItemObservation, context: Context, configuration: Configuration
    ) -> SyncOperation? {
        let id = item.id
        guard let synced = item.synced else {
            return firstAgreement(item, context: context, configuration: configuration)
        }
        let local = item.local
        guard let remote = item.remote else {
            // Known here, never heard from the service (its creation is on its way): content waits for the record.
            return nil
        }
        // 2. Deleted on the service.
        if remote.isDeleted {
            guard let local else { return .forget(id) }
            if local.kind == .directory, let owner = context.remoteOwners[local.path.collisionKey], owner != id {
                // Another item has the path on the service now: the folder is that item's (it may hold that
                // item's members, so it cannot go), and this record lets go of it.
                return .forget(id)
            }
            switch contentState(local, synced) {
            case .same: return .deleteLocal(id, path: local.path, expecting: local.identity)
            case .unknown: return .hashLocal(id, expecting: local.identity)
            case .changed, .absent:
                if local.kind == .directory { return .deleteLocal(id, path: local.path, expecting: local.identity) }
                if let owner = context.remoteOwners[local.path.collisionKey], owner != id {
                    // Another item has the path now: the edit steps aside and goes up as an item of its own.
                    return .moveAside(id, path: local.path, expecting: local.identity)
                }
                if local.path != remote.path || context.remoteOwners[remote.path.collisionKey].map({ $0 != id }) == true
                {
                    // The item would come back where it was, which is elsewhere or taken: the edit is an item of its own.
                    return .detachLocal(id)
                }
                // The edit brings the item back.
                return .uploadContent(id, basedOn: synced.version, expecting: local.identity)
            }
        }
        // 3. Deleted here.
        guard let local else {
            if synced.identity == nil, remote.version == nil, item.requests.contains(.firstUpload) {
                // Created here and gone before its content went up: the empty record goes too.
                return .deleteRemote(id, basedOn: nil)
            }
            if synced.identity == nil {
                // A placeholder: nothing was here to delete.
                return placeholderStep(item, remote: remote, synced: synced, configuration: configuration)
            }
            if remote.version == synced.version { return .deleteRemote(id, basedOn: synced.version) }
            var placeholder = remote
            placeholder.isDeleted = false
            return .recordPlaceholder(id, placeholder)  // the service's newer version wins over the delete
        }
        // 4. Moved.
        if remote.path != synced.path || (remote.path != local.path && local.path == synced.path) {
            if local.path != remote.path {
                return .moveLocal(id, from: local.path, to: remote.path, expecting: local.identity)
            }
        }
        if local.path != synced.path {
            if local.path == remote.path {
                // Both moved to the same place: agree on the path (the content is decided on its own).
                return .agreePath(id, remote.path)
            }
            if let owner = context.remoteOwners[local.path.collisionKey], owner != id {
                // Moved here to where the service has another item: the local file steps aside, then moves there.
                return .moveAside(id, path: local.path, expecting: local.identity)
            }
            return .moveRemote(id, to: local.path)
        }
        // 5. Content.
        if local.kind == .directory {
            return synced.identity == nil ? .adoptLocal(id, remote: remote, identity: local.identity) : nil
        }
        let state = contentState(local, synced)
        switch state {
        case .unknown:
            return .hashLocal(id, expecting: local.identity)
        case .changed, .absent:
            if let hash = local.contentHash, remote.version != nil, hash == remote.contentHash {
                return .adoptLocal(id, remote: remote, identity: local.identity)
            }
            if local.contentHash == nil, remote.version != synced.version, remote.version != nil {
                // Both sides changed: the bytes say whether it is the same content (then no conflict at all).
                return .hashLocal(id, expecting: local.identity)
            }
            // Written where only a placeholder was, the content is based on nothing this device had: when the service
            // has a version, both are kept (one current, the other a conflict version).
            return .uploadContent(id, basedOn: state == .absent ? nil : synced.version, expecting: local.identity)
        case .same:
            if let version = remote.version, version != synced.version {
                return .download(id, version: version, path: local.path, replacing: local.identity)
            }
            if let hash = local.contentHash, hash == synced.contentHash,
                local.identity != synced.identity || (synced.identity?.isRacy == true && !local.identity.isRacy)
            {
                // Only the recorded identity was stale (a rename, a touch) or racy: record the current one.
                return .adoptLocal(id, remote: remote, identity: local.identity)
            }
            if item.requests.contains(.evict), synced.version != nil {
                return .evict(id, path: local.path, expecting: local.identity)
            }
            return nil
        }
    }

    /// A placeholder's next step: follow the service's record, and download when the policy or a request says so.
    private static func placeholderStep(
        _ item: ItemObservation, remote: RemoteView, synced: SyncedView, configuration: Configuration
    ) -> SyncOperation? {
        let id = item.id
        if remote.kind == .directory {
            return remote.path != synced.path ? .recordPlaceholder(id, remote) : .makeFolder(id, path: remote.path)
        }
        guard let version = remote.version else {
            return remote.path != synced.path || remote.kind != synced.kind ? .recordPlaceholder(id, remote) : nil
        }
        if downloadsNow(item, remote: remote, configuration: configuration) {
            return .download(id, version: version, path: remote.path, replacing: nil)
        }
        if version != synced.version || remote.path != synced.path { return .recordPlaceholder(id, remote) }
        return nil
    }

    /// Whether the content of `remote` (a file or package) comes down as soon as it is heard of: the policy says so
    /// for its size, and the item is not kept evicted; or a download was asked for.
    private static func downloadsNow(
        _ item: ItemObservation, remote: RemoteView, configuration: Configuration
    ) -> Bool {
        let eager = remote.size <= configuration.eagerDownloadLimit && !item.requests.contains(.keepEvicted)
        return eager || item.requests.contains(.download)
    }

    /// Rule 1: an item the two sides never agreed on.
    private static func firstAgreement(
        _ item: ItemObservation, context: Context, configuration: Configuration
    ) -> SyncOperation? {
        let id = item.id
        let owed = item.requests.contains(.firstUpload)
        switch (item.remote, item.local) {
        case (nil, nil):
            // A creation that may have reached the service (its answer lost) is undone before the item is forgotten.
            return owed ? .deleteRemote(id, basedOn: nil) : .forget(id)
        case (nil, let local?):
            if let owner = context.remoteOwners[local.path.collisionKey], owner != id {
                // Another item holds the path on the service. The same folder, or the same content, is that item
                // (adopted once the owner is in step); anything else steps aside.
                return .moveAside(id, path: local.path, expecting: local.identity)
            }
            return .createRemote(id, path: local.path, kind: local.kind)
        case (let remote?, nil):
            if owed, !remote.isDeleted, remote.version == nil { return .deleteRemote(id, basedOn: nil) }
            if remote.isDeleted { return .forget(id) }
            // Content that comes down at once comes down now: its placeholder would be agreed on only to be replaced
            // by the download a moment later (an operation and a stored outcome more for each file of a folder that
            // arrives). Until it is in place, apps see the service's record as a placeholder all the same.
            if remote.kind != .directory, let version = remote.version,
                downloadsNow(item, remote: remote, configuration: configuration)
            {
                return .download(id, version: version, path: remote.path, replacing: nil)
            }
            return .recordPlaceholder(id, remote)
        case (let remote?, let local?):
            if remote.isDeleted || remote.path != local.path {
                if let owner = context.remoteOwners[local.path.collisionKey], owner != id {
                    // Deleted or moved on the service, and another item holds this path there now: as for a new
                    // file, this copy steps aside (and goes up as an item of its own), making way for that item.
                    return .moveAside(id, path: local.path, expecting: local.identity)
                }
                return .createRemote(id, path: local.path, kind: local.kind)
            }
            if remote.kind != local.kind { return .moveAside(id, path: local.path, expecting: local.identity) }
            if remote.kind == .directory || remote.version == nil {
                // The same folder; or a record whose content never came: the local content becomes its first version
                // (agreed on as a placeholder, then uploaded).
                return remote.kind == .directory
                    ? .adoptLocal(id, remote: remote, identity: local.identity)
                    : .recordPlaceholder(id, remote)
            }
            guard let hash = local.contentHash else { return .hashLocal(id, expecting: local.identity) }
            if hash == remote.contentHash { return .adoptLocal(id, remote: remote, identity: local.identity) }
            if let version = context.earlierVersions[id]?[hash] {
                // An earlier version of the item (an old copy where the device was set up again): that version is
                // what both sides had, and the service's newer one comes down over it as over any old copy.
                return .adoptEarlier(id, version: version, contentHash: hash, identity: local.identity)
            }
            return .moveAside(id, path: local.path, expecting: local.identity)
        }
    }

    /// How the local copy stands against the synced content.
    enum ContentState {
        /// The synced content, as far as identity and (for racy identities) hash tell.
        case same
        /// Something else: an edit here.
        case changed
        /// The identity is the synced one but racy, and the hash is not known: read it to tell.
        case unknown
        /// The synced state is a placeholder and something is there now.
        case absent
    }

    static func contentState(_ local: LocalView, _ synced: SyncedView) -> ContentState {
        guard let recorded = synced.identity else { return .absent }
        if local.identity.isUnchanged(since: recorded) {
            guard recorded.isRacy, local.kind != .directory else { return .same }
            guard let hash = local.contentHash else { return .unknown }
            return hash == synced.contentHash ? .same : .changed
        }
        if let hash = local.contentHash, hash == synced.contentHash, local.kind != .directory { return .same }
        return local.kind == .directory ? .same : .changed
    }
}
