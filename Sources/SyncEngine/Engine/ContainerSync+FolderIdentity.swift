import DocumentKit
import Foundation
import UbiquityProtocol

extension ProtocolError.Code {
    /// The container's folder is not the one the engine opened: moved away and another made at its path, or a disk
    /// unmounted under it, leaving its empty mount point. Nothing is synced until the folder is back (or the
    /// engine is started again on the new one). Local: the service never sends it.
    public static let containerFolderReplaced = ProtocolError.Code(rawValue: "containerFolderReplaced")
}

/// A container's folder replaced under a running engine is not a user deleting everything in it. The engine keeps
/// the identity (device and inode) of the folder it opened and checks it before each round's scan and after it:
/// a scan of another folder (an empty mount point, a folder made again) would find every item gone, and the
/// engine would delete them on the service and on every device. Such a round fails instead, and until the next
/// round that scans the whole container in the right folder, no round acts on what was observed meanwhile.
extension ContainerSync {
    /// The identity of the container's folder as opened (see ``checkFolder()``).
    static func folderIdentity(of layout: ContainerLayout, on disk: any LocalDisk) throws -> FileIdentity {
        guard let identity = try disk.lookUp(folderItself(of: layout)) else { throw POSIXError(.ENOENT) }
        return identity
    }

    /// The container's folder as `<folder>/.`: a folder that is a symbolic link (to a disk mounted elsewhere, say)
    /// is looked up as the folder it leads to, whose identity changes when that disk does.
    static func folderItself(of layout: ContainerLayout) -> URL {
        URL(fileURLWithPath: layout.folder.path + "/.", isDirectory: true)
    }

    /// Checks that the container's folder is the one this sync opened.
    /// - Throws: ``ProtocolError/Code/containerFolderReplaced`` when another is at its path, or none; the disk's
    ///   error when it cannot be looked at. Either way the next round scans the whole container.
    func checkFolder() throws {
        do {
            let now = try disk.lookUp(Self.folderItself(of: layout))
            guard let now, now.device == openedFolder.device, now.inode == openedFolder.inode else {
                throw ProtocolError(
                    .containerFolderReplaced,
                    "the folder of \(container) is not the one the engine opened (moved, made again, or a disk "
                        + "unmounted under it): nothing syncs until it is back, or the engine is started again on it")
            }
        } catch {
            if !needsWholeScan {
                logger.error(
                    "the container's folder cannot be synced",
                    metadata: ["error": "\(error)", "folder": "\(layout.folder.path)"])
            }
            needsWholeScan = true
            throw error
        }
    }
}
