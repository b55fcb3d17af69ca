/// The component schemas of ``OpenAPIDocument``: the wire types of `UbiquityProtocol`.
enum OpenAPISchemas {
    /// An object's schema. A property that is not required may also be `null`, which the service reads as absent
    /// (Swift's optionals).
    private static func object(_ properties: [String: Any], required: [String], description: String? = nil)
        -> [String: Any]
    {
        var properties = properties
        for (name, property) in properties where !required.contains(name) {
            properties[name] = ["anyOf": [property, ["type": "null"]]]
        }
        var schema: [String: Any] = ["type": "object", "properties": properties, "required": required]
        if let description { schema["description"] = description }
        return schema
    }

    /// A property-list value of one type: `{"type": type, "value": value}`.
    private static func tagged(_ type: String, _ value: [String: Any]) -> [String: Any] {
        object(["type": ["const": type], "value": value], required: ["type", "value"])
    }

    private static func ref(_ name: String) -> [String: Any] { ["$ref": "#/components/schemas/\(name)"] }
    private static func array(_ items: [String: Any]) -> [String: Any] { ["type": "array", "items": items] }
    private static var string: [String: Any] { ["type": "string"] }
    static var uuid: [String: Any] { ["type": "string", "format": "uuid", "pattern": uuidPattern] }
    static let uuidPattern = "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
    private static var integer: [String: Any] { ["type": "integer", "format": "int64"] }
    private static var boolean: [String: Any] { ["type": "boolean"] }
    private static var timestamp: [String: Any] {
        [
            "type": "string", "pattern": timestampPattern,
            "description": "RFC 3339 UTC, years 0001 to 9999, up to six fractional digits: 2026-11-22T05:00:17.123456Z",
        ]
    }
    /// A wire timestamp exactly as the service reads one: a real day of the proleptic Gregorian calendar (leap days
    /// in leap years only), a time of day, up to six fractional digits, `Z`.
    static let timestampPattern: String = {
        let year = "(?!0000)[0-9]{4}"
        let leapYear = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
        let monthAndDay =
            "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
        let time = "T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]{1,6})?Z"
        return "^(\(year)-\(monthAndDay)|\(leapYear)-02-29)\(time)$"
    }()
    static var hash: [String: Any] { ["type": "string", "pattern": "^[0-9a-f]{64}$"] }
    private static var path: [String: Any] {
        [
            "type": "string", "minLength": 1, "maxLength": 1024,
            "description": "relative, NFC; no empty, '.' or '..' components, no control characters, no .ubiquity",
        ]
    }
    /// An account's name: 1 to 64 characters, none a space or a control character.
    private static var accountName: [String: Any] {
        ["type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[^\\u0000-\\u0020]+$"]
    }
    /// No control character, and at least one that is not a space (Unicode's Zs, which the service trims).
    private static let deviceNamePattern =
        "^[^\\u0000-\\u001f]*[^\\u0000-\\u0020\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000][^\\u0000-\\u001f]*$"
    /// A password: 8 to 72 bytes of UTF-8 (bcrypt's limit), no NUL.
    private static var password: [String: Any] {
        [
            "type": "string", "minLength": 8, "maxLength": 72, "pattern": "^[^\\u0000]+$",
            "description": "8 to 72 bytes of UTF-8 (not characters), without NUL",
        ]
    }
    static var container: [String: Any] {
        [
            "type": "string", "minLength": 3, "maxLength": 255, "pattern": "^[A-Za-z0-9_-]+([.][A-Za-z0-9_-]+)+$",
            "description": "TEAM.com.example.app: letters, digits, '-' and '_' in two or more parts between dots",
        ]
    }
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
            "RegisterRequest": object(
                ["name": accountName, "password": password], required: ["name", "password"]),
            "LoginRequest": object(
                [
                    "name": accountName, "password": password,
                    "deviceName": [
                        "type": "string", "minLength": 1, "maxLength": 100, "pattern": deviceNamePattern,
                        "description": "1 to 100 characters once trimmed of spaces, no control characters",
                    ],
                    "deviceID": uuid, "containers": array(container),
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
            "ChunkReference": object(
                [
                    "hash": hash,
                    "size": [
                        "type": "integer", "minimum": 0, "maximum": 16 << 20,
                        "description": "bytes; at most the service's chunk limit (16 MiB unless configured otherwise)",
                    ],
                ], required: ["hash", "size"]),
            "PackageEntry": object(
                ["path": path, "kind": kind, "chunks": array(ref("ChunkReference"))],
                required: ["path", "kind", "chunks"]
            ),
            "ContentManifest": [
                "description": "a file's chunks in order, or a package's members",
                "oneOf": [
                    object(
                        ["type": ["const": "file"], "chunks": array(ref("ChunkReference"))],
                        required: ["type", "chunks"]),
                    object(
                        ["type": ["const": "package"], "entries": array(ref("PackageEntry"))],
                        required: ["type", "entries"]),
                ],
            ] as [String: Any],
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
                        "items": object(
                            ["id": uuid, "have": uuid.merging(["type": ["string", "null"]]) { _, new in new }],
                            required: ["id"]),
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
                    ],
                    "chunks": [
                        "type": "array", "items": ref("InlineChunk"), "maxItems": 10_000,
                        "description": "chunks the operations' versions name, stored before the operations apply "
                            + "(at most 4 MiB of them a request); an operation naming one whose bytes are not its "
                            + "hash's is refused alone",
                    ],
                ], required: ["operations"]),
            "InlineChunk": object(
                [
                    "hash": hash,
                    "data": [
                        "type": "string", "contentEncoding": "base64",
                        "pattern": "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
                        "description": "the chunk's bytes, standard base64 with padding",
                    ],
                ], required: ["hash", "data"]),
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
                [
                    "id": uuid, "path": path, "kind": kind,
                    "version": ["oneOf": [ref("VersionRecord"), ["type": "null"]]],
                ],
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
                [
                    "from": ["type": "integer", "minimum": 0],
                    "chunks": [
                        "type": "array", "maxItems": 10_000,
                        "items": object(
                            [
                                "hash": hash,
                                "size": ["type": "integer", "minimum": 1, "maximum": 16 << 20],
                            ], required: ["hash", "size"]),
                    ],
                    "total": ["type": "integer", "minimum": 0],
                ],
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
                [
                    "changes": array(ref("Change")), "nextToken": string, "hasMore": boolean,
                    "versions": array(ref("VersionRecord")), "chunks": array(ref("InlineChunk")),
                ],
                required: ["changes", "nextToken", "hasMore"]),
            "PropertyListValue": [
                "description": "a property-list value tagged by type",
                "oneOf": [
                    tagged("string", string),
                    tagged("integer", ["type": "integer", "minimum": Int64.min, "maximum": Int64.max]),
                    tagged(
                        "double",
                        ["oneOf": [["type": "number"], ["type": "string", "enum": ["NaN", "Infinity", "-Infinity"]]]]),
                    tagged("bool", boolean),
                    tagged("date", timestamp),
                    tagged(
                        "data",
                        [
                            "type": "string", "contentEncoding": "base64",
                            "pattern": "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
                        ]),
                    tagged("array", array(ref("PropertyListValue"))),
                    tagged(
                        "dictionary", ["type": "object", "additionalProperties": ref("PropertyListValue")]),
                ],
            ] as [String: Any],
            "KeyValueWrite": object(
                [
                    "key": [
                        "type": "string", "minLength": 1, "maxLength": 64, "description": "1 to 64 bytes of UTF-8",
                    ],
                    "value": ref("PropertyListValue"), "timestamp": timestamp,
                ],
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
