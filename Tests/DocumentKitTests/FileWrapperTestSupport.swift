import DocumentKit
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory under the system temporary directory, removed after `body`.
func withScratchDirectory<Result>(_ body: (URL) throws -> Result) throws -> Result {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("FileWrapperTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

/// The inode number of the item at `url` (not following symbolic links).
func inode(_ url: URL) throws -> UInt64 {
    var status = stat()
    guard lstat(url.path, &status) == 0 else { throw POSIXError(.ENOENT) }
    return UInt64(status.st_ino)
}

/// The permission bits of the item at `url`.
func permissions(_ url: URL) throws -> Int {
    var status = stat()
    guard lstat(url.path, &status) == 0 else { throw POSIXError(.ENOENT) }
    return Int(status.st_mode & 0o7777)
}

/// Creates `name` in `directory` with `text`.
@discardableResult
func makeFile(_ name: String, in directory: URL, _ text: String) throws -> URL {
    let url = directory.appendingPathComponent(name)
    try Data(text.utf8).write(to: url)
    return url
}

/// The text of the regular file at `url`.
func text(_ url: URL) throws -> String {
    String(decoding: try Data(contentsOf: url), as: UTF8.self)
}

/// The sorted names in `directory`.
func listing(_ directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
}

/// Overwrites the start of the file at `url` in place (same inode, no truncation).
func overwriteInPlace(_ url: URL, with text: String) throws {
    let handle = try FileHandle(forUpdating: url)
    try handle.write(contentsOf: Data(text.utf8))
    try handle.close()
}

/// Sets the modification date of every regular file under `root` an hour back, so that identities
/// recorded later are not "racy".
func ageFiles(under root: URL) throws {
    let old = Date(timeIntervalSinceNow: -3600)
    let enumerator = FileManager.default.enumerator(atPath: root.path)
    while let relative = enumerator?.nextObject() as? String {
        let url = root.appendingPathComponent(relative)
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) != nil { continue }
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: url.path)
    }
}

/// Expects `body` to throw a ``FileWrapperError`` with `code`.
func expectFileWrapperError(
    _ code: FileWrapperError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected FileWrapperError.\(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as FileWrapperError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected FileWrapperError.\(code), got \(error)", sourceLocation: sourceLocation)
    }
}
