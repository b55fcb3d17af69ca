import Foundation

extension VersionRecord: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, itemID, manifest, size, contentHash, modificationDate, savingDevice, basedOn, isConflict, isResolved
    }

    /// Decodes a record; ``modificationDate`` must be a ``WireTimestamp``.
    /// - Throws: ``ProtocolError/Code/invalidRecord`` if `size` is not the manifest's total, and the codes of
    ///   the fields' own types.
    public init(from decoder: any Decoder) throws {
        try self.init(headerFrom: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.manifest = try container.decode(ContentManifest.self, forKey: .manifest)
        let size = try container.decode(Int64.self, forKey: .size)
        guard size == manifest.totalSize else {
            throw ProtocolError(
                .invalidRecord, "version \(id) says size \(size) but its chunks add up to \(manifest.totalSize)")
        }
    }

    /// Decodes every field but the manifest and its size (an empty file manifest stands in): the part of a
    /// ``VersionPayload`` whose manifest is a delta.
    init(headerFrom decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(VersionID.self, forKey: .id),
            itemID: try container.decode(ItemID.self, forKey: .itemID),
            manifest: .file([]),
            contentHash: try container.decode(ChunkHash.self, forKey: .contentHash),
            modificationDate: try WireTimestamp.date(from: container.decode(String.self, forKey: .modificationDate)),
            savingDevice: try container.decode(SavingDevice.self, forKey: .savingDevice),
            basedOn: try container.decodeIfPresent(VersionID.self, forKey: .basedOn),
            isConflict: try container.decode(Bool.self, forKey: .isConflict),
            isResolved: try container.decode(Bool.self, forKey: .isResolved))
    }

    public func encode(to encoder: any Encoder) throws {
        try encodeHeader(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(manifest, forKey: .manifest)
        try container.encode(size, forKey: .size)
    }

    /// Encodes every field but the manifest and its size.
    func encodeHeader(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(itemID, forKey: .itemID)
        try container.encode(contentHash, forKey: .contentHash)
        try container.encode(WireTimestamp.string(from: modificationDate), forKey: .modificationDate)
        try container.encode(savingDevice, forKey: .savingDevice)
        try container.encodeIfPresent(basedOn, forKey: .basedOn)
        try container.encode(isConflict, forKey: .isConflict)
        try container.encode(isResolved, forKey: .isResolved)
    }
}
