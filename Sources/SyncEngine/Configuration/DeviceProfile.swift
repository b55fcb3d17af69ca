import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A signed-in device's settings, written by `ubiquity login`: the service, the token, and the device's name and
/// id, and where its container folders live. Kept in `$XDG_CONFIG_HOME/ubiquity/<profile>.json` (default profile `device`), readable by the owner only,
/// since the token is a secret. Several profiles let several devices live on one machine.
public struct DeviceProfile: Hashable, Sendable, Codable {
    /// The service's address.
    public var server: String
    /// The account's name.
    public var account: String
    /// The bearer token.
    public var token: String
    /// The device, as versions name it.
    public var device: SavingDevice
    /// The folder this device's container folders live in, when not the default (`nil`): what makes a device of a
    /// profile when several live on one machine.
    public var root: String?

    /// Creates a profile.
    public init(server: String, account: String, token: String, device: SavingDevice, root: String? = nil) {
        self.server = server
        self.account = account
        self.token = token
        self.device = device
        self.root = root
    }

    /// The folder this device's container folders live in: ``root``, else the default.
    public var rootURL: URL {
        root.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? ContainerLayout.defaultRoot
    }

    /// The folder profiles live in: `$XDG_CONFIG_HOME/ubiquity`, or `~/.config/ubiquity`.
    public static var folder: URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true).appendingPathComponent(".config")
        return base.appendingPathComponent("ubiquity", isDirectory: true)
    }

    /// Where profile `name` is stored.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` for a name that is not a plain file name.
    public static func url(of name: String, in folder: URL = DeviceProfile.folder) throws -> URL {
        guard !name.isEmpty, name.count <= 64, !name.contains("/"), !name.hasPrefix("."), !name.contains("\0") else {
            throw ProtocolError(.malformedRequest, "profile names are plain names such as \"laptop\"")
        }
        return folder.appendingPathComponent(name + ".json", isDirectory: false)
    }

    /// Reads profile `name`.
    /// - Throws: ``ProtocolError/Code/unauthorized`` when there is none (sign in with `ubiquity login`).
    public static func load(_ name: String = "device", from folder: URL = DeviceProfile.folder) throws -> DeviceProfile
    {
        let url = try url(of: name, in: folder)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ProtocolError(.unauthorized, "no device profile \"\(name)\"; sign in with `ubiquity login`")
        }
        return try JSONDecoder().decode(DeviceProfile.self, from: data)
    }

    /// Writes the profile as `name`, readable and writable by the owner only.
    public func save(as name: String = "device", in folder: URL = DeviceProfile.folder) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o700)
        let url = try Self.url(of: name, in: folder)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(name).json.tmp", isDirectory: false)
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: try encoder.encode(self), attributes: [.posixPermissions: 0o600])
        else {
            throw POSIXError(.EIO)
        }
        guard rename(temporary.path, url.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
