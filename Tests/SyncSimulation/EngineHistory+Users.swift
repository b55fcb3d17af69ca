import Foundation
import SyncEngine
import UbiquityProtocol

extension EngineHistory {
    /// A user changes a device's disk: creates a file or a folder, edits a file in place (the same inode and size,
    /// so an edit in the same clock tick keeps the identity), saves safely (a temporary file renamed over), renames
    /// or moves a file, or deletes one.
    func userAction(on device: Device) throws {
        let documents = device.layout.documents.path
        let files = device.volume.files(below: documents).keys.filter { !$0.hasPrefix(".") && !$0.contains("/.") }
            .sorted()
        let choice = Int.random(in: 0..<100, using: &random)
        if files.isEmpty || choice < 22 {
            let folder = Self.folders.randomElement(using: &random)!
            let path = folder + "/" + Self.names.randomElement(using: &random)!
            let url = device.layout.folder.appendingPathComponent(path)
            guard device.volume.identity(at: url.path) == nil else { return }
            try makeFolder(url.deletingLastPathComponent(), on: device)
            try save(newContent(device), at: url, on: device, safely: false, by: "user creates")
            return
        }
        let relative = files.randomElement(using: &random)!
        let url = device.layout.documents.appendingPathComponent(relative)
        switch choice {
        case 22..<55:
            try save(newContent(device), at: url, on: device, safely: false, by: "user edits")
        case 55..<75:
            try save(newContent(device), at: url, on: device, safely: true, by: "user saves safely")
        case 75..<88:
            let folder = Self.folders.randomElement(using: &random)!
            let target = device.layout.folder.appendingPathComponent(
                folder + "/" + Self.names.randomElement(using: &random)!)
            guard device.volume.identity(at: target.path) == nil else { return }
            try makeFolder(target.deletingLastPathComponent(), on: device)
            try device.volume.rename(url.path, to: target.path, replacing: false)
            touch(url, target, on: device)
            log("device\(device.index) user moves Documents/\(relative) to \(relativePath(target, on: device))")
        default:
            if let file = device.volume.file(at: url.path) {
                liveSaves[SaveKey(device: device.index, serial: file.serial)] = nil
            }
            try device.volume.remove(url.path)
            touch(url, on: device)
            log("device\(device.index) user deletes Documents/\(relative)")
        }
    }

    /// An app's save landing on one of the device's files, between two of its engine's jobs (`between`) or as a
    /// step of its own.
    func userSave(on device: Device, between: Bool) throws {
        let files = device.volume.files(below: device.layout.documents.path).keys.filter { !$0.contains(".tmp") }
            .sorted()
        guard let relative = files.randomElement(using: &random) else { return }
        let url = device.layout.documents.appendingPathComponent(relative)
        try save(
            newContent(device), at: url, on: device, safely: random.chance(0.3),
            by: between ? "app saves while the engine works on" : "app saves")
    }

    /// Saves `bytes` at `url`, in place or safely, and remembers them as a save that must not be lost.
    func save(_ bytes: [UInt8], at url: URL, on device: Device, safely: Bool, by who: String) throws {
        let serial: UInt64
        if safely {
            if let old = device.volume.file(at: url.path) {
                liveSaves[SaveKey(device: device.index, serial: old.serial)] = nil
            }
            serial = try device.volume.saveSafely(bytes, at: url.path)
        } else {
            serial = try device.volume.write(bytes, at: url.path)
        }
        liveSaves[SaveKey(device: device.index, serial: serial)] = bytes
        touch(url, on: device)
        log("device\(device.index) \(who) \(relativePath(url, on: device)) = \(String(decoding: bytes, as: UTF8.self))")
    }

    /// Makes the folder at `url` (and those above it) if it is not there; the outermost folder made is a path the
    /// watcher names, as a real one does.
    func makeFolder(_ url: URL, on device: Device) throws {
        guard device.volume.identity(at: url.path) == nil else { return }
        var outermost = url
        while device.volume.identity(at: outermost.deletingLastPathComponent().path) == nil {
            outermost = outermost.deletingLastPathComponent()
        }
        try device.volume.makeDirectory(url.path)
        touch(outermost, on: device)
    }

    func touch(_ urls: URL..., on device: Device) {
        for url in urls { device.touched.insert(relativePath(url, on: device)) }
    }

    func relativePath(_ url: URL, on device: Device) -> String {
        String(url.path.dropFirst(device.layout.folder.path.count + 1))
    }

    /// A new content, always the same length in a history (so edits in place keep the size): a few bytes, or with
    /// small chunks a line of them whose tail every content shares (so a new version's manifest is mostly its
    /// base's).
    func newContent(_ device: Device) -> [UInt8] {
        saveCounter += 1
        let text = "d\(device.index)s\(saveCounter)"
        let length = usesSmallChunks ? 96 : 12
        let tail = usesSmallChunks ? " the shared tail of every line, cut into a few chunks" : ""
        let padding = String(repeating: ".", count: max(0, length - text.count - tail.count))
        return Array((text + padding + tail).utf8)
    }
}
