import Foundation

// The records decoded for every commit the service takes and every answer the engine reads, read as their
// `Decodable` conformances decode them (the tests compare the values with Foundation's decoder's).

extension VersionRecord: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        self = try Self.read(&reader, refusing: nil)
    }

    /// Reads a record; a key named `refused` is left to Foundation's decoder.
    static func read(_ reader: inout WireJSONReader, refusing refused: String?) throws -> VersionRecord {
        var id = WireJSONField<VersionID>()
        var itemID = WireJSONField<ItemID>()
        var manifest = WireJSONField<ContentManifest>()
        var size = WireJSONField<Int64>()
        var contentHash = WireJSONField<ChunkHash>()
        var modificationDate = WireJSONField<Date>()
        var savingDevice = WireJSONField<SavingDevice>()
        var basedOn: VersionID?
        var isConflict = WireJSONField<Bool>()
        var isResolved = WireJSONField<Bool>()
        try reader.readObject { reader, key in
            switch key {
            case "id": id.set(try VersionID(reader.readString()))
            case "itemID": itemID.set(try ItemID(reader.readString()))
            case "manifest": manifest.set(try reader.read(ContentManifest.self))
            case "size": size.set(try reader.readInt64())
            case "contentHash": contentHash.set(try ChunkHash(reader.readString()))
            case "modificationDate": modificationDate.set(try WireTimestamp.date(from: reader.readString()))
            case "savingDevice": savingDevice.set(try reader.read(SavingDevice.self))
            case "basedOn": basedOn = try reader.readNull() ? nil : try VersionID(reader.readString())
            case "isConflict": isConflict.set(try reader.readBool())
            case "isResolved": isResolved.set(try reader.readBool())
            case refused: throw WireJSONUnread()
            default: try reader.skipValue()
            }
        }
        let record = VersionRecord(
            id: try id.required(), itemID: try itemID.required(), manifest: try manifest.required(),
            contentHash: try contentHash.required(), modificationDate: try modificationDate.required(),
            savingDevice: try savingDevice.required(), basedOn: basedOn, isConflict: try isConflict.required(),
            isResolved: try isResolved.required())
        // A size other than the manifest's total is refused, with the decoder's own error.
        guard try size.required() == record.size else { throw WireJSONUnread() }
        return record
    }
}

extension VersionPayload: WireJSONReadable {
    /// Reads a version with its manifest whole; one carrying a delta is left to Foundation's decoder.
    package init(wireJSON reader: inout WireJSONReader) throws {
        self.init(try VersionRecord.read(&reader, refusing: "manifestDelta"))
    }
}

extension ContentManifest: WireJSONReadable {
    /// Reads a file's manifest; a package's is left to Foundation's decoder.
    package init(wireJSON reader: inout WireJSONReader) throws {
        var type = WireJSONField<String>()
        var chunks = WireJSONField<[ChunkReference]>()
        try reader.readObject { reader, key in
            switch key {
            case "type": type.set(try reader.readString())
            case "chunks":
                var list: [ChunkReference] = []
                try reader.readArray { reader in list.append(try reader.read(ChunkReference.self)) }
                chunks.set(list)
            default: try reader.skipValue()
            }
        }
        guard try type.required() == "file" else { throw WireJSONUnread() }
        self = .file(try chunks.required())
        try validate()
    }
}

extension ChunkReference: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var hash = WireJSONField<ChunkHash>()
        var size = WireJSONField<Int64>()
        try reader.readObject { reader, key in
            switch key {
            case "hash": hash.set(try ChunkHash(reader.readString()))
            case "size": size.set(try reader.readInt64())
            default: try reader.skipValue()
            }
        }
        self.init(hash: try hash.required(), size: try size.required())
    }
}

extension SavingDevice: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var id = WireJSONField<DeviceID>()
        var name = WireJSONField<String>()
        try reader.readObject { reader, key in
            switch key {
            case "id": id.set(try DeviceID(reader.readString()))
            case "name": name.set(try reader.readString())
            default: try reader.skipValue()
            }
        }
        self.init(id: try id.required(), name: try name.required())
    }
}

extension CreateItemRequest: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var id = WireJSONField<ItemID>()
        var path = WireJSONField<ItemPath>()
        var kind = WireJSONField<ItemKind>()
        var version: VersionRecord?
        try reader.readObject { reader, key in
            switch key {
            case "id": id.set(try ItemID(reader.readString()))
            case "path": path.set(try ItemPath(reader.readString()))
            case "kind": kind.set(try Self.kind(reader.readString()))
            case "version": version = try reader.readNull() ? nil : try reader.read(VersionRecord.self)
            default: try reader.skipValue()
            }
        }
        self.init(id: try id.required(), path: try path.required(), kind: try kind.required(), version: version)
    }

    static func kind(_ text: String) throws -> ItemKind {
        guard let kind = ItemKind(rawValue: text) else { throw WireJSONUnread() }
        return kind
    }
}

extension ItemRecord: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var id = WireJSONField<ItemID>()
        var path = WireJSONField<ItemPath>()
        var kind = WireJSONField<ItemKind>()
        var currentVersion: VersionID?
        var isDeleted = WireJSONField<Bool>()
        try reader.readObject { reader, key in
            switch key {
            case "id": id.set(try ItemID(reader.readString()))
            case "path": path.set(try ItemPath(reader.readString()))
            case "kind": kind.set(try CreateItemRequest.kind(reader.readString()))
            case "currentVersion": currentVersion = try reader.readNull() ? nil : try VersionID(reader.readString())
            case "isDeleted": isDeleted.set(try reader.readBool())
            default: try reader.skipValue()
            }
        }
        self.init(
            id: try id.required(), path: try path.required(), kind: try kind.required(),
            currentVersion: currentVersion, isDeleted: try isDeleted.required())
    }
}

extension ItemResponse: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var item = WireJSONField<ItemRecord>()
        var outcome: CommitOutcome?
        var version: VersionRecord?
        var token = WireJSONField<ChangeToken>()
        try reader.readObject { reader, key in
            switch key {
            case "item": item.set(try reader.read(ItemRecord.self))
            case "outcome":
                if try !reader.readNull() {
                    guard let read = CommitOutcome(rawValue: try reader.readString()) else { throw WireJSONUnread() }
                    outcome = read
                }
            case "version": version = try reader.readNull() ? nil : try reader.read(VersionRecord.self)
            case "token": token.set(ChangeToken(try reader.readString()))
            default: try reader.skipValue()
            }
        }
        self.init(item: try item.required(), outcome: outcome, version: version, token: try token.required())
    }
}

extension ItemBatchRequest: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var operations = WireJSONField<[ItemBatchOperation]>()
        var chunks: [InlineChunk] = []
        try reader.readObject { reader, key in
            switch key {
            case "operations":
                var list: [ItemBatchOperation] = []
                try reader.readArray { reader in list.append(try reader.read(ItemBatchOperation.self)) }
                operations.set(list)
            case "chunks":
                try reader.readArray { reader in chunks.append(try reader.read(InlineChunk.self)) }
            default: try reader.skipValue()
            }
        }
        self.init(operations: try operations.required(), chunks: chunks)
    }
}

extension InlineChunk: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var hash = WireJSONField<ChunkHash>()
        var data = WireJSONField<Data>()
        try reader.readObject { reader, key in
            switch key {
            case "hash": hash.set(try ChunkHash(reader.readString()))
            case "data":
                // Text that is not base64 is left to Foundation's decoder, which refuses it.
                guard let bytes = Data(base64Encoded: try reader.readString()) else { throw WireJSONUnread() }
                data.set(bytes)
            default: try reader.skipValue()
            }
        }
        self.init(hash: try hash.required(), data: try data.required())
    }
}

extension ItemBatchOperation: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var create = WireJSONField<CreateItemRequest>()
        var commit = WireJSONField<VersionPayload>()
        try reader.readObject { reader, key in
            switch key {
            case "create": create.set(try reader.read(CreateItemRequest.self))
            case "commit": commit.set(try reader.read(VersionPayload.self))
            default: try reader.skipValue()
            }
        }
        // Exactly one of the two, or Foundation's decoder refuses it.
        switch (create.isSet, commit.isSet) {
        case (true, false): self = .create(try create.required())
        case (false, true): self = .commit(try commit.required())
        default: throw WireJSONUnread()
        }
    }
}

extension ItemBatchResponse: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var results = WireJSONField<[ItemBatchResult]>()
        var token: ChangeToken?
        try reader.readObject { reader, key in
            switch key {
            case "results":
                var list: [ItemBatchResult] = []
                try reader.readArray { reader in list.append(try reader.read(ItemBatchResult.self)) }
                results.set(list)
            case "token": token = try reader.readNull() ? nil : ChangeToken(try reader.readString())
            default: try reader.skipValue()
            }
        }
        self.init(results: try results.required(), token: token)
    }
}

extension ItemBatchResult: WireJSONReadable {
    /// Reads an applied operation's answer; a refusal is left to Foundation's decoder.
    package init(wireJSON reader: inout WireJSONReader) throws {
        var applied = WireJSONField<ItemResponse>()
        try reader.readObject { reader, key in
            switch key {
            case "applied": if try !reader.readNull() { applied.set(try reader.read(ItemResponse.self)) }
            default: throw WireJSONUnread()
            }
        }
        self = .applied(try applied.required())
    }
}

extension Change: WireJSONReadable {
    /// Reads a change of any type: the fields its type names are required, others are skipped (as Foundation's
    /// decoder ignores them); an unknown type is left to Foundation's decoder to refuse.
    package init(wireJSON reader: inout WireJSONReader) throws {
        var type = WireJSONField<String>()
        var itemID = WireJSONField<ItemID>()
        var path = WireJSONField<ItemPath>()
        var kind = WireJSONField<ItemKind>()
        var from = WireJSONField<ItemPath>()
        var to = WireJSONField<ItemPath>()
        var currentVersion = WireJSONField<VersionID>()
        var versionID = WireJSONField<VersionID>()
        try reader.readObject { reader, key in
            switch key {
            case "type": type.set(try reader.readString())
            case "itemID": itemID.set(try ItemID(reader.readString()))
            case "path": path.set(try ItemPath(reader.readString()))
            case "kind": kind.set(try CreateItemRequest.kind(reader.readString()))
            case "from": from.set(try ItemPath(reader.readString()))
            case "to": to.set(try ItemPath(reader.readString()))
            case "currentVersion": currentVersion.set(try VersionID(reader.readString()))
            case "versionID": versionID.set(try VersionID(reader.readString()))
            default: try reader.skipValue()
            }
        }
        let id = try itemID.required()
        switch try type.required() {
        case "itemCreated": self = .itemCreated(itemID: id, path: try path.required(), kind: try kind.required())
        case "itemChanged": self = .itemChanged(itemID: id, currentVersion: try currentVersion.required())
        case "itemMoved": self = .itemMoved(itemID: id, from: try from.required(), to: try to.required())
        case "itemDeleted": self = .itemDeleted(itemID: id)
        case "versionAdded": self = .versionAdded(itemID: id, versionID: try versionID.required())
        case "versionResolved": self = .versionResolved(itemID: id, versionID: try versionID.required())
        case "versionRemoved": self = .versionRemoved(itemID: id, versionID: try versionID.required())
        default: throw WireJSONUnread()
        }
    }
}

extension ChangePage: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var changes = WireJSONField<[Change]>()
        var nextToken = WireJSONField<ChangeToken>()
        var hasMore = WireJSONField<Bool>()
        var versions: [VersionRecord] = []
        var chunks: [InlineChunk] = []
        try reader.readObject { reader, key in
            switch key {
            case "changes":
                var list: [Change] = []
                try reader.readArray { reader in list.append(try reader.read(Change.self)) }
                changes.set(list)
            case "nextToken": nextToken.set(ChangeToken(try reader.readString()))
            case "hasMore": hasMore.set(try reader.readBool())
            case "versions": try reader.readArray { reader in versions.append(try reader.read(VersionRecord.self)) }
            case "chunks": try reader.readArray { reader in chunks.append(try reader.read(InlineChunk.self)) }
            default: try reader.skipValue()
            }
        }
        self.init(
            changes: try changes.required(), nextToken: try nextToken.required(), hasMore: try hasMore.required(),
            versions: versions, chunks: chunks)
    }
}

extension ItemDetail: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        self = try Self.read(&reader, refusing: nil)
    }

    /// Reads a detail; a version with a key named `refused` is left to Foundation's decoder.
    static func read(_ reader: inout WireJSONReader, refusing refused: String?) throws -> ItemDetail {
        var item = WireJSONField<ItemRecord>()
        var versions = WireJSONField<[VersionRecord]>()
        try reader.readObject { reader, key in
            switch key {
            case "item": item.set(try reader.read(ItemRecord.self))
            case "versions":
                var list: [VersionRecord] = []
                try reader.readArray { reader in list.append(try VersionRecord.read(&reader, refusing: refused)) }
                versions.set(list)
            default: try reader.skipValue()
            }
        }
        return ItemDetail(item: try item.required(), versions: try versions.required())
    }
}

extension ItemDetailPayload: WireJSONReadable {
    /// Reads a detail whose versions' manifests are whole; one carrying a delta is left to Foundation's decoder.
    package init(wireJSON reader: inout WireJSONReader) throws {
        self.init(try ItemDetail.read(&reader, refusing: "manifestDelta"), have: nil)
    }
}

extension ItemDetailsResponse: WireJSONReadable {
    package init(wireJSON reader: inout WireJSONReader) throws {
        var items = WireJSONField<[ItemDetailPayload]>()
        try reader.readObject { reader, key in
            switch key {
            case "items":
                var list: [ItemDetailPayload] = []
                try reader.readArray { reader in list.append(try reader.read(ItemDetailPayload.self)) }
                items.set(list)
            default: try reader.skipValue()
            }
        }
        self.init(items: try items.required())
    }
}
