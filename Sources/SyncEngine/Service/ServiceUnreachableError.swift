import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The service could not be reached: no connection could be made to it, or the connection failed before its answer
/// came. It reads as a person would say it — "cannot reach the service at http://host:8080: connection refused" —
/// with the transport's own error kept in ``underlying``. The engine takes it as "offline" and tries again later.
public struct ServiceUnreachableError: Error, CustomStringConvertible, LocalizedError, Sendable {
    /// The service's address.
    public let url: String
    /// What went wrong, in a few words: "connection refused", "host not found", "no answer within 60 s", …
    public let reason: String
    /// The transport's error.
    public let underlying: any Error

    public var description: String { "cannot reach the service at \(url): \(reason)" }
    public var errorDescription: String? { description }

    /// `error` as the service being unreachable at `url`; `nil` for an error that is not the transport's (an answer
    /// the service gave, a cancellation), which callers pass on as it is.
    public init?(_ error: any Error, url: String) {
        guard let reason = Self.reason(for: error) else { return nil }
        self.url = url
        self.reason = reason
        self.underlying = error
    }

    /// Runs `body`, which reaches the service at `url`, throwing its transport's failures as this error.
    static func wrapping<Result>(url: String, _ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch {
            throw ServiceUnreachableError(error, url: url) ?? error
        }
    }

    /// A few words for a transport's error; `nil` for an error that is not one.
    static func reason(for error: any Error) -> String? {
        switch error {
        case is ServiceUnreachableError, is CancellationError, is DecodingError, is EncodingError:
            return nil
        case let error as NIOConnectionError:
            if let failure = error.connectionErrors.last { return reason(for: failure.error) ?? "\(failure.error)" }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "host \(error.host) not found" }
            return "no connection could be made to \(error.host):\(error.port)"
        case let error as IOError:
            return text(ofErrno: error.errnoCode)
        case let error as SocketAddressError:
            if case .unknown(let host, _) = error { return "host \(host) not found" }
            return "\(error)"
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "the connection timed out"
            case .deadlineExceeded, .readTimeout, .writeTimeout: return "no answer in time"
            case .remoteConnectionClosed: return "the connection closed before the answer"
            case .cancelled: return nil
            default: return "\(error)"
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return "the connection timed out"
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                return "the connection closed before the answer"
            default: return "\(error)"
            }
        default:
            // TLS failures (NIOSSL's errors) and anything else the transport throws: its own words.
            let type = String(reflecting: Swift.type(of: error))
            if type.hasPrefix("NIOSSL.") { return "TLS failed: \(error)" }
            return nil
        }
    }

    /// `strerror`'s words for `code`, lowercased as in a sentence ("connection refused").
    private static func text(ofErrno code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        let words = String(cString: text)
        guard let first = words.first else { return "error \(code)" }
        return first.lowercased() + words.dropFirst()
    }
}
