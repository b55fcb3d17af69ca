import Foundation
import HTTPTypes
import Hummingbird
import Logging
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
            .cannotRemoveCurrent, .itemDeleted, .chunksMissing:
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
        encoder.outputFormatting = [.withoutEscapingSlashes]
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
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            return try ProtocolError.mapping(error, logger: context.logger).response(from: request, context: context)
        }
    }
}
