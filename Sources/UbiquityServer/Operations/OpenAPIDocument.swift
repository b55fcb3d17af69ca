import Foundation
import UbiquityProtocol

/// The OpenAPI 3.1 document of the whole API, served at `GET /openapi.json`.
///
/// Written by hand from the routes' behaviour; a test checks that every route the service registers is described
/// here and that nothing here is missing from the service.
public enum OpenAPIDocument {
    /// The document as JSON bytes.
    public static let json: [UInt8] = {
        let data = try! JSONSerialization.data(
            withJSONObject: document(), options: [.sortedKeys, .withoutEscapingSlashes])
        return Array(data)
    }()

    /// Every operation, as `METHOD /path/{parameter}`.
    public static var operations: [RouteSignature] {
        Self.table.map { RouteSignature(method: $0.method, path: $0.path) }
    }

    private struct Operation {
        var method: String
        var path: String
        var summary: String
        var authenticated = true
        var request: String? = nil
        var status = 200
        var response: String? = nil
        var query: [(name: String, description: String)] = []
        var errors: [Int] = []
        /// Whether a request must have a body (an empty batch of chunks is a batch).
        var bodyRequired = true
        /// Another success status, with the same answer (a commit of content the item has: 200, not 201).
        var alsoSucceeds: Int? = nil
    }

    private static let items = "/v1/containers/{container}/items"
    private static let table: [Operation] = [
        Operation(
            method: "GET", path: "/health",
            summary: "Whether the node is up and reaches its metadata and chunk stores (503 when it does not)",
            authenticated: false, response: "Health", errors: [503]),
        Operation(
            method: "GET", path: "/metrics", summary: "Figures in Prometheus text format", authenticated: false,
            response: "text"),
        Operation(
            method: "GET", path: "/openapi.json", summary: "This document", authenticated: false, response: "object"),
        Operation(
            method: "POST", path: "/v1/accounts", summary: "Create an account (when open registration is enabled)",
            authenticated: false, request: "RegisterRequest", status: 201, response: "AccountInfo",
            errors: [400, 403, 409]),
        Operation(
            method: "POST", path: "/v1/login", summary: "Sign a device in; returns its bearer token",
            authenticated: false,
            request: "LoginRequest", status: 201, response: "LoginResponse", errors: [400, 401]),
        Operation(
            method: "GET", path: "/v1/account", summary: "The signed-in account and its storage use",
            response: "AccountInfo"),
        Operation(method: "GET", path: "/v1/tokens", summary: "The account's device tokens", response: "TokenList"),
        Operation(
            method: "DELETE", path: "/v1/tokens/{token}", summary: "Revoke a device token", status: 204, errors: [404]),
        Operation(
            method: "GET", path: items, summary: "Every item of the container and the feed position they reflect",
            response: "ItemListResponse", errors: [400, 403]),
        Operation(
            method: "POST", path: items, summary: "Create an item, optionally with its first version",
            request: "CreateItemRequest", status: 201, response: "ItemResponse", errors: [400, 403, 409, 507]),
        Operation(
            method: "POST", path: "/v1/containers/{container}/batch",
            summary: "Create items and commit versions, up to 1,000 in order, each applied or refused on its own",
            request: "ItemBatchRequest", response: "ItemBatchResponse", errors: [400, 403, 413]),
        Operation(
            method: "GET", path: items + "/{item}",
            summary: "An item and its kept versions; with have=, each manifest as a delta against that version "
                + "(manifestDelta in place of manifest) where shorter",
            response: "ItemDetail",
            query: [("have", "a version of the item the device holds")], errors: [400, 404]),
        Operation(
            method: "POST", path: items + "/details",
            summary: "The details of up to 1,000 items in one request, each with its manifests as deltas against "
                + "the version named as held; items the container lacks are left out",
            request: "ItemDetailsRequest", response: "ItemDetailsResponse", errors: [400, 403]),
        Operation(
            method: "PATCH", path: items + "/{item}", summary: "Rename or move an item (no content is uploaded)",
            request: "MoveItemRequest", response: "ItemResponse", errors: [404, 409]),
        Operation(
            method: "DELETE", path: items + "/{item}", summary: "Delete an item, if basedOn is its current version",
            response: "ItemResponse", query: [("basedOn", "the version the device last saw as current")],
            errors: [404, 409]),
        Operation(
            method: "GET", path: items + "/{item}/versions", summary: "The item's kept versions, newest first",
            response: "VersionList", errors: [404]),
        Operation(
            method: "POST", path: items + "/{item}/versions",
            summary: "Commit a new version; a stale base makes a conflict version, identical content changes nothing; "
                + "the manifest may be a manifestDelta against a kept version of the item (then the answer leaves "
                + "out the version when it is the one sent)",
            request: "VersionPayload", status: 201, response: "ItemResponse", errors: [400, 404, 409],
            alsoSucceeds: 200),
        Operation(
            method: "GET", path: items + "/{item}/versions/{version}", summary: "One version",
            response: "VersionRecord",
            errors: [404]),
        Operation(
            method: "DELETE", path: items + "/{item}/versions/{version}",
            summary: "Remove a version that is not current",
            response: "ItemResponse", errors: [404, 409]),
        Operation(
            method: "POST", path: items + "/{item}/versions/{version}/resolve",
            summary: "Mark a conflict version resolved",
            response: "ItemResponse", errors: [404, 409]),
        Operation(
            method: "POST", path: items + "/{item}/current", summary: "Make a chosen version current (replace)",
            request: "ReplaceCurrentRequest", response: "ItemResponse", errors: [404, 409]),
        Operation(
            method: "POST", path: items + "/{item}/drafts/{version}",
            summary: "Grow the draft of a version being uploaded by its next chunks, which the account holds; "
                + "devices subscribed to drafts hear of it",
            request: "DraftAppendRequest", response: "DraftPage", errors: [400, 404, 409, 413]),
        Operation(
            method: "GET", path: items + "/{item}/drafts/{version}",
            summary: "The chunks of a version's draft from a position on (at most 10,000)",
            response: "DraftPage", query: [("from", "the position of the first chunk wanted (default 0)")],
            errors: [400, 404]),
        Operation(
            method: "POST", path: "/v1/containers/{container}/chunks/missing",
            summary: "Which chunks the account lacks; refuses an upload that would exceed the quota",
            request: "MissingChunksRequest", response: "MissingChunksResponse", errors: [400, 413, 507]),
        Operation(
            method: "PUT", path: "/v1/containers/{container}/chunks/{hash}",
            summary: "Upload one chunk (binary body); stored only if its SHA-256 is the hash in the path",
            request: "binary", status: 201, errors: [400, 413, 507]),
        Operation(
            method: "POST", path: "/v1/containers/{container}/chunks",
            summary: "Upload several chunks in one binary body (each: SHA-256, 4-byte big-endian length, bytes); "
                + "stored together, none if one is wrong",
            request: "chunks", response: "ChunkBatchResponse", errors: [400, 413, 507], bodyRequired: false),
        Operation(
            method: "POST", path: "/v1/containers/{container}/chunks/fetch",
            summary: "Download up to 1,000 chunks in one binary answer (each: SHA-256, 4-byte big-endian length, "
                + "bytes), in the order asked; chunks the account lacks are left out",
            request: "ChunkFetchRequest", response: "chunks", errors: [400]),
        Operation(
            method: "GET", path: "/v1/containers/{container}/chunks/{hash}", summary: "Download one chunk",
            response: "binary", errors: [404]),
        Operation(
            method: "GET", path: "/v1/containers/{container}/changes", summary: "A page of the container's change feed",
            response: "ChangePage",
            query: [
                ("since", "a token from an earlier page or list; omit to start at the beginning"),
                ("limit", "the most changes to return (at most the service's page limit)"),
                (
                    "chunkBytes",
                    "carry in `chunks` the bytes of the page's small first versions saved by other devices, up to "
                        + "this many in all (at most 1 MiB)"
                ),
            ],
            errors: [400, 410]),
        Operation(
            method: "GET", path: "/v1/containers/{container}/kv",
            summary: "The key-value store, or its writes since a token (removals included)",
            response: "KeyValueChanges",
            query: [("since", "a key-value token; omit for the whole store")], errors: [410]),
        Operation(
            method: "POST", path: "/v1/containers/{container}/kv",
            summary: "Apply a batch of puts and removes, whole or not at all", request: "KeyValueBatch",
            response: "KeyValueBatchResponse", errors: [400, 507]),
        Operation(
            method: "GET", path: "/v1/push",
            summary: "WebSocket: send {type: subscribe, containers}; receive changed / keyValueChanged / heartbeat "
                + "messages (PushMessage)", status: 101, response: "PushMessage"),
    ]

    /// The schema of a path or query parameter, by its name.
    private static func schema(ofParameter name: String) -> [String: Any] {
        switch name {
        case "container": OpenAPISchemas.container
        case "item", "version", "token", "have", "basedOn": OpenAPISchemas.uuid
        case "hash": OpenAPISchemas.hash
        case "since": ["type": "string", "minLength": 1]
        case "from": ["type": "integer", "minimum": 0, "maximum": Int64.max]
        case "limit": ["type": "integer", "minimum": 1, "maximum": Int64.max]
        case "chunkBytes": ["type": "integer", "minimum": 0, "maximum": Int64.max]
        default: ["type": "string"]
        }
    }

    private static func reference(_ name: String) -> [String: Any] {
        switch name {
        case "object": ["type": "object"]
        case "text": ["type": "string"]
        case "binary", "chunks": ["type": "string", "format": "binary"]
        default: ["$ref": "#/components/schemas/\(name)"]
        }
    }

    private static func content(_ name: String) -> [String: Any] {
        let type =
            switch name {
            case "binary": "application/octet-stream"
            case "chunks": ChunkBatch.contentType
            case "text": "text/plain"
            default: "application/json"
            }
        return [type: ["schema": reference(name)]]
    }

    private static func document() -> [String: Any] {
        var paths: [String: [String: Any]] = [:]
        for operation in table {
            var responses: [String: Any] = [
                "\(operation.status)": ["description": "success"].merging(
                    operation.response.map { ["content": content($0)] } ?? [:]
                ) { first, _ in first }
            ]
            // Every route of the API answers a malformed request (a parameter or body it cannot read) with 400; a
            // container's routes refuse a token not made for that container with 403.
            var refusals = Set(operation.errors + (operation.authenticated ? [401] : []))
            if operation.path.hasPrefix("/v1/") { refusals.insert(400) }
            if operation.path.hasPrefix("/v1/containers/") { refusals.insert(403) }
            for status in refusals.sorted() {
                responses["\(status)"] = ["description": "refused", "content": content("Error")]
            }
            if let also = operation.alsoSucceeds {
                responses["\(also)"] = ["description": "success", "content": content(operation.response ?? "object")]
            }
            if operation.path == "/health" {
                // Unavailable is told in the health report's own shape.
                responses["503"] = ["description": "a store is out of reach", "content": content("Health")]
            }
            var parameters: [[String: Any]] = operation.path.split(separator: "/").filter { $0.hasPrefix("{") }.map {
                let name = String($0.dropFirst().dropLast())
                return ["name": name, "in": "path", "required": true, "schema": schema(ofParameter: name)]
            }
            parameters += operation.query.map {
                [
                    "name": $0.name, "in": "query", "required": false, "description": $0.description,
                    "schema": schema(ofParameter: $0.name),
                ]
            }
            var entry: [String: Any] = ["summary": operation.summary, "responses": responses, "parameters": parameters]
            if let request = operation.request {
                // A batch of chunks is read whatever its declared type, so plain binary is listed beside its own.
                let media =
                    request == "chunks"
                    ? content(request).merging(content("binary")) { own, _ in own } : content(request)
                entry["requestBody"] = ["required": operation.bodyRequired, "content": media]
            }
            if operation.authenticated { entry["security"] = [["bearer": [String]()]] }
            paths[operation.path, default: [:]][operation.method.lowercased()] = entry
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "Ubiquity sync service", "version": "1",
                "description": "Accounts, items, versions and conflicts, chunks, change feed, push and key-value "
                    + "store. Every error body is an Error with a stable code.",
            ],
            "paths": paths,
            "components": [
                "schemas": OpenAPISchemas.all, "securitySchemes": ["bearer": ["type": "http", "scheme": "bearer"]],
            ],
        ]
    }
}
