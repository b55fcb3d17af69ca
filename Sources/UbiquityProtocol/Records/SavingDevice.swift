/// The device that saved a version, as shown to people ("saved on Ada's laptop").
public struct SavingDevice: Hashable, Sendable, Codable {
    /// The device's identity.
    public var id: DeviceID
    /// The human name the device signed in with.
    public var name: String

    /// Creates a description of a device.
    public init(id: DeviceID, name: String) {
        self.id = id
        self.name = name
    }
}
