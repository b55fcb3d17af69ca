import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A small client of the S3 API, enough for a chunk store: objects put, read, checked and deleted, and listed by
/// prefix; each request signed with ``SignatureV4``, path-style (`http://host:port/bucket/key`), so it works with
/// any S3-compatible server (OpenStack Swift's s3api, Ceph's radosgw, MinIO) as with AWS.
public struct S3Client: Sendable {
    /// Where the bucket is and how to sign for it.
    public struct Configuration: Sendable, Equatable {
        /// The server's address, such as `http://127.0.0.1:8080` or `https://s3.eu-west-1.amazonaws.com`.
        public var endpoint: String
        public var bucket: String
        public var region: String
        public var credentials: SignatureV4.Credentials
        /// What the keys of this deployment start with (empty, or ending in `/`), so that several can share a
        /// bucket.
        public var prefix: String

        public init(
            endpoint: String, bucket: String, region: String = "us-east-1", credentials: SignatureV4.Credentials,
            prefix: String = ""
        ) {
            self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
            self.bucket = bucket
            self.region = region
            self.credentials = credentials
            self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
        }

        /// Reads `s3://BUCKET?endpoint=URL&region=REGION&prefix=PREFIX` (region and prefix optional); the keys come from the URL's user and password when
        /// it has them (percent-encoded), else from `environment`'s `UBIQUITY_S3_ACCESS_KEY` and
        /// `UBIQUITY_S3_SECRET_KEY` (or `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`), so secrets need not be on
        /// a command line.
        /// - Throws: ``S3Error`` naming what is wrong with the address.
        public init(url text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
            guard let url = URLComponents(string: text), url.scheme == "s3", let bucket = url.host, !bucket.isEmpty
            else {
                throw S3Error(status: 0, code: "InvalidAddress", message: "\(text) is not s3://BUCKET?endpoint=URL")
            }
            let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }) { _, later in later }
            guard let endpoint = query["endpoint"], endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")
            else {
                throw S3Error(
                    status: 0, code: "InvalidAddress", message: "\(text) names no endpoint=http(s)://HOST:PORT")
            }
            let access =
                url.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? environment["UBIQUITY_S3_ACCESS_KEY"]
                ?? environment["AWS_ACCESS_KEY_ID"]
            let secret =
                url.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
                ?? environment["UBIQUITY_S3_SECRET_KEY"] ?? environment["AWS_SECRET_ACCESS_KEY"]
            guard let access, let secret, !access.isEmpty, !secret.isEmpty else {
                throw S3Error(
                    status: 0, code: "MissingCredentials",
                    message: "no keys for \(bucket): set UBIQUITY_S3_ACCESS_KEY and UBIQUITY_S3_SECRET_KEY")
            }
            self.init(
                endpoint: endpoint, bucket: bucket, region: query["region"] ?? "us-east-1",
                credentials: .init(accessKey: access, secretKey: secret), prefix: query["prefix"] ?? "")
        }
    }

    public let configuration: Configuration
    let signer: SignatureV4
    let http: HTTPClient
    /// How long one request may take.
    public var timeout: TimeAmount = .seconds(60)
    /// The time requests are signed at (injected in tests).
    let clock: @Sendable () -> Date

    /// The process's HTTP client for object storage: a connection that cannot be made fails its request within
    /// 10 s instead of being tried again until the request's deadline (so `/health` and the requests waiting on a
    /// store that is down hear of it); a server that stops answering fails its request after 60 s.
    public static let defaultHTTPClient: HTTPClient = {
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public init(
        _ configuration: Configuration, httpClient: HTTPClient = S3Client.defaultHTTPClient,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.signer = SignatureV4(credentials: configuration.credentials, region: configuration.region, service: "s3")
        self.http = httpClient
        self.clock = clock
    }

    // MARK: Objects

    /// Stores `bytes` at `key`, whole or not at all (S3 makes an object visible only once all of it arrived).
    /// `sha256` is the bytes' SHA-256 in hex: the server checks the bytes against it and refuses them if they differ.
    public func put(_ key: String, bytes: ByteBuffer, sha256: String) async throws {
        _ = try await send(.PUT, key: key, body: bytes, payloadHash: sha256, expecting: [200])
    }

    /// The object at `key`, or `nil` when there is none.
    public func get(_ key: String) async throws -> ByteBuffer? {
        let (status, body) = try await send(.GET, key: key, expecting: [200, 404])
        return status == 404 ? nil : body
    }

    /// The size of the object at `key`, or `nil` when there is none.
    public func size(of key: String) async throws -> Int64? {
        let (status, _, headers) = try await exchange(.HEAD, key: key, query: [], body: nil, payloadHash: nil)
        switch status {
        case 200: return headers.first(name: "content-length").flatMap { Int64($0) } ?? 0
        case 404: return nil
        default: throw S3Error(status: status, code: "HTTP\(status)", message: "HEAD \(key) answered \(status)")
        }
    }

    /// Deletes the object at `key` (nothing if there is none).
    public func delete(_ key: String) async throws {
        _ = try await send(.DELETE, key: key, expecting: [200, 204, 404])
    }

    /// One page of the keys starting with `prefix`, in order, and the token of the next page if there is one.
    public func list(prefix: String, after continuation: String? = nil, limit: Int = 1_000) async throws
        -> (keys: [String], next: String?)
    {
        var query = [("list-type", "2"), ("prefix", prefix), ("max-keys", String(limit))]
        if let continuation { query.append(("continuation-token", continuation)) }
        let (_, body) = try await send(.GET, key: nil, query: query, expecting: [200])
        let listing = S3XML(String(buffer: body))
        let truncated = listing.values(of: "IsTruncated").first == "true"
        return (listing.values(of: "Key"), truncated ? listing.values(of: "NextContinuationToken").first : nil)
    }

    /// Creates the bucket; nothing when this account has it already.
    public func createBucket() async throws {
        let (status, body, _) = try await exchange(.PUT, key: nil, query: [], body: nil, payloadHash: nil)
        guard (200..<300).contains(status) else {
            let error = S3Error(status: status, body: body)
            if error.code == "BucketAlreadyOwnedByYou" { return }
            throw error
        }
    }

    // MARK: Requests

    private func send(
        _ method: HTTPMethod, key: String?, query: [(String, String)] = [], body: ByteBuffer? = nil,
        payloadHash: String? = nil, expecting statuses: Set<Int>
    ) async throws -> (Int, ByteBuffer) {
        let (status, body, _) = try await exchange(method, key: key, query: query, body: body, payloadHash: payloadHash)
        guard statuses.contains(status) else { throw S3Error(status: status, body: body) }
        return (status, body)
    }

    /// How many times a request the server failed (500, 503) is sent in all; each of this client's requests can
    /// be sent again (an object's key is its content's hash, a bucket is made once).
    static let attempts = 4

    /// Sends a request, again after a short wait when the server failed it (S3 servers answer 500 and 503 now and
    /// then, and OpenStack Swift does while several requests first make an account's bucket at once).
    private func exchange(
        _ method: HTTPMethod, key: String?, query: [(String, String)], body: ByteBuffer?, payloadHash: String?
    ) async throws -> (Int, ByteBuffer, HTTPHeaders) {
        var attempt = 1
        while true {
            let answer = try await exchangeOnce(method, key: key, query: query, body: body, payloadHash: payloadHash)
            guard answer.0 == 500 || answer.0 == 503, attempt < Self.attempts else { return answer }
            try await Task.sleep(for: .milliseconds(100 << (2 * (attempt - 1))))
            attempt += 1
        }
    }

    private func exchangeOnce(
        _ method: HTTPMethod, key: String?, query: [(String, String)], body: ByteBuffer?, payloadHash: String?
    ) async throws -> (Int, ByteBuffer, HTTPHeaders) {
        let path = "/" + configuration.bucket + (key.map { "/" + $0 } ?? "")
        let hash =
            payloadHash ?? SignatureV4.payloadHash(of: body.map { Array($0.readableBytesView) } ?? [])
        let unsigned = SignatureV4.Request(
            method: method.rawValue, path: path, query: query.map { (name: $0.0, value: $0.1) }, headers: [],
            payloadHash: hash)
        let host =
            configuration.endpoint.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true)
            .dropFirst().first.map(String.init) ?? ""
        var request = HTTPClientRequest(url: configuration.endpoint + url(path: path, query: query))
        request.method = method
        for (name, value) in signer.signedHeaders(unsigned, host: host, at: clock()) where name != "host" {
            request.headers.add(name: name, value: value)
        }
        if let body {
            request.headers.add(name: "content-length", value: String(body.readableBytes))
            request.body = .bytes(body)
        }
        let response = try await http.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: method == .HEAD ? 0 : 64 << 20)
        return (Int(response.status.code), bytes, response.headers)
    }

    /// The request target: the path and query percent-encoded as they are signed.
    private func url(path: String, query: [(String, String)]) -> String {
        let target = SignatureV4.encode(path, keepingSlash: true)
        guard !query.isEmpty else { return target }
        return target + "?"
            + query.map {
                SignatureV4.encode($0.0, keepingSlash: false) + "=" + SignatureV4.encode($0.1, keepingSlash: false)
            }.joined(separator: "&")
    }
}

/// What an S3 server refused, with its code (`NoSuchBucket`, `SignatureDoesNotMatch`, `BadDigest`, …).
public struct S3Error: Error, CustomStringConvertible, Sendable, Equatable {
    /// The HTTP status (0 for an address or configuration that was never sent).
    public let status: Int
    public let code: String
    public let message: String

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The error an answer's XML body describes.
    init(status: Int, body: ByteBuffer) {
        let document = S3XML(String(buffer: body))
        self.init(
            status: status, code: document.values(of: "Code").first ?? "HTTP\(status)",
            message: document.values(of: "Message").first ?? "the server answered \(status)")
    }

    public var description: String { "S3 \(code) (\(status)): \(message)" }
}

/// The text of the elements of an S3 answer's XML: its answers are flat enough that the values of elements by name
/// are all a client needs (keys of a listing, an error's code).
struct S3XML {
    let text: String

    init(_ text: String) { self.text = text }

    /// The text of every `<name>…</name>`, entities decoded, in order.
    func values(of name: String) -> [String] {
        var values: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(name)>") {
            guard let close = rest.range(of: "</\(name)>", range: open.upperBound..<rest.endIndex) else { break }
            values.append(Self.decoded(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return values
    }

    static func decoded(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        return
            text
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
