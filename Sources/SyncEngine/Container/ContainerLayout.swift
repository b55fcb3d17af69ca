import Foundation
import UbiquityProtocol

/// Where one container lives on this machine: `<root>/<container-id>/`, with documents under `Documents/`, data
/// elsewhere, and the engine's private state in `.ubiquity/` (never synced).
///
/// | path | what |
/// | --- | --- |
/// | `.ubiquity/state.sqlite` | the local state database (WAL) |
/// | `.ubiquity/chunks/` | the chunk cache |
/// | `.ubiquity/versions/` | downloaded other versions (conflict and history), never in `Documents/` |
/// | `.ubiquity/tmp/` | downloads being assembled |
/// | `.ubiquity/engine.lock` | held by the one engine of this container on this machine |
/// | `.ubiquity/engine.sock` | the engine's socket for other processes |
public struct ContainerLayout: Hashable, Sendable {
    /// The container.
    public let container: ContainerID
    /// `<root>/<container-id>/`.
    public let folder: URL

    /// The layout of `container` under `root`.
    public init(root: URL, container: ContainerID) {
        self.container = container
        folder = root.appendingPathComponent(container.string, isDirectory: true)
        documents = folder.appendingPathComponent("Documents", isDirectory: true)
        privateFolder = folder.appendingPathComponent(ItemPath.reservedFolderName, isDirectory: true)
        temporary = privateFolder.appendingPathComponent("tmp", isDirectory: true)
    }

    /// The default root: `$XDG_DATA_HOME/ubiquity`, or `~/.local/share/ubiquity`.
    public static var defaultRoot: URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true).appendingPathComponent(".local/share")
        return base.appendingPathComponent("ubiquity", isDirectory: true)
    }

    /// `Documents/`.
    public let documents: URL
    /// `.ubiquity/`.
    public let privateFolder: URL
    /// The local state database.
    public var stateDatabase: URL { privateFolder.appendingPathComponent("state.sqlite", isDirectory: false) }
    /// The chunk cache.
    public var chunkCache: URL { privateFolder.appendingPathComponent("chunks", isDirectory: true) }
    /// Downloaded other versions.
    public var versions: URL { privateFolder.appendingPathComponent("versions", isDirectory: true) }
    /// Downloads being assembled.
    public let temporary: URL
    /// The engine's lock file.
    public var lockFile: URL { privateFolder.appendingPathComponent("engine.lock", isDirectory: false) }
    /// The engine's socket.
    public var socket: URL { privateFolder.appendingPathComponent("engine.sock", isDirectory: false) }

    /// The file URL of an item path.
    public func url(of path: ItemPath) -> URL {
        folder.appendingPathComponent(path.string, isDirectory: false)
    }

    /// Makes the container's folders (documents and private ones) when missing.
    public func create() throws {
        for folder in [documents, privateFolder, chunkCache, versions, temporary] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
    }
}
