import DocumentKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Commands that use `FileCoordinator` from a second process. The first argument of each is the lock directory.
enum CoordinationCommands {
    /// `coord-hold-write <lock-dir> <file> <held-marker>`: takes a coordinated write of `file`, writes "partial" to
    /// it, creates `held-marker`, waits until standard input closes, writes "released" to it, and lets go.
    static func holdWrite(_ arguments: [String]) {
        let (coordinator, paths) = setUp(arguments, count: 2)
        run {
            try coordinator.coordinate(writingItemAt: URL(fileURLWithPath: paths[0])) { url in
                try Data("partial".utf8).write(to: url)
                _ = FileManager.default.createFile(atPath: paths[1], contents: Data())
                _ = FileHandle.standardInput.readDataToEndOfFile()
                try Data("released".utf8).write(to: url)
            }
        }
    }

    /// `coord-hold-read <lock-dir> <file> <held-marker>`: takes a coordinated read of `file`, creates
    /// `held-marker`, and waits until standard input closes.
    static func holdRead(_ arguments: [String]) {
        let (coordinator, paths) = setUp(arguments, count: 2)
        run {
            try coordinator.coordinate(readingItemAt: URL(fileURLWithPath: paths[0])) { _ in
                _ = FileManager.default.createFile(atPath: paths[1], contents: Data())
                _ = FileHandle.standardInput.readDataToEndOfFile()
            }
        }
    }

    /// `coord-safe-save <lock-dir> <file> <contents>`: a coordinated safe save — a temporary file in the same
    /// directory renamed over `file`.
    static func safeSave(_ arguments: [String]) {
        let (coordinator, paths) = setUp(arguments, count: 2)
        run {
            try coordinator.coordinate(writingItemAt: URL(fileURLWithPath: paths[0]), options: .forReplacing) { url in
                let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).tmp")
                try Data(paths[1].utf8).write(to: temporary)
                guard rename(temporary.path, url.path) == 0 else { throw POSIXError(.EIO) }
            }
        }
    }

    /// `coord-move <lock-dir> <from> <to>`: a coordinated move.
    static func move(_ arguments: [String]) {
        let (coordinator, paths) = setUp(arguments, count: 2)
        run {
            try coordinator.coordinate(
                writingItemAt: URL(fileURLWithPath: paths[0]), options: .forMoving,
                writingItemAt: URL(fileURLWithPath: paths[1]), options: .forReplacing
            ) { from, to in
                coordinator.item(at: from, willMoveTo: to)
                try FileManager.default.moveItem(at: from, to: to)
                coordinator.item(at: from, didMoveTo: to)
            }
        }
    }

    /// `coord-delete <lock-dir> <item>`: a coordinated deletion.
    static func delete(_ arguments: [String]) {
        let (coordinator, paths) = setUp(arguments, count: 1)
        run {
            try coordinator.coordinate(writingItemAt: URL(fileURLWithPath: paths[0]), options: .forDeleting) { url in
                try FileManager.default.removeItem(at: url)
            }
        }
    }

    private static func setUp(_ arguments: [String], count: Int) -> (FileCoordinator, [String]) {
        guard arguments.count == count + 1 else { exit(64) }
        let configuration = FileCoordinator.Configuration(
            accessTimeout: 30, presenterTimeout: 30, lockDirectory: arguments[0])
        return (FileCoordinator(filePresenter: nil, configuration: configuration), Array(arguments.dropFirst()))
    }

    private static func run(_ body: () throws -> Void) {
        do {
            try body()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(1)
        }
    }
}
