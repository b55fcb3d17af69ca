import Foundation
import Hummingbird
import UbiquityProtocol

extension RouteEnvironment {
    /// `GET …/changes` and the key-value routes `GET`/`POST …/kv`.
    func addFeedRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.get("containers/{container}/changes") { request, context -> Response in
            let container = try context.container()
            let query = request.uri.queryParameters
            let since = query["since"].map { ChangeToken(String($0)) }
            let pageLimit = configuration.limits.changesPerPage
            var limit = pageLimit
            if let text = query["limit"] {
                guard let value = Int(String(text)), value > 0 else {
                    throw ProtocolError(.malformedRequest, "limit must be a positive whole number")
                }
                limit = min(value, pageLimit)
            }
            return try json(try await store.changes(in: container, since: since, limit: limit))
        }
        router.get("containers/{container}/kv") { request, context -> Response in
            let container = try context.container()
            let since = request.uri.queryParameters["since"].map { ChangeToken(String($0)) }
            return try json(try await store.keyValues(in: container, since: since))
        }
        router.post("containers/{container}/kv") { request, context -> Response in
            let container = try context.container()
            let identity = try context.requireIdentity()
            let batch = try await decode(KeyValueBatch.self, from: request)
            let response = try await store.applyKeyValues(
                batch.writes, from: identity.info.device.id, in: container, limits: configuration.keyValueLimits)
            if !response.changedKeys.isEmpty {
                hub.publish(.keyValueChanged(container: container.container, token: response.token), to: container)
                cluster?.announce(
                    .keyValueChanged(account: container.account, container: container.container, token: response.token))
            }
            return try json(response)
        }
    }
}
