// What an app using UbiquityKit needs besides it, without importing more: documents (DocumentKit), the ids, values
// and errors of the sync protocol (UbiquityProtocol), the signed-in device's profile, and the record of container
// folders set up on the machine.
@_exported import DocumentKit
@_exported import UbiquityProtocol

@_exported import struct SyncEngine.ContainerFolderRegister
@_exported import struct SyncEngine.DeviceProfile
