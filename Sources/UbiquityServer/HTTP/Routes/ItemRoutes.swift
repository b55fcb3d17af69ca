import Hummingbird
import UbiquityProtocol

extension RouteEnvironment {
    /// The item and version routes under `/v1/containers/{container}/items`.
    func addItemRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.get("containers/{container}/items") { _, context -> Response in
            try json(try await store.items(in: try context.container()))
        }
        router.post("containers/{container}/items") { request, context -> Response in
            let container = try context.container()
            var body = try await decode(CreateItemRequest.self, from: request)
            body.version?.savingDevice = try context.requireIdentity().info.device
            let response = try await store.createItem(body, in: container)
            announce(response, in: container)
            return try json(response, status: .created)
        }
        router.post("containers/{container}/batch") { request, context -> Response in
            let container = try context.container()
            let body = try await decode(ItemBatchRequest.self, from: request)
            try body.validate()
            // Every version is saved by the device asking, whatever the body says, as on the single-item routes.
            let device = try context.requireIdentity().info.device
            let operations = body.operations.map { $0.saved(by: device) }
            let results =
                body.chunks.isEmpty
                ? try await store.applyItemBatch(operations, in: container)
                : try await applyItemBatch(operations, bringing: body.chunks, in: container)
            let applied = results.compactMap { try? $0.get() }
            for response in applied where response.version != nil || response.item.isDeleted {
                drafts.committed(response.item.id, in: container)
            }
            if let last = applied.last { announce(last, in: container, count: applied.count) }
            return try json(
                ItemBatchResponse(
                    results: results.map { result in
                        switch result {
                        case .success(let response): .applied(response)
                        case .failure(let error): .refused(error)
                        }
                    },
                    token: applied.last?.token))
        }
        router.post("containers/{container}/items/details") { request, context -> Response in
            let container = try context.container()
            let body = try await decode(ItemDetailsRequest.self, from: request)
            try body.validate()
            var found: [ItemDetailPayload] = []
            var answered = Set<ItemID>()
            for entry in body.items where answered.insert(entry.id).inserted {
                guard let detail = try await store.item(entry.id, in: container) else { continue }
                let have = entry.have.flatMap { have in detail.versions.first { $0.id == have } }
                found.append(ItemDetailPayload(detail, have: have))
            }
            return try json(ItemDetailsResponse(items: found))
        }
        router.get("containers/{container}/items/{item}") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let have = try request.uri.queryParameters["have"].map { try VersionID(String($0)) }
            guard let detail = try await store.item(id, in: container) else { throw Self.notFound(id, container) }
            // With `have` (a version the device holds), each manifest travels as a delta against it where shorter.
            guard let have else { return try json(detail) }
            return try json(ItemDetailPayload(detail, have: detail.versions.first { $0.id == have }))
        }
        router.patch("containers/{container}/items/{item}") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let body = try await decode(MoveItemRequest.self, from: request)
            let response = try await store.moveItem(id, to: body.path, in: container)
            announce(response, in: container)
            return try json(response)
        }
        router.delete("containers/{container}/items/{item}") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let base = try request.uri.queryParameters["basedOn"].map { try VersionID(String($0)) }
            let response = try await store.deleteItem(id, basedOn: base, in: container)
            announce(response, in: container)
            return try json(response)
        }
        router.get("containers/{container}/items/{item}/versions") { _, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            guard let detail = try await store.item(id, in: container) else { throw Self.notFound(id, container) }
            return try json(detail.versions)
        }
        router.post("containers/{container}/items/{item}/versions") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            var version = try await decode(VersionPayload.self, from: request)
            guard version.itemID == id else {
                throw ProtocolError(.invalidRecord, "the version names item \(version.itemID), not \(id)")
            }
            version.savingDevice = try context.requireIdentity().info.device
            let response = try await store.commit(version, in: container)
            announce(response, in: container)
            return try json(response, status: response.outcome == .identical ? .ok : .created)
        }
        router.get("containers/{container}/items/{item}/versions/{version}") { _, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let versionID = try context.parameters.identifier("version", as: VersionID.self)
            guard let detail = try await store.item(id, in: container) else { throw Self.notFound(id, container) }
            guard let version = detail.versions.first(where: { $0.id == versionID }) else {
                throw ProtocolError(.unknownVersion, "\(versionID) is not a version of item \(id)")
            }
            return try json(version)
        }
        router.delete("containers/{container}/items/{item}/versions/{version}") { _, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let versionID = try context.parameters.identifier("version", as: VersionID.self)
            let response = try await store.removeVersion(versionID, of: id, in: container)
            announce(response, in: container)
            return try json(response)
        }
        router.post("containers/{container}/items/{item}/versions/{version}/resolve") { _, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let versionID = try context.parameters.identifier("version", as: VersionID.self)
            let response = try await store.markResolved(versionID, of: id, in: container)
            announce(response, in: container)
            return try json(response)
        }
        router.post("containers/{container}/items/{item}/current") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let body = try await decode(ReplaceCurrentRequest.self, from: request)
            let response = try await store.replaceCurrent(with: body.versionID, of: id, in: container)
            announce(response, in: container)
            return try json(response)
        }
    }

    static func notFound(_ id: ItemID, _ container: ContainerKey) -> ProtocolError {
        ProtocolError(.itemNotFound, "no item \(id) in container \(container.container)")
    }
}
