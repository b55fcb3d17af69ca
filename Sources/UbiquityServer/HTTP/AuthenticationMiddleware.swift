import Hummingbird
import UbiquityProtocol

/// Checks the `Authorization: Bearer <token>` header of every request it guards: a missing, unknown or revoked
/// token is refused with ``ProtocolError/Code/unauthorized`` (the same answer for each, so nothing is learnt
/// about which tokens exist).
struct AuthenticationMiddleware<Context: AuthenticatedRequestContext>: RouterMiddleware {
    let store: any MetadataStore
    let cache: TokenCache

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var context = context
        context.identity = try await authenticate(request)
        return try await next(request, context)
    }

    func authenticate(_ request: Request) async throws -> DeviceTokenRecord {
        let refusal = ProtocolError(.unauthorized, "a valid bearer token is needed (sign in again with ubiquity login)")
        guard let header = request.headers[.authorization], header.count < 512 else { throw refusal }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw refusal }
        let hash = Credentials.secretHash(parts[1].trimmingCharacters(in: .whitespaces))
        if let token = cache.token(secretHash: hash) { return token }
        guard let token = try await store.token(secretHash: hash), token.info.revokedAt == nil else { throw refusal }
        cache.insert(token)
        return token
    }
}
