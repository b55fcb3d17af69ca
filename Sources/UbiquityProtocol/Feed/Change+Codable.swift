extension Change: Codable {
    private enum CodingKeys: String, CodingKey { case type, itemID, path, kind, currentVersion, from, to, versionID }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let itemID = try container.decode(ItemID.self, forKey: .itemID)
        func version(_ key: CodingKeys = .versionID) throws -> VersionID {
            try container.decode(VersionID.self, forKey: key)
        }
        func path(_ key: CodingKeys) throws -> ItemPath { try container.decode(ItemPath.self, forKey: key) }
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "itemCreated":
            self = .itemCreated(
                itemID: itemID, path: try path(.path), kind: try container.decode(ItemKind.self, forKey: .kind))
        case "itemChanged": self = .itemChanged(itemID: itemID, currentVersion: try version(.currentVersion))
        case "itemMoved": self = .itemMoved(itemID: itemID, from: try path(.from), to: try path(.to))
        case "itemDeleted": self = .itemDeleted(itemID: itemID)
        case "versionAdded": self = .versionAdded(itemID: itemID, versionID: try version())
        case "versionResolved": self = .versionResolved(itemID: itemID, versionID: try version())
        case "versionRemoved": self = .versionRemoved(itemID: itemID, versionID: try version())
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown change \"\(type)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(itemID, forKey: .itemID)
        switch self {
        case .itemCreated(_, let path, let kind):
            try container.encode("itemCreated", forKey: .type)
            try container.encode(path, forKey: .path)
            try container.encode(kind, forKey: .kind)
        case .itemChanged(_, let currentVersion):
            try container.encode("itemChanged", forKey: .type)
            try container.encode(currentVersion, forKey: .currentVersion)
        case .itemMoved(_, let from, let to):
            try container.encode("itemMoved", forKey: .type)
            try container.encode(from, forKey: .from)
            try container.encode(to, forKey: .to)
        case .itemDeleted:
            try container.encode("itemDeleted", forKey: .type)
        case .versionAdded(_, let versionID):
            try container.encode("versionAdded", forKey: .type)
            try container.encode(versionID, forKey: .versionID)
        case .versionResolved(_, let versionID):
            try container.encode("versionResolved", forKey: .type)
            try container.encode(versionID, forKey: .versionID)
        case .versionRemoved(_, let versionID):
            try container.encode("versionRemoved", forKey: .type)
            try container.encode(versionID, forKey: .versionID)
        }
    }
}
