import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import UbiquityProtocol

/// A typed client of the sync service's API (`/v1`), as one signed-in device uses it.
///
/// Every call either returns the decoded answer or throws: a ``ProtocolError`` when the service refused the request
/// (with the service's stable code), or ``ServiceUnreachableError`` when the service could not be reached — which the
/// engine treats as "offline" and retries later.
///
/// ```swift
/// let client = ServiceClient(baseURL: "http://127.0.0.1:8080", token: login.token)
/// let page = try await client.changes(in: container, since: token, limit: 500)
/// ```
public struct ServiceClient: Sendable {
    /// The service's address, such as `https://sync.example.com`, without a trailing slash.
    public let baseURL: String
    /// The device's bearer token; `nil` before signing in.
    public let token: String?
    /// How long one request may take.
    public var timeout: TimeAmount
    let http: HTTPClient

    /// Creates a client.
    /// - Parameters:
    ///   - baseURL: The service's address.
    ///   - token: The device's bearer token, if signed in.
    ///   - httpClient: The HTTP client to send with (default ``failFastHTTPClient``: an unreachable service fails a
    ///     request at once, and the engine retries on its own schedule).
    ///   - timeout: How long one request may take (default 60 s).
    public init(
        baseURL: String, token: String? = nil, httpClient: HTTPClient = ServiceClient.failFastHTTPClient,
        timeout: TimeAmount = .seconds(60)
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
        self.http = httpClient
        self.timeout = timeout
    }

    /// The process's HTTP client for the service: a connection that cannot be made fails its requests at once
    /// (within 10 s) instead of being retried until their deadlines, so an unreachable service reads as "offline"
    /// quickly; a connection that goes silent for 60 s fails too. It lives as long as the process.
    ///
    /// The engine retries on its own schedule, so the client must not: AsyncHTTPClient's shared client keeps trying
    /// to connect with a backoff that grows with every failure since the last connection made (to a minute), and
    /// keeps that count per address, so after a service has been down a while the first request to it once it is
    /// back (or to another service given the same port) waits out the backoff instead of connecting.
    public static let failFastHTTPClient: HTTPClient = {
        // The request's deadline covers only the answer's head: a body that stops coming (read by `send`, or
        // streamed by `downloadChunk`) would otherwise hold its caller, and the item's lane it holds, forever.
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The same service, signed in with `token`.
    public func signedIn(with token: String) -> ServiceClient {
        ServiceClient(baseURL: baseURL, token: token, httpClient: http, timeout: timeout)
    }

    // MARK: Requests

    /// Sends a request and returns the body of a successful answer (at most `limit` bytes).
    func send(
        _ method: HTTPMethod, _ path: String, body: ByteBuffer? = nil, limit: Int = 64 << 20
    ) async throws -> ByteBuffer {
        try await send(request(method, path, body: body), limit: limit)
    }

    /// Sends `request` and returns the body of a successful answer (at most `limit` bytes). Every request goes
    /// through here or ``execute(_:_:body:)``, so that a service that cannot be reached reads the same whatever the
    /// route: ``ServiceUnreachableError``, which the engine takes for being offline.
    func send(_ request: HTTPClientRequest, limit: Int = 64 << 20) async throws -> ByteBuffer {
        let (status, bytes) = try await ServiceUnreachableError.wrapping(url: baseURL) {
            let response = try await http.execute(request, timeout: timeout)
            return (response.status, try await response.body.collect(upTo: limit))
        }
        try Self.check(status, bytes)
        return bytes
    }

    /// Sends a JSON body and decodes a JSON answer.
    func send<Answer: Decodable>(
        _ method: HTTPMethod, _ path: String, json: (some Encodable)?, as type: Answer.Type
    ) async throws -> Answer {
        let body = try json.map { ByteBuffer(bytes: try WireJSONEncoder().encode($0)) }
        let bytes = try await send(method, path, body: body)
        return try WireJSONDecoder().decode(type, from: Data(bytes.readableBytesView))
    }

    /// Sends a request with no body and decodes a JSON answer.
    func get<Answer: Decodable>(_ path: String, as type: Answer.Type) async throws -> Answer {
        let bytes = try await send(.GET, path)
        return try WireJSONDecoder().decode(type, from: Data(bytes.readableBytesView))
    }

    /// Sends a request and returns the response with its body unread (for streaming: read it through
    /// ``ServiceUnreachableError/wrapping(url:_:)`` too).
    func execute(_ method: HTTPMethod, _ path: String, body: ByteBuffer? = nil) async throws -> HTTPClientResponse {
        let request = request(method, path, body: body)
        return try await ServiceUnreachableError.wrapping(url: baseURL) {
            try await http.execute(request, timeout: timeout)
        }
    }

    /// A request to `path` of the service, signed with the token; `body` is JSON unless `contentType` says otherwise.
    func request(
        _ method: HTTPMethod, _ path: String, body: ByteBuffer? = nil, contentType: String = "application/json"
    ) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(body)
        }
        return request
    }

    /// Throws the service's error for an unsuccessful answer.
    static func check(_ status: HTTPResponseStatus, _ body: ByteBuffer) throws {
        guard !(200..<300).contains(status.code) else { return }
        if let error = try? JSONDecoder().decode(ProtocolError.self, from: Data(body.readableBytesView)) {
            throw error
        }
        throw ProtocolError(.internalError, "the service answered \(status.code) \(status.reasonPhrase)")
    }

    /// The path of a route of `container`.
    static func path(_ container: ContainerID, _ rest: String) -> String {
        "/v1/containers/\(container)/\(rest)"
    }
}
