import Foundation
import SyncEngine
import UbiquityProtocol

/// A file on a simulated disk.
struct SimulatedFile: Hashable {
    var inode: UInt64
    var content: String
    /// Modification and status-change times, in nanoseconds.
    var modified: Int64
    var changed: Int64
}

/// One simulated device: its disk, the engine's persisted observations, and the operations it has started.
struct SimulatedDevice {
    let index: Int
    let saving: SavingDevice
    var disk: [ItemPath: SimulatedFile] = [:]
    /// The engine's observations (what its state database holds).
    var items: [ItemID: ItemObservation] = [:]
    /// Operations started and not completed.
    var inFlight: [ItemID: SyncOperation] = [:]
    /// Whether the device reaches the service.
    var online = true

    init(index: Int) {
        self.index = index
        saving = SavingDevice(
            id: DeviceID(uuid: UUID(uuid: (UInt8(index), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))),
            name: "device\(index)")
    }

    /// The identity a scan taken at `now` reports for `file`.
    func identity(of file: SimulatedFile, at now: Int64) -> LocalFileIdentity {
        var identity = LocalFileIdentity(
            device: UInt64(index + 1), inode: file.inode, size: Int64(file.content.utf8.count),
            modified: file.modified, changed: file.changed)
        identity.capturedAt = now
        return identity
    }

    /// The path and file holding `inode`.
    func file(withInode inode: UInt64) -> (ItemPath, SimulatedFile)? {
        disk.first { $0.value.inode == inode }.map { ($0.key, $0.value) }
    }
}
