import Foundation
import UbiquityProtocol

/// One content a test saved on a device, which must survive: its hash is recorded before anything can lose it.
struct RecordedSave: Sendable, CustomStringConvertible {
    /// The device's name.
    var device: String
    /// Where it was saved.
    var path: ItemPath
    /// The SHA-256 of the bytes saved.
    var hash: ChunkHash
    /// Their length.
    var size: Int
    /// How it was written.
    var how: String
    /// The save's place in the test's order of saves (across devices).
    var sequence: Int
    /// How many times the engine had been killed when it was saved.
    var kills: Int
    /// When it was saved.
    var time = Date()

    var description: String {
        "\(device) save #\(sequence) of \(path) (\(size) bytes, \(how), after kill \(kills), at \(clock(time))): "
            + hash.string.prefix(12)
    }
}

/// What a test saved, in order, and which of one device's saves the service has not shown yet.
///
/// A device saves a path again only once its previous save of that path is on the service (as any version of the
/// item there), so every save it makes is one the engine must have been able to see: none may be lost.
struct SaveLedger: Sendable {
    private(set) var saves: [RecordedSave] = []
    /// The last save of each path not yet seen on the service, by path.
    private(set) var unconfirmed: [ItemPath: RecordedSave] = [:]
    /// The paths each device may edit.
    private(set) var editable: [String: [ItemPath]] = [:]
    /// How many new files each device made.
    private(set) var created: [String: Int] = [:]

    /// Lets `device` edit `paths`.
    mutating func allow(_ paths: [ItemPath], on device: String) {
        editable[device, default: []] += paths.filter { !(editable[device] ?? []).contains($0) }
    }

    /// The name of the next new file of `device`.
    mutating func nextNewFile(of device: String) -> Int {
        created[device, default: 0] += 1
        return created[device] ?? 0
    }

    /// The paths `device` may save now (editable, with no save waiting to be seen on the service).
    func savable(on device: String, confirming: Bool) -> [ItemPath] {
        (editable[device] ?? []).filter { !confirming || unconfirmed[$0] == nil }
    }

    /// Records a save; with `confirming`, the path waits until the service shows it.
    @discardableResult
    mutating func record(
        _ device: String, _ path: ItemPath, _ contents: Data, how: String, kills: Int, confirming: Bool
    ) throws -> RecordedSave {
        let save = RecordedSave(
            device: device, path: path, hash: try contentHash(contents), size: contents.count, how: how,
            sequence: saves.count + 1, kills: kills)
        saves.append(save)
        if confirming { unconfirmed[path] = save }
        return save
    }

    /// Marks the waiting save of `path` as seen on the service (and the path as editable by its device).
    mutating func confirm(_ path: ItemPath) {
        guard let save = unconfirmed.removeValue(forKey: path) else { return }
        allow([path], on: save.device)
    }

    /// The last save of each path by `device`.
    func lastSaves(of device: String) -> [ItemPath: RecordedSave] {
        var last: [ItemPath: RecordedSave] = [:]
        for save in saves where save.device == device { last[save.path] = save }
        return last
    }

    /// Whether any device other than `save`'s saved its path after it.
    func isSuperseded(_ save: RecordedSave) -> Bool {
        saves.contains { $0.path == save.path && $0.sequence > save.sequence && $0.device != save.device }
    }
}

/// A time of day to the millisecond, for failure messages.
func clock(_ date: Date) -> String {
    let seconds = date.timeIntervalSince1970
    let day = Int(seconds) % 86_400
    return String(
        format: "%02d:%02d:%02d.%03d", day / 3600, day / 60 % 60, day % 60,
        Int((seconds - seconds.rounded(.down)) * 1000))
}
