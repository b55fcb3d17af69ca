/// The component schemas of ``OpenAPIDocument``: the wire types of `UbiquityProtocol`.
enum OpenAPISchemas {
    private static func object(_ properties: [String: Any], required: [String], description: String? = nil)
        -> [String: Any]
    {
        var schema: [String: Any] = ["type": "object", "properties": properties, "required": required]
        if let description { schema["description"] = description }
        return schema
    }

    private static func ref(_ name: String) -> [String: Any] { ["$ref": "#/components/schemas/\(name)"] }
    private static func array(_ items: [String: Any]) -> [String: Any] { ["type": "array", "items": items] }
    private static var string: [String: Any] { ["type": "string"] }
    private static var uuid: [String: Any] { ["type": "string", "format": "uuid"] }
    private static var integer: [String: Any] { ["type": "integer", "format": "int64"] }
    private static var boolean: [String: Any] { ["type": "boolean"] }
    private static var timestamp: [String: Any] {
        [
            "type": "string", "description": "RFC 3339 UTC with six fractional digits: 2026-11-22T05:00:17.123456Z",
        ]
    }
    private static var hash: [String: Any] { ["type": "string", "pattern": "^[0-9a-f]{64}$"] }
    private static var path: [String: Any] {
        [
            "type": "string", "maxLength": 1024,
            "description": "relative, NFC; no empty, '.' or '..' components, no control characters, no .ubiquity",
        ]
    }
    private static var container: [String: Any] { ["type": "string", "description": "TEAM.com.example.app"] }
    private static var kind: [String: Any] { ["type": "string", "enum": ["file", "package", "directory"]] }

    static var all: [String: Any] {
        [
            "Error": object(
                [
                    "code": string, "message": string, "currentVersion": uuid,
                    "missingChunks": array(hash),
                ], required: ["code", "message"]),
            "Health": object(
                ["status": ["type": "string", "enum": ["ok", "unavailable"]], "database": string, "chunks": string],
                required: ["status", "database", "chunks"]),
            "RegisterRequest": object(["name": string, "password": string], required: ["name", "password"]),
            "LoginRequest": object(
                [
                    "name": string, "password": string, "deviceName": string, "deviceID": uuid,
                    "containers": array(container),
                ], required: ["name", "password", "deviceName"]),
            "LoginResponse": object(["token": string, "info": ref("TokenInfo")], required: ["token", "info"]),
            "TokenInfo": object(
                [
                    "id": uuid, "accountID": uuid, "device": ref("SavingDevice"), "containers": array(container),
                    "createdAt": ["type": "number"], "revokedAt": ["type": "number"],
                ], required: ["id", "accountID", "device", "createdAt"]),
            "TokenList": array(ref("TokenInfo")),
            "AccountInfo": object(
                ["id": uuid, "name": string, "quotaBytes": integer, "usedBytes": integer],
                required: ["id", "name", "usedBytes"]),
            "SavingDevice": object(["id": uuid, "name": string], required: ["id", "name"]),
            "ChunkReference": object(["hash": hash, "size": integer], required: ["hash", "size"]),
            "PackageEntry": object(
                ["path": path, "kind": kind, "chunks": array(ref("ChunkReference"))],
                required: ["path", "kind", "chunks"]
            ),
            "ContentManifest": object(
                [
                    "type": ["type": "string", "enum": ["file", "package"]], "chunks": array(ref("ChunkReference")),
                    "entries": array(ref("PackageEntry")),
                ], required: ["type"], description: "a file's chunks in order, or a package's members"),
            "VersionRecord": object(
                [
                    "id": uuid, "itemID": uuid, "manifest": ref("ContentManifest"), "size": integer,
                    "contentHash": hash, "modificationDate": timestamp, "savingDevice": ref("SavingDevice"),
                    "basedOn": uuid, "isConflict": boolean, "isResolved": boolean,
                ],
                required: [
                    "id", "itemID", "manifest", "size", "contentHash", "modificationDate", "savingDevice",
                    "isConflict", "isResolved",
                ]),
            "VersionPayload": [
                "description":
                    "A VersionRecord whose manifest may instead be a manifestDelta against a version the receiver "
                    + "holds",
                "oneOf": [
                    ref("VersionRecord"),
                    object(
                        [
                            "id": uuid, "itemID": uuid, "manifestDelta": ref("ManifestDelta"), "size": integer,
                            "contentHash": hash, "modificationDate": timestamp, "savingDevice": ref("SavingDevice"),
                            "basedOn": uuid, "isConflict": boolean, "isResolved": boolean,
                        ],
                        required: [
                            "id", "itemID", "manifestDelta", "size", "contentHash", "modificationDate",
                            "savingDevice", "isConflict", "isResolved",
                        ]),
                ],
            ],
            "ManifestDelta": object(
                [
                    "base": uuid,
                    "ops": array([
                        "oneOf": [
                            object(
                                ["copy": object(["from": integer, "count": integer], required: ["from", "count"])],
                                required: ["copy"]),
                            object(["add": array(ref("ChunkReference"))], required: ["add"]),
                        ]
                    ]),
                ], required: ["base", "ops"]),
            "ItemDetailsRequest": object(
                [
                    "items": [
                        "type": "array", "minItems": 1, "maxItems": 1_000,
                        "items": object(["id": uuid, "have": uuid], required: ["id"]),
                    ]
                ], required: ["items"]),
            "ItemDetailsResponse": object(
                [
                    "items": array(
                        object(
                            ["item": ref("ItemRecord"), "versions": array(ref("VersionPayload"))],
                            required: ["item", "versions"]))
                ], required: ["items"]),
            "VersionList": array(ref("VersionRecord")),
            "ItemRecord": object(
                ["id": uuid, "path": path, "kind": kind, "currentVersion": uuid, "isDeleted": boolean],
                required: ["id", "path", "kind", "isDeleted"]),
            "ItemBatchRequest": object(
                [
                    "operations": [
                        "type": "array", "minItems": 1, "maxItems": 1_000,
                        "items": [
                            "oneOf": [
                                object(["create": ref("CreateItemRequest")], required: ["create"]),
                                object(["commit": ref("VersionPayload")], required: ["commit"]),
                            ]
                        ],
                    ]
                ], required: ["operations"]),
            "ItemBatchResponse": object(
                [
                    "results": array([
                        "oneOf": [
                            object(["applied": ref("ItemResponse")], required: ["applied"]),
                            object(["refused": ref("Error")], required: ["refused"]),
                        ]
                    ]),
                    "token": string,
                ], required: ["results"]),
            "CreateItemRequest": object(
                ["id": uuid, "path": path, "kind": kind, "version": ref("VersionRecord")],
                required: ["id", "path", "kind"]),
            "MoveItemRequest": object(["path": path], required: ["path"]),
            "ReplaceCurrentRequest": object(["versionID": uuid], required: ["versionID"]),
            "ItemResponse": object(
                [
                    "item": ref("ItemRecord"),
                    "outcome": ["type": "string", "enum": ["current", "conflict", "identical"]],
                    "version": ref("VersionRecord"), "token": string,
                ], required: ["item", "token"]),
            "ItemListResponse": object(
                ["items": array(ref("ItemRecord")), "token": string], required: ["items", "token"]),
            "ItemDetail": object(
                ["item": ref("ItemRecord"), "versions": array(ref("VersionPayload"))], required: ["item", "versions"]),
            "MissingChunksRequest": object(["chunks": array(ref("ChunkReference"))], required: ["chunks"]),
            "DraftAppendRequest": object(
                ["from": integer, "chunks": array(ref("ChunkReference")), "total": integer],
                required: ["from", "chunks"]),
            "DraftPage": object(
                ["count": integer, "chunks": array(ref("ChunkReference")), "total": integer],
                required: ["count", "chunks"]),
            "MissingChunksResponse": object(["missing": array(hash)], required: ["missing"]),
            "ChunkBatchResponse": object(["received": integer], required: ["received"]),
            "ChunkFetchRequest": object(
                ["hashes": ["type": "array", "minItems": 1, "maxItems": 1_000, "items": hash]],
                required: ["hashes"]),
            "Change": object(
                [
                    "type": [
                        "type": "string",
                        "enum": [
                            "itemCreated", "itemChanged", "itemMoved", "itemDeleted", "versionAdded", "versionResolved",
                            "versionRemoved",
                        ],
                    ],
                    "itemID": uuid, "path": path, "kind": kind, "currentVersion": uuid, "from": path, "to": path,
                    "versionID": uuid,
                ], required: ["type", "itemID"]),
            "ChangePage": object(
                ["changes": array(ref("Change")), "nextToken": string, "hasMore": boolean],
                required: ["changes", "nextToken", "hasMore"]),
            "PropertyListValue": object(
                [
                    "type": [
                        "type": "string",
                        "enum": ["string", "integer", "double", "bool", "date", "data", "array", "dictionary"],
                    ],
                    "value": [:] as [String: Any],
                ], required: ["type", "value"], description: "a property-list value tagged by type"),
            "KeyValueWrite": object(
                ["key": string, "value": ref("PropertyListValue"), "timestamp": timestamp],
                required: ["key", "timestamp"]),
            "KeyValueBatch": object(["writes": array(ref("KeyValueWrite"))], required: ["writes"]),
            "KeyValueEntry": object(
                ["key": string, "value": ref("PropertyListValue"), "timestamp": timestamp, "device": uuid],
                required: ["key", "timestamp", "device"]),
            "KeyValueChanges": object(
                ["entries": array(ref("KeyValueEntry")), "token": string], required: ["entries", "token"]),
            "KeyValueBatchResponse": object(
                ["changedKeys": array(string), "token": string], required: ["changedKeys", "token"]),
            "PushMessage": object(
                [
                    "type": [
                        "type": "string",
                        "enum": [
                            "subscribe", "subscribed", "changed", "keyValueChanged", "draft", "heartbeat", "error",
                        ],
                    ],
                    "containers": array(container), "container": container, "token": string, "error": ref("Error"),
                    "drafts": boolean, "item": uuid, "version": uuid, "count": integer,
                ], required: ["type"]),
        ]
    }
}
