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
    /// For ``Code/staleDelete``: the item's current version, so the device can decide again.
    public var currentVersion: VersionID?
    /// For ``Code/chunksMissing``: the chunks to upload before committing again.
    public var missingChunks: [ChunkHash]?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: What happened.
    ///   - currentVersion: The current version, for a stale delete.
    ///   - missingChunks: The chunks a commit lacks.
    public init(_ code: Code, _ message: String, currentVersion: VersionID? = nil, missingChunks: [ChunkHash]? = nil) {
        self.code = code
        self.message = message
        self.currentVersion = currentVersion
        self.missingChunks = missingChunks
    }

    public var description: String { "ProtocolError.\(code): \(message)" }

    public var errorDescription: String? { description }
}
