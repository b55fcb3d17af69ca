// What an app using UbiquityKit needs besides it, without importing more: documents (DocumentKit), the ids, values
// and errors of the sync protocol (UbiquityProtocol), and the signed-in device's profile.
@_exported import DocumentKit
@_exported import UbiquityProtocol

@_exported import struct SyncEngine.DeviceProfile
