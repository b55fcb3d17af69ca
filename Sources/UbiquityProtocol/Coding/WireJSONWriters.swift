import Foundation

// The records encoded for every commit the service takes and every item the engine records, written as their
// `Encodable` conformances encode them with sorted keys (the tests compare the bytes with Foundation's).

extension VersionRecord: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        if let basedOn {
            writer.key("basedOn")
            writer.string(basedOn.string)
        }
        writer.key("contentHash")
        writer.string(contentHash.string)
        writer.key("id")
        writer.string(id.string)
        writer.key("isConflict")
        writer.bool(isConflict)
        writer.key("isResolved")
        writer.bool(isResolved)
        writer.key("itemID")
        writer.string(itemID.string)
        writer.key("manifest")
        try writer.value(manifest)
        writer.key("modificationDate")
        writer.string(WireTimestamp.string(from: modificationDate))
        writer.key("savingDevice")
        try writer.value(savingDevice)
        writer.key("size")
        writer.integer(size)
        writer.closeObject()
    }
}

extension VersionPayload: WireJSONWritable {
    /// Writes a version with its manifest whole; one carrying a delta is left to Foundation's encoder.
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        guard case .whole(let manifest) = content else { try writer.fallBack() }
        try VersionRecord(
            id: id, itemID: itemID, manifest: manifest, contentHash: contentHash, modificationDate: modificationDate,
            savingDevice: savingDevice, basedOn: basedOn, isConflict: isConflict, isResolved: isResolved
        ).writeWireJSON(to: &writer)
    }
}

extension ContentManifest: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        switch self {
        case .file(let chunks):
            writer.key("chunks")
            writer.openArray()
            for chunk in chunks { try writer.value(chunk) }
            writer.closeArray()
            writer.key("type")
            writer.string("file")
        case .package(let entries):
            writer.key("entries")
            try writer.encodable(entries)
            writer.key("type")
            writer.string("package")
        }
        writer.closeObject()
    }
}

extension ChunkReference: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("hash")
        writer.string(hash.string)
        writer.key("size")
        writer.integer(size)
        writer.closeObject()
    }
}

extension SavingDevice: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("id")
        writer.string(id.string)
        writer.key("name")
        writer.string(name)
        writer.closeObject()
    }
}

extension ItemRecord: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        if let currentVersion {
            writer.key("currentVersion")
            writer.string(currentVersion.string)
        }
        writer.key("id")
        writer.string(id.string)
        writer.key("isDeleted")
        writer.bool(isDeleted)
        writer.key("kind")
        writer.string(kind.rawValue)
        writer.key("path")
        writer.string(path.string)
        writer.closeObject()
    }
}

extension ItemResponse: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("item")
        try writer.value(item)
        if let outcome {
            writer.key("outcome")
            writer.string(outcome.rawValue)
        }
        writer.key("token")
        writer.string(token.string)
        if let version {
            writer.key("version")
            try writer.value(version)
        }
        writer.closeObject()
    }
}

extension CreateItemRequest: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("id")
        writer.string(id.string)
        writer.key("kind")
        writer.string(kind.rawValue)
        writer.key("path")
        writer.string(path.string)
        if let version {
            writer.key("version")
            try writer.value(version)
        }
        writer.closeObject()
    }
}

extension Change: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        switch self {
        case .itemCreated(let itemID, let path, let kind):
            writer.key("itemID")
            writer.string(itemID.string)
            writer.key("kind")
            writer.string(kind.rawValue)
            writer.key("path")
            writer.string(path.string)
            writer.key("type")
            writer.string("itemCreated")
        case .itemChanged(let itemID, let currentVersion):
            writer.key("currentVersion")
            writer.string(currentVersion.string)
            writer.key("itemID")
            writer.string(itemID.string)
            writer.key("type")
            writer.string("itemChanged")
        case .itemMoved(let itemID, let from, let to):
            writer.key("from")
            writer.string(from.string)
            writer.key("itemID")
            writer.string(itemID.string)
            writer.key("to")
            writer.string(to.string)
            writer.key("type")
            writer.string("itemMoved")
        case .itemDeleted(let itemID):
            writer.key("itemID")
            writer.string(itemID.string)
            writer.key("type")
            writer.string("itemDeleted")
        case .versionAdded(let itemID, let versionID):
            Self.writeVersionChange("versionAdded", itemID, versionID, to: &writer)
        case .versionResolved(let itemID, let versionID):
            Self.writeVersionChange("versionResolved", itemID, versionID, to: &writer)
        case .versionRemoved(let itemID, let versionID):
            Self.writeVersionChange("versionRemoved", itemID, versionID, to: &writer)
        }
        writer.closeObject()
    }

    private static func writeVersionChange(
        _ type: String, _ itemID: ItemID, _ versionID: VersionID, to writer: inout WireJSONWriter
    ) {
        writer.key("itemID")
        writer.string(itemID.string)
        writer.key("type")
        writer.string(type)
        writer.key("versionID")
        writer.string(versionID.string)
    }
}

extension ItemBatchRequest: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        if !chunks.isEmpty {
            writer.key("chunks")
            writer.openArray()
            for chunk in chunks { try writer.value(chunk) }
            writer.closeArray()
        }
        writer.key("operations")
        writer.openArray()
        for operation in operations { try writer.value(operation) }
        writer.closeArray()
        writer.closeObject()
    }
}

extension InlineChunk: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("data")
        writer.string(data.base64EncodedString())
        writer.key("hash")
        writer.string(hash.string)
        writer.closeObject()
    }
}

extension ChangePage: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("changes")
        writer.openArray()
        for change in changes { try writer.value(change) }
        writer.closeArray()
        if !chunks.isEmpty {
            writer.key("chunks")
            writer.openArray()
            for chunk in chunks { try writer.value(chunk) }
            writer.closeArray()
        }
        writer.key("hasMore")
        writer.bool(hasMore)
        writer.key("nextToken")
        writer.string(nextToken.string)
        if !versions.isEmpty {
            writer.key("versions")
            writer.openArray()
            for version in versions { try writer.value(version) }
            writer.closeArray()
        }
        writer.closeObject()
    }
}

extension ItemBatchOperation: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        switch self {
        case .create(let request):
            writer.key("create")
            try writer.value(request)
        case .commit(let payload):
            writer.key("commit")
            try writer.value(payload)
        }
        writer.closeObject()
    }
}

extension ItemBatchResponse: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        writer.key("results")
        writer.openArray()
        for result in results { try writer.value(result) }
        writer.closeArray()
        if let token {
            writer.key("token")
            writer.string(token.string)
        }
        writer.closeObject()
    }
}

extension ItemBatchResult: WireJSONWritable {
    package func writeWireJSON(to writer: inout WireJSONWriter) throws {
        writer.openObject()
        switch self {
        case .applied(let response):
            writer.key("applied")
            try writer.value(response)
        case .refused(let error):
            writer.key("refused")
            try writer.encodable(error)
        }
        writer.closeObject()
    }
}
