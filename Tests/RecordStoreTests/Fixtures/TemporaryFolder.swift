import Foundation

/// A new folder under the system's temporary directory, removed when `body` ends.
func withTemporaryFolder<T>(_ body: (URL) throws -> T) throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "record-store-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try body(folder)
}

/// The async form of ``withTemporaryFolder(_:)``.
func withTemporaryFolder<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: (URL) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "record-store-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}
