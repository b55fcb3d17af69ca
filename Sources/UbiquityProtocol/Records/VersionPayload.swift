import Foundation

/// A ``VersionRecord`` as it travels: its manifest whole, or as a ``ManifestDelta`` against a version the receiver
/// holds — the base a commit was made from, or the version a device named when it asked for an item. Small edits of
/// large files then cost small requests and answers both ways.
///
/// On the wire a version record's fields, with `manifestDelta` in place of `manifest` when it is a delta; a plain
/// ``VersionRecord`` decodes as a whole payload.
public struct VersionPayload: Hashable, Sendable {
    /// How the content's manifest travels.
    public enum Content: Hashable, Sendable {
        /// The whole manifest.
        case whole(ContentManifest)
        /// The chunk list of a file as changes to another version's.
        case delta(ManifestDelta)
    }

    /// The version's identity.
    public var id: VersionID
    /// The item it is a version of.
    public var itemID: ItemID
    /// Its manifest, whole or as a delta.
    public var content: Content
    /// The content's length in bytes, checked against the manifest once it is whole.
    public var size: Int64
    /// The SHA-256 of the whole content.
    public var contentHash: ChunkHash
    /// When the content was last modified on the saving device.
    public var modificationDate: Date
    /// The device that saved it.
    public var savingDevice: SavingDevice
    /// The version this one was made from.
    public var basedOn: VersionID?
    /// Whether this version lost a conflict.
    public var isConflict: Bool
    /// Whether a conflict version has been marked resolved.
    public var isResolved: Bool

    /// `version` with its manifest whole.
    public init(_ version: VersionRecord) {
        id = version.id
        itemID = version.itemID
        content = .whole(version.manifest)
        size = version.size
        contentHash = version.contentHash
        modificationDate = version.modificationDate
        savingDevice = version.savingDevice
        basedOn = version.basedOn
        isConflict = version.isConflict
        isResolved = version.isResolved
    }

    /// `version` with its manifest as a delta against `base` when both are files' and the delta is the shorter;
    /// else whole.
    public init(_ version: VersionRecord, against base: VersionRecord?) {
        self.init(version)
        guard let base, case .file(let baseChunks) = base.manifest, case .file(let chunks) = version.manifest,
            !chunks.isEmpty
        else { return }
        let delta = ManifestDelta(from: baseChunks, baseID: base.id, to: chunks)
        if delta.operations.count + delta.addedCount < chunks.count { content = .delta(delta) }
    }

    /// The version a delta is made against, when the manifest is one.
    public var deltaBase: VersionID? {
        if case .delta(let delta) = content { return delta.base }
        return nil
    }

    /// The version record, its manifest made whole with `base`, which finds the manifest of a version the receiver
    /// holds.
    /// - Throws: ``ProtocolError/Code/unknownVersion`` when a delta's base is not found;
    ///   ``ProtocolError/Code/invalidManifest`` for a delta against a package's manifest or one that does not apply;
    ///   ``ProtocolError/Code/invalidRecord`` when ``size`` is not the rebuilt manifest's.
    public func resolved(base: (VersionID) -> ContentManifest?) throws(ProtocolError) -> VersionRecord {
        let manifest: ContentManifest
        switch content {
        case .whole(let whole):
            manifest = whole
        case .delta(let delta):
            guard let found = base(delta.base) else {
                throw ProtocolError(
                    .unknownVersion, "the delta of version \(id) is against \(delta.base), which is not at hand")
            }
            guard case .file(let baseChunks) = found else {
                throw ProtocolError(.invalidManifest, "the delta of version \(id) is against a package's manifest")
            }
            manifest = .file(try delta.apply(to: baseChunks))
            try manifest.validate()
        }
        guard manifest.totalSize == size else {
            throw ProtocolError(
                .invalidRecord, "version \(id) says size \(size) but its chunks add up to \(manifest.totalSize)")
        }
        return VersionRecord(
            id: id, itemID: itemID, manifest: manifest, contentHash: contentHash, modificationDate: modificationDate,
            savingDevice: savingDevice, basedOn: basedOn, isConflict: isConflict, isResolved: isResolved)
    }
}

extension VersionPayload: Codable {
    private enum CodingKeys: String, CodingKey {
        case manifest, manifestDelta, size
    }

    /// Decodes a payload: a version record's fields, with `manifest` or `manifestDelta`.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` when both or neither are there; the codes of
    ///   ``VersionRecord``'s decoding.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch (container.contains(.manifest), container.contains(.manifestDelta)) {
        case (true, false):
            self.init(try VersionRecord(from: decoder))
        case (false, true):
            // The other fields as a record's, read with an empty manifest standing in (its size is checked once the
            // delta is applied).
            let header = try VersionRecord(headerFrom: decoder)
            self.init(header)
            content = .delta(try container.decode(ManifestDelta.self, forKey: .manifestDelta))
            size = try container.decode(Int64.self, forKey: .size)
        default:
            throw ProtocolError(.malformedRequest, "a version has either a manifest or a manifestDelta")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch content {
        case .whole(let manifest):
            try VersionRecord(
                id: id, itemID: itemID, manifest: manifest, contentHash: contentHash,
                modificationDate: modificationDate, savingDevice: savingDevice, basedOn: basedOn,
                isConflict: isConflict, isResolved: isResolved
            ).encode(to: encoder)
        case .delta(let delta):
            try VersionRecord(
                id: id, itemID: itemID, manifest: .file([]), contentHash: contentHash,
                modificationDate: modificationDate, savingDevice: savingDevice, basedOn: basedOn,
                isConflict: isConflict, isResolved: isResolved
            ).encodeHeader(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(delta, forKey: .manifestDelta)
            try container.encode(size, forKey: .size)
        }
    }
}
