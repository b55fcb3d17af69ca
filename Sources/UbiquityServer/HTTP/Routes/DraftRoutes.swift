import Foundation
import Hummingbird
import UbiquityProtocol

extension RouteEnvironment {
    /// The drafts of versions being uploaded (``DraftAppendRequest``, ``DraftPage``).
    func addDraftRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.post("containers/{container}/items/{item}/drafts/{version}") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let version = try context.parameters.identifier("version", as: VersionID.self)
            let body = try await decode(DraftAppendRequest.self, from: request)
            let largest = Int64(configuration.limits.chunkBytes)
            guard body.from >= 0, body.chunks.count <= DraftPage.pageLimit,
                body.chunks.allSatisfy({ $0.size > 0 && $0.size <= largest }), (body.total ?? 0) >= 0
            else {
                throw ProtocolError(
                    .malformedRequest,
                    "a draft grows from a position of 0 or more by at most \(DraftPage.pageLimit) chunks, each of "
                        + "1 to \(largest) bytes, toward a file of 0 bytes or more")
            }
            guard let detail = try await store.item(id, in: container) else { throw Self.notFound(id, container) }
            guard !detail.item.isDeleted else { throw ProtocolError(.itemDeleted, "item \(id) is deleted") }
            guard detail.item.kind == .file else {
                throw ProtocolError(.kindMismatch, "only a file's versions have drafts; item \(id) is a package")
            }
            guard !detail.versions.contains(where: { $0.id == version }) else {
                throw ProtocolError(.versionExists, "\(version) of item \(id) is committed already")
            }
            // A draft names only chunks the account holds: it never gives a device bytes it could not download.
            var missing: [ChunkHash] = []
            for chunk in Set(body.chunks.map(\.hash)) where !(try await chunks.contains(chunk, of: container.account)) {
                missing.append(chunk)
            }
            guard missing.isEmpty else {
                throw ProtocolError(
                    .chunksMissing, "the account has no chunk \(missing.sorted()[0]) (and \(missing.count - 1) more)")
            }
            let count = try await drafts.append(body, to: version, of: id, in: container)
            // A commit (or a deletion) that came while the checks above awaited ends the draft begun meanwhile.
            if let now = try await store.item(id, in: container),
                now.item.isDeleted || now.versions.contains(where: { $0.id == version })
            {
                try await drafts.end(id, in: container)
                throw ProtocolError(
                    .versionExists, "\(version) of item \(id) is committed already, or the item is gone")
            }
            if count > body.from {
                hub.publishDraft(
                    .draft(container: container.container, item: id, version: version, count: count), to: container)
                cluster?.announce(
                    .draftGrew(
                        account: container.account, container: container.container, item: id, version: version,
                        count: count))
            }
            return try json(DraftPage(count: count, chunks: []))
        }
        router.get("containers/{container}/items/{item}/drafts/{version}") { request, context -> Response in
            let container = try context.container()
            let id = try context.parameters.identifier("item", as: ItemID.self)
            let version = try context.parameters.identifier("version", as: VersionID.self)
            let from = try request.uri.queryParameters["from"].map { text -> Int in
                guard let from = Int(text), from >= 0 else {
                    throw ProtocolError(
                        .malformedRequest, "from is a position of 0 or more, not \"\(text.prefix(40))\"")
                }
                return from
            }
            guard let page = try await drafts.page(of: version, of: id, in: container, from: from ?? 0) else {
                throw ProtocolError(.unknownVersion, "no draft of \(version) of item \(id) (committed, or gone)")
            }
            return try json(page)
        }
    }
}
