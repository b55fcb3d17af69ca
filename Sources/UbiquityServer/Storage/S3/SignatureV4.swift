import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// AWS Signature Version 4: how a request to S3 (or any AWS-style service) proves who sends it.
///
/// A pure value: given a request's method, path, query, headers and payload hash, and the time, it returns the
/// headers that sign it. Each step is exposed (``canonicalRequest(_:)``, ``stringToSign(_:at:)``) so that a signing
/// mistake can be found line by line: a service answers every one of them with the same `SignatureDoesNotMatch`.
/// Checked against AWS's published test-suite vectors and the S3 documentation's examples.
public struct SignatureV4: Sendable {
    /// An access key and its secret.
    public struct Credentials: Sendable, Equatable {
        public var accessKey: String
        public var secretKey: String
        public init(accessKey: String, secretKey: String) {
            self.accessKey = accessKey
            self.secretKey = secretKey
        }
    }

    /// What is signed of a request.
    public struct Request: Sendable, Equatable {
        public var method: String
        /// The path as the resource is named, not percent-encoded (`/bucket/a key`): it is encoded here.
        public var path: String
        /// The query's names and values, not percent-encoded, in any order.
        public var query: [(name: String, value: String)]
        /// The headers to sign, names in any case; `host` among them.
        public var headers: [(name: String, value: String)]
        /// The payload's SHA-256 in lowercase hex, or `UNSIGNED-PAYLOAD`.
        public var payloadHash: String

        public init(
            method: String, path: String, query: [(name: String, value: String)] = [],
            headers: [(name: String, value: String)], payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }

        public static func == (lhs: Request, rhs: Request) -> Bool {
            lhs.method == rhs.method && lhs.path == rhs.path && lhs.payloadHash == rhs.payloadHash
                && lhs.query.elementsEqual(rhs.query) { $0 == $1 }
                && lhs.headers.elementsEqual(rhs.headers) { $0 == $1 }
        }
    }

    public let credentials: Credentials
    public let region: String
    public let service: String
    /// Whether the path is normalized before signing (dot segments and repeated slashes removed), as AWS services
    /// do in general; S3 signs the path as sent, and a key may hold `//` or `..`.
    public let normalizesPath: Bool

    /// A signer for `service` in `region`; for S3 (`service` `"s3"`) the path is not normalized.
    public init(credentials: Credentials, region: String, service: String, normalizesPath: Bool? = nil) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.normalizesPath = normalizesPath ?? (service != "s3")
    }

    /// The SHA-256 of an empty payload, in hex.
    public static let emptyPayloadHash = payloadHash(of: [])

    /// The SHA-256 of `payload` in lowercase hex, as ``Request/payloadHash`` and `x-amz-content-sha256` carry it.
    public static func payloadHash(of payload: some DataProtocol) -> String { hex(SHA256.hash(data: payload)) }

    /// The canonical request and the list of signed headers.
    public func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        var headers: [String: [String]] = [:]
        for (name, value) in request.headers {
            headers[name.lowercased(), default: []].append(Self.trimmed(value))
        }
        let names = headers.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let canonicalHeaders = names.map { "\($0):\(headers[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let query = request.query
            .map { (Self.encode($0.name, keepingSlash: false), Self.encode($0.value, keepingSlash: false)) }
            .sorted {
                $0.0 == $1.0
                    ? $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8)
            }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
        let path = normalizesPath ? Self.normalized(request.path) : request.path
        let text = [
            request.method, Self.encode(path.isEmpty ? "/" : path, keepingSlash: true), query, canonicalHeaders,
            signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The credential scope of a request signed at `date`: `20150830/us-east-1/service/aws4_request`.
    public func scope(at date: Date) -> String {
        "\(Self.timestamp(date).prefix(8))/\(region)/\(service)/aws4_request"
    }

    /// The string to sign for `request` at `date`.
    public func stringToSign(_ request: Request, at date: Date) -> String {
        let canonical = canonicalRequest(request).text
        return [
            "AWS4-HMAC-SHA256", Self.timestamp(date), scope(at: date),
            Self.hex(SHA256.hash(data: Array(canonical.utf8))),
        ].joined(separator: "\n")
    }

    /// The request's signature at `date`, in hex.
    public func signature(_ request: Request, at date: Date) -> String {
        var key = SymmetricKey(data: Array("AWS4\(credentials.secretKey)".utf8))
        for part in [String(Self.timestamp(date).prefix(8)), region, service, "aws4_request"] {
            key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        let code = HMAC<SHA256>.authenticationCode(for: Array(stringToSign(request, at: date).utf8), using: key)
        return Self.hex(code)
    }

    /// The `Authorization` header's value for `request` at `date`; `request`'s headers must include the
    /// `x-amz-date` of ``timestamp(_:)``.
    public func authorization(_ request: Request, at date: Date) -> String {
        "AWS4-HMAC-SHA256 Credential=\(credentials.accessKey)/\(scope(at: date)), "
            + "SignedHeaders=\(canonicalRequest(request).signedHeaders), Signature=\(signature(request, at: date))"
    }

    /// The headers to send with a request to `host` at `date`: `request`'s own, `host`, `x-amz-date`,
    /// `x-amz-content-sha256` (which S3 requires) and `authorization`.
    public func signedHeaders(_ request: Request, host: String, at date: Date) -> [(name: String, value: String)] {
        var signed = request
        let present = Set(request.headers.map { $0.name.lowercased() })
        if !present.contains("host") { signed.headers.append(("host", host)) }
        if !present.contains("x-amz-date") { signed.headers.append(("x-amz-date", Self.timestamp(date))) }
        if !present.contains("x-amz-content-sha256") {
            signed.headers.append(("x-amz-content-sha256", request.payloadHash))
        }
        return signed.headers + [("authorization", authorization(signed, at: date))]
    }

    // MARK: Pieces

    /// `date` as `20150830T123600Z`, in UTC.
    public static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    /// `text` percent-encoded as SigV4 wants: every byte but the unreserved ones (`A–Z a–z 0–9 - . _ ~`, and `/`
    /// when `keepingSlash`), in uppercase hex.
    static func encode(_ text: String, keepingSlash: Bool) -> String {
        var encoded: [UInt8] = []
        encoded.reserveCapacity(text.utf8.count)
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.append(byte)
            case UInt8(ascii: "/") where keepingSlash:
                encoded.append(byte)
            default:
                encoded += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// A header value with its ends trimmed and each run of spaces inside made one.
    static func trimmed(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// `path` with empty and `.` segments removed and `..` taking the one before (RFC 3986), keeping a trailing slash.
    static func normalized(_ path: String) -> String {
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        let joined = "/" + segments.joined(separator: "/")
        return path.hasSuffix("/") && !segments.isEmpty ? joined + "/" : joined
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]] }
        return String(decoding: text, as: UTF8.self)
    }
}
