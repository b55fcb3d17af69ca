import Crypto
import Foundation
import UbiquityProtocol

extension ContainerLayout {
    /// The file in `.ubiquity/` naming the account whose data the container folder holds.
    public var accountFile: URL { privateFolder.appendingPathComponent("account", isDirectory: false) }

    /// Where the folders of accounts signed out of this machine are kept: `<root>/.accounts/<account key>/`.
    public var signedOutAccounts: URL {
        folder.deletingLastPathComponent().appendingPathComponent(".accounts", isDirectory: true)
    }

    /// An opaque, stable key for an account of a service: the same for the same account, different for any other,
    /// and saying nothing of the account's name.
    public static func accountKey(server: String, account: String) -> String {
        let digest = SHA256.hash(data: Data("\(server)\n\(account)".utf8))
        return digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// Makes the container folder the one of account `key`, as iCloud keeps each account's data apart: a folder
    /// holding another account's data is moved to ``signedOutAccounts`` (nothing is deleted), and a folder kept
    /// there for `key` from an earlier sign-in comes back; a folder naming no account is adopted. Then the folders
    /// are made when missing.
    ///
    /// A folder `register` records as set up that holds no sync now (its disk not mounted yet, say) is refused, and
    /// nothing is made: see ``ContainerFolderRegister``. A folder set up here is recorded in `register`; a register
    /// that cannot be written (a read-only configuration folder) does not stop the start, but leaves the folder
    /// unprotected.
    ///
    /// Only the container's engine (the holder of its lock, or the process about to start one) calls this.
    /// - Returns: Whether the folder changed hands (another account's data moved away or this one's brought back).
    /// - Throws: ``ProtocolError/Code/containerFolderMissing`` for a folder set up before that holds no sync now.
    @discardableResult
    public func claim(forAccount key: String, register: ContainerFolderRegister = ContainerFolderRegister()) throws
        -> Bool
    {
        guard holdsSync || !register.contains(self) else {
            throw ProtocolError(
                .containerFolderMissing,
                "\(folder.path) was set up on this machine and holds nothing of \(container) now; if its disk is "
                    + "not mounted yet, mount it")
        }
        let changed = try claimFolder(forAccount: key, register: register)
        try? register.add(self)
        return changed
    }

    private func claimFolder(forAccount key: String, register: ContainerFolderRegister) throws -> Bool {
        let manager = FileManager.default
        let owner = (try? String(contentsOf: accountFile, encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
        if owner == key {
            try create()
            return false
        }
        var changed = false
        if let owner, !owner.isEmpty, manager.fileExists(atPath: folder.path) {
            // Another account's folder: kept aside, never deleted. (A folder naming no account is adopted.) The
            // record goes first: a start cut short after the move, before this account's folder is in place, must
            // not be refused as a folder gone missing.
            try register.forget(self)
            let name = owner.count <= 64 && owner.allSatisfy(\.isHexDigit) ? owner : "unknown"
            let aside = signedOutAccounts.appendingPathComponent(name, isDirectory: true)
            try manager.createDirectory(at: aside, withIntermediateDirectories: true)
            var target = aside.appendingPathComponent(container.string, isDirectory: true)
            if manager.fileExists(atPath: target.path) {
                target = aside.appendingPathComponent("\(container.string)-\(UUID().uuidString)", isDirectory: true)
            }
            try manager.moveItem(at: folder, to: target)
            changed = true
        }
        let kept = signedOutAccounts.appendingPathComponent(key, isDirectory: true).appendingPathComponent(
            container.string, isDirectory: true)
        if !manager.fileExists(atPath: folder.path), manager.fileExists(atPath: kept.path) {
            try manager.moveItem(at: kept, to: folder)
            changed = true
        }
        try create()
        try Data(key.utf8).write(to: accountFile, options: .atomic)
        return changed
    }
}
