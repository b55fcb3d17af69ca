import Foundation

/// Why a request, record or value was refused; the error every side of the wire speaks.
///
/// The server sends it as the body of an error response, `{"code": "pathTooLong", "message": "…"}`;
/// devices decode it and branch on ``code``. Decoding a wire type (``ItemPath``, ``ContainerID``, …)
/// throws this error directly, so a decoding failure carries the same stable code.
///
/// ```swift
/// do { _ = try ItemPath("../etc/passwd") } catch where error.code == .pathComponentDot { … }
/// ```
public struct ProtocolError: Error, Sendable, Hashable, Codable, CustomStringConvertible, LocalizedError {
    /// The kind of failure, a stable string on the wire.
    public var code: Code
    /// What happened, in words, naming the offending value where it helps.
    public var message: String

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: What happened.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "ProtocolError.\(code): \(message)" }

    public var errorDescription: String? { description }
}
