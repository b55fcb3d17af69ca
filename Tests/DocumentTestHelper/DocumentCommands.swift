import DocumentKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The `doc-…` commands of the test helper: document work in a child process that a test can kill at any instant.
///
/// `doc-save-loop <path> <flat|package|flat-in-place>` opens the document at `path` (or creates it) and saves
/// generation after generation forever, printing `saved N` on standard output after each save returns. The contents of
/// a generation are a pure function of its number (see ``GenerationContents``), so whatever a killed save leaves on
/// disk can be checked byte for byte. `flat-in-place` is a deliberately unsafe writer (truncate and rewrite the file
/// in place) that the crash tests use to show they catch torn files.
enum DocumentCommands {
    static func run(_ arguments: [String]) -> Never {
        guard arguments.count == 3, arguments[0] == "doc-save-loop", let mode = SaveLoopMode(rawValue: arguments[2])
        else {
            fail("usage: document-test-helper doc-save-loop <path> <flat|package|flat-in-place>")
        }
        let url = URL(fileURLWithPath: arguments[1])
        // The loop never ends: the process runs until the test kills it, so the task needs no handle.
        Task { @MainActor in await saveLoop(at: url, mode: mode) }
        dispatchMain()
    }

    @MainActor
    private static func saveLoop(at url: URL, mode: SaveLoopMode) async -> Never {
        let document: SaveLoopDocument =
            switch mode {
            case .flat: FlatLoopDocument(fileURL: url, writesInPlace: false)
            case .flatInPlace: FlatLoopDocument(fileURL: url, writesInPlace: true)
            case .package: PackageLoopDocument(fileURL: url)
            }
        document.autosaveDelay = .seconds(86_400)  // only the loop's own saves, never a timer's
        var operation = Document.SaveOperation.forCreating
        if FileManager.default.fileExists(atPath: url.path) {
            do { try await document.openDocument() } catch { fail("cannot open \(url.path): \(error)") }
            operation = .forOverwriting
        }
        while true {
            document.advance()
            document.updateChangeCount(.done)
            do {
                try await document.saveDocument(to: url, for: operation)
            } catch {
                fail("saving generation \(document.generation) failed: \(error)")
            }
            operation = .forOverwriting
            report("saved \(document.generation)\n")
        }
    }

    /// Writes `line` to standard output at once, unbuffered, so the parent sees it before the next save starts.
    private static func report(_ line: String) {
        var bytes = Array(line.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written < 0 { if errno == EINTR { continue } else { exit(3) } }
            bytes = bytes.dropFirst(written)
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("document-test-helper: \(message)\n".utf8))
        exit(2)
    }
}

enum SaveLoopMode: String {
    case flat
    case package
    case flatInPlace = "flat-in-place"
}

/// A document whose whole state is a generation number.
class SaveLoopDocument: Document {
    var generation = 0

    /// Moves the model to the next generation.
    func advance() { generation += 1 }
}

/// A flat file holding ``GenerationContents/member(_:generation:)`` for the tag `flat`.
final class FlatLoopDocument: SaveLoopDocument {
    nonisolated let writesInPlace: Bool

    init(fileURL url: URL, writesInPlace: Bool) {
        self.writesInPlace = writesInPlace
        super.init(fileURL: url)
    }

    override func contents(forType typeName: String) throws -> Any {
        GenerationContents.member("flat", generation: generation)
    }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let data = contents as? Data, let stamp = GenerationContents.stamp(of: data, tag: "flat") else {
            throw CocoaError(.fileReadCorruptFile)
        }
        generation = stamp
    }

    nonisolated override func writeContents(
        _ contents: Any,
        andAttributes additionalFileAttributes: [AnyHashable: Any]? = nil,
        safelyTo url: URL,
        for saveOperation: Document.SaveOperation
    ) throws {
        guard writesInPlace, let data = contents as? Data else {
            return try super.writeContents(
                contents, andAttributes: additionalFileAttributes, safelyTo: url, for: saveOperation)
        }
        // Deliberately not crash-safe: truncate, then stream the bytes to disk chunk by chunk.
        let descriptor = Glibc.open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { Glibc.close(descriptor) }
        var offset = 0
        while offset < data.count {
            let chunk = data[(data.startIndex + offset)..<(data.startIndex + min(offset + 65_536, data.count))]
            let written = chunk.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            offset += written
            fdatasync(descriptor)
        }
    }
}

/// A package of three members. `a.txt` changes every generation; `b.bin` and `c.bin` only in some (see
/// ``GenerationContents/changes(_:generation:)``), so most saves hard-link at least one unchanged member.
final class PackageLoopDocument: SaveLoopDocument {
    private var root = FileWrapper(directoryWithFileWrappers: [:])

    override func contents(forType typeName: String) throws -> Any { root }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let wrapper = contents as? FileWrapper,
            let first = wrapper.fileWrappers?[GenerationContents.packageMembers[0]]?.regularFileContents,
            let stamp = GenerationContents.stamp(of: first, tag: GenerationContents.packageMembers[0])
        else { throw CocoaError(.fileReadCorruptFile) }
        root = wrapper
        generation = stamp
    }

    override func advance() {
        super.advance()
        for name in GenerationContents.packageMembers
        where GenerationContents.changes(name, generation: generation) || root.fileWrappers?[name] == nil {
            if let old = root.fileWrappers?[name] { root.removeFileWrapper(old) }
            let contents = GenerationContents.member(name, generation: generation)
            let key = root.addRegularFile(withContents: contents, preferredFilename: name)
            precondition(key == name, "member \(name) was added as \(key)")
        }
    }
}

/// The contents of every generation, a pure function of its number. DocumentCrashSafetyTests checks what is on disk
/// against its own copy of this specification; keep the two in step.
///
/// A member is `"<tag> gen <N>\n"` followed by 1 KiB to 300 KiB of SplitMix64 bytes seeded by tag and generation.
enum GenerationContents {
    static let packageMembers = ["a.txt", "b.bin", "c.bin"]

    static func member(_ tag: String, generation: Int) -> Data {
        var state = seed(tag, generation)
        let length = 1024 + Int(next(&state) % UInt64(299 * 1024))
        var data = Data("\(tag) gen \(generation)\n".utf8)
        var body = [UInt8](repeating: 0, count: length)
        body.withUnsafeMutableBytes { bytes in
            var offset = 0
            while offset < length {
                var word = next(&state)
                for _ in 0..<min(8, length - offset) {
                    bytes[offset] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    offset += 1
                }
            }
        }
        data.append(contentsOf: body)
        return data
    }

    /// Whether member `tag` gets new contents in `generation`: always for the first member and the first generation,
    /// otherwise about one generation in three.
    static func changes(_ tag: String, generation: Int) -> Bool {
        if generation <= 1 || tag == packageMembers[0] { return true }
        var state = seed(tag, -generation)
        return next(&state) % 3 == 0
    }

    /// The generation number in the header of `data`, if it is a header for `tag`.
    static func stamp(of data: Data, tag: String) -> Int? {
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let header = String(decoding: data[data.startIndex..<newline], as: UTF8.self)
        let prefix = "\(tag) gen "
        guard header.hasPrefix(prefix) else { return nil }
        return Int(header.dropFirst(prefix.count))
    }

    private static func seed(_ tag: String, _ generation: Int) -> UInt64 {
        var state = UInt64(bitPattern: Int64(generation)) &* 0x9E37_79B9_7F4A_7C15
        for byte in tag.utf8 { state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return state
    }

    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
