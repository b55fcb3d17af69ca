import Crypto
import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension ProtocolError.Code {
    /// A container folder set up on this machine is gone or holds nothing of its sync: its disk not mounted yet,
    /// or the folder deleted. Nothing is made there until it is back, or until the folder is forgotten
    /// (``ContainerFolderRegister/forget(_:)``, `ubiquity sync --afresh`) and the container set up afresh. Local:
    /// the service never sends it.
    public static let containerFolderMissing = ProtocolError.Code(rawValue: "containerFolderMissing")
}

/// The container folders set up on this machine, recorded outside them (`$XDG_CONFIG_HOME/ubiquity/containers/`), as
/// Syncthing's configuration lists its folders outside them.
///
/// A folder's own contents cannot say that it is missing. A container folder on a disk mounted at boot, found by an
/// engine started before the mount, is an empty mount point or not there at all; set up afresh, the engine would
/// make a new state database there and download the whole container onto the disk below, and once the disk was
/// mounted over it, sync nothing until started again. With the folder recorded here, the engine refuses to start
/// instead (``ProtocolError/Code/containerFolderMissing``), and starts normally once the disk is mounted.
///
/// One small file for each folder, named by a hash of its path and holding the path, so that processes setting up
/// different containers at once never write the same file.
public struct ContainerFolderRegister: Hashable, Sendable {
    /// The folder the records are kept in.
    public let folder: URL

    /// A register kept in `folder`: by default `containers/` beside the device profiles (``DeviceProfile/folder``).
    public init(folder: URL = DeviceProfile.folder.appendingPathComponent("containers", isDirectory: true)) {
        self.folder = folder
    }

    /// The record of `layout`'s folder.
    func record(of layout: ContainerLayout) -> URL {
        let path = layout.folder.standardizedFileURL.path
        let digest = SHA256.hash(data: Data(path.utf8))
        return folder.appendingPathComponent(
            digest.prefix(16).map { String(format: "%02x", $0) }.joined(), isDirectory: false)
    }

    /// Whether `layout`'s folder was set up on this machine (and not forgotten since).
    public func contains(_ layout: ContainerLayout) -> Bool {
        FileManager.default.fileExists(atPath: record(of: layout).path)
    }

    /// Records that `layout`'s folder is set up, if it is not recorded yet.
    public func add(_ layout: ContainerLayout) throws {
        let record = record(of: layout)
        guard !FileManager.default.fileExists(atPath: record.path) else { return }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((layout.folder.standardizedFileURL.path + "\n").utf8).write(to: record, options: .atomic)
    }

    /// Forgets `layout`'s folder: the next start sets the container up afresh at its path, wherever that is.
    public func forget(_ layout: ContainerLayout) throws {
        guard unlink(record(of: layout).path) == 0 || errno == ENOENT else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }
}

extension ContainerLayout {
    /// Whether the folder holds a container's sync: its account or its state database (a folder set up before
    /// accounts were recorded has only the latter).
    public var holdsSync: Bool {
        FileManager.default.fileExists(atPath: accountFile.path)
            || FileManager.default.fileExists(atPath: stateDatabase.path)
    }
}
