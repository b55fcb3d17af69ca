import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization
import UbiquityProtocol

extension ProtocolError.Code {
    /// The HTTP status every response with this error carries: the one place codes meet statuses.
    var httpStatus: HTTPResponse.Status {
        switch self {
        case .unauthorized, .invalidCredentials: .unauthorized
        case .registrationClosed, .containerNotPermitted: .forbidden
        case .itemNotFound, .unknownVersion, .chunkNotFound, .tokenNotFound, .routeNotFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .accountExists, .itemExists, .versionExists, .pathCollision, .staleDelete, .notAConflict,
            .cannotRemoveCurrent, .itemDeleted, .chunksMissing, .draftOutOfStep:
            .conflict
        case .changeTokenExpired: .gone
        case .bodyTooLarge: .contentTooLarge
        case .quotaExceeded, .keyValueTooManyKeys, .keyValueStoreTooLarge:
            .init(code: 507, reasonPhrase: "Insufficient Storage")
        case .internalError: .internalServerError
        default: .badRequest
        }
    }
}

extension ProtocolError: HTTPResponseError {
    public var status: HTTPResponse.Status { code.httpStatus }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = try encoder.encode(self)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The protocol error for any error a route throws: protocol errors as they are, the framework's and the
    /// decoder's as the matching code, and anything else as ``Code/internalError`` (logged, never shown).
    static func mapping(_ error: any Error, logger: Logger) -> ProtocolError {
        switch error {
        case let error as ProtocolError:
            return error
        case let error as DecodingError:
            return ProtocolError(.malformedRequest, "the body is not what this route takes: \(error.summary)")
        case let error as HTTPError:
            switch error.status {
            case .notFound: return ProtocolError(.routeNotFound, "no route has this path")
            case .methodNotAllowed: return ProtocolError(.methodNotAllowed, "the route does not take this method")
            case .contentTooLarge: return ProtocolError(.bodyTooLarge, "the body is larger than this route accepts")
            case let status where status.kind == .clientError:
                return ProtocolError(.malformedRequest, error.body ?? "the request is malformed")
            default: break
            }
        default: break
        }
        logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
        return ProtocolError(.internalError, "the service failed; try again")
    }
}

extension DecodingError {
    /// What went wrong and where, in one line.
    var summary: String {
        func path(_ context: Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "" : " at \(path)"
        }
        switch self {
        case .typeMismatch(let type, let context): return "expected \(type)\(path(context))"
        case .valueNotFound(let type, let context): return "missing \(type) value\(path(context))"
        case .keyNotFound(let key, let context): return "missing field \"\(key.stringValue)\"\(path(context))"
        case .dataCorrupted(let context): return "\(context.debugDescription)\(path(context))"
        @unknown default: return "undecodable"
        }
    }
}

/// Answers every failure with a ``ProtocolError`` body and its status; the one place errors become responses.
///
/// A path that a route serves with other methods gets ``ProtocolError/Code/methodNotAllowed`` (and an `Allow`
/// header) rather than ``ProtocolError/Code/routeNotFound``.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let catalog: RouteCatalog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            var failure = ProtocolError.mapping(error, logger: context.logger)
            var allowed: [String] = []
            if failure.code == .routeNotFound {
                allowed = catalog.methods(serving: request.uri.path)
                if allowed.contains(request.method.rawValue) {
                    // Only the push route is served for this method and path: it was asked for without an upgrade.
                    allowed = []
                    failure = ProtocolError(
                        .malformedRequest, "\(request.uri.path) is a WebSocket; connect with Upgrade: websocket")
                } else if !allowed.isEmpty {
                    failure = ProtocolError(
                        .methodNotAllowed,
                        "\(request.method) is not served here; use \(allowed.joined(separator: ", "))")
                }
            }
            var response = try failure.response(from: request, context: context)
            if !allowed.isEmpty { response.headers[.allow] = allowed.joined(separator: ", ") }
            return response
        }
    }
}

/// The routes a service registered, to tell a wrong method from a wrong path.
final class RouteCatalog: Sendable {
    private let routes = Mutex<[RouteSignature]>([])

    /// Records the routes once they are all registered.
    func set(_ routes: [RouteSignature]) { self.routes.withLock { $0 = routes } }

    /// The methods of the routes whose template matches `path` (`{parameter}` matches any one segment), of the
    /// templates that match it most exactly, as the router picks them: `chunks/fetch` is its own resource, not
    /// `chunks/{hash}` too.
    func methods(serving path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let matching = routes.withLock { routes in
            routes.compactMap { route -> (method: String, literals: Int)? in
                let template = route.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
                guard template.count == segments.count,
                    zip(template, segments).allSatisfy({ $0.hasPrefix("{") ? !$1.isEmpty : $0 == $1 })
                else { return nil }
                return (route.method, template.filter { !$0.hasPrefix("{") }.count)
            }
        }
        let exact = matching.map(\.literals).max()
        return Set(matching.filter { $0.literals == exact }.map(\.method)).sorted()
    }
}
