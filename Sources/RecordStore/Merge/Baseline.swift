import Crypto
import Foundation

/// A snapshot of one device's store — every record and link with its stamps, deleted ones too — and the logs it
/// holds: of each device, every log up to a sequence number (its ``coverage``).
///
/// Merging a baseline is the same join as applying logs, register by register, so a device may apply any baselines
/// and logs in any order and any number of times: what it holds afterwards depends only on which logs they cover.
/// A new device starts from baselines instead of every log since the first; a device may remove its own logs that
/// a baseline covers once every device it knows has applied them.
package struct Baseline: Sendable, Hashable {
    /// The device whose store it is.
    package var device: UUID
    /// Of each device, the last log of an unbroken run from the first that the snapshot holds.
    package var coverage: [UUID: UInt64]
    /// The model version of the store that wrote it.
    package var modelVersion: Int
    /// The records and links.
    package var state: ReplicaState

    package init(device: UUID, coverage: [UUID: UInt64], modelVersion: Int, state: ReplicaState) {
        self.device = device
        self.coverage = coverage
        self.modelVersion = modelVersion
        self.state = state
    }

    /// The writer's own coverage: the number of its file, `base-<sequence>.base`.
    package var sequence: UInt64 { coverage[device] ?? 0 }

    /// Whether every log this baseline holds is among those `floor` says were applied.
    package func isCovered(by floor: [UUID: UInt64]) -> Bool {
        coverage.allSatisfy { device, sequence in (floor[device] ?? 0) >= sequence }
    }
}

extension MergeTarget {
    /// Merges a baseline's records and links, register by register.
    /// - Returns: The objects inserted, updated and deleted as an app sees them.
    /// - Throws: ``RecordStoreError/Code/newerModel`` for a baseline of a newer model; errors of the target.
    @discardableResult
    package mutating func merge(_ baseline: Baseline, model: ManagedObjectModel) throws -> MergeChanges {
        guard baseline.modelVersion <= model.version else {
            throw RecordStoreError(
                .newerModel,
                "the baseline of \(baseline.device) was written by model \(baseline.modelVersion), newer than this "
                    + "app's \(model.version)")
        }
        // Checked whole before anything is merged, as a log is.
        for (id, record) in baseline.state.objects {
            try model.check(
                ObjectChange(id: id, existence: record.existence?.value, values: record.values.mapValues(\.value)))
        }
        for key in baseline.state.links.keys {
            try model.check(ObjectChange(id: key.source, linksAdded: [ObjectChange.Link(key.relationship, key.target)]))
        }
        var liveness: [ManagedObjectID: Liveness] = [:]
        var updated: Set<ManagedObjectID> = []
        for (id, incoming) in baseline.state.objects {
            let before = try record(id)
            var merged = before ?? ObjectRecord()
            if let existence = incoming.existence { merged.existence.merge(existence) }
            for (property, register) in incoming.values {
                let old = merged.value(property)
                if merged.values[property].merge(register) {
                    updated.insert(id)
                    if case .object(let target) = old { updated.insert(target) }
                    if case .object(let target) = merged.value(property) { updated.insert(target) }
                }
            }
            guard merged != before else { continue }
            try setRecord(merged, for: id)
            liveness[id] = Liveness(before: before?.isLive ?? false, now: merged.isLive)
        }
        for (key, incoming) in baseline.state.links {
            var register = try link(key)
            let before = register
            register.merge(incoming)
            guard register != before, let register else { continue }
            try setLink(register, for: key)
            if (before?.value ?? false) != register.value {
                updated.insert(key.source)
                updated.insert(key.target)
            }
        }
        return try changes(liveness: liveness, updated: updated)
    }
}

/// The file form of a baseline.
///
/// ```
/// "UBQRBAS1"  device (16 bytes)  model version (varint)
/// coverage: count, then (device (16), sequence (u64))
/// names: count, then each as length + UTF-8
/// records: count, then each:
///   entity (name index)  uuid (16)  existence (0 none, 1 inserted, 2 deleted)  [stamp if any]
///   values: count, then (property index, stamp, tagged value)
/// links: count, then (entity index, uuid, relationship index, entity index, uuid, 1 present | 0 removed, stamp)
/// SHA-256 of everything before (32 bytes)
/// ```
/// A stamp is its time (u64) and device (16 bytes). As for logs, the digest is checked first, then every count and
/// length against what is left.
extension Baseline {
    package static let magic = Array("UBQRBAS1".utf8)

    /// The baseline's bytes.
    package func encoded() -> [UInt8] {
        var names: [String] = []
        var indexes: [String: Int] = [:]
        func index(_ name: String) -> Int {
            if let index = indexes[name] { return index }
            indexes[name] = names.count
            names.append(name)
            return names.count - 1
        }
        func writeStamp(_ stamp: Stamp, _ writer: inout LogWriter) {
            writer.writeFixed(stamp.time)
            writer.writeUUID(stamp.device)
        }
        func writeObject(_ id: ManagedObjectID, _ writer: inout LogWriter) {
            writer.writeVarint(index(id.entityName))
            writer.writeUUID(id.uuid)
        }
        var body = LogWriter(capacity: 64 + state.objects.count * 96 + state.links.count * 64)
        let objects = state.objects.sorted { $0.key < $1.key }
        body.writeVarint(objects.count)
        for (id, record) in objects {
            writeObject(id, &body)
            switch record.existence {
            case nil: body.writeByte(0)
            case let existence?:
                body.writeByte(existence.value ? 1 : 2)
                writeStamp(existence.stamp, &body)
            }
            body.writeVarint(record.values.count)
            for (property, register) in record.values {
                body.writeVarint(index(property))
                writeStamp(register.stamp, &body)
                body.writeValue(register.value) { writer, id in writeObject(id, &writer) }
            }
        }
        let links = state.links.sorted { $0.key < $1.key }
        body.writeVarint(links.count)
        for (key, register) in links {
            writeObject(key.source, &body)
            body.writeVarint(index(key.relationship))
            writeObject(key.target, &body)
            body.writeByte(register.value ? 1 : 0)
            writeStamp(register.stamp, &body)
        }
        var writer = LogWriter(capacity: body.bytes.count + 256)
        writer.writeBytes(Self.magic)
        writer.writeUUID(device)
        writer.writeVarint(modelVersion)
        writer.writeVarint(coverage.count)
        for (device, sequence) in coverage.sorted(by: { $0.key.isOrdered(before: $1.key) }) {
            writer.writeUUID(device)
            writer.writeFixed(sequence)
        }
        writer.writeVarint(names.count)
        for name in names { writer.writeString(name) }
        writer.writeBytes(body.bytes)
        writer.writeBytes(SHA256.hash(data: writer.bytes))
        return writer.bytes
    }

    /// Reads a baseline.
    /// - Throws: ``RecordStoreError/Code/corruptLog`` for bytes that are not a whole, unaltered baseline.
    package init(decoding bytes: [UInt8]) throws(RecordStoreError) {
        let digestSize = SHA256.byteCount
        guard bytes.count >= Self.magic.count + digestSize, bytes.starts(with: Self.magic) else {
            throw LogReader.corrupt("not a baseline")
        }
        let end = bytes.count - digestSize
        guard SHA256.hash(data: bytes[..<end]).elementsEqual(bytes[end...]) else {
            throw LogReader.corrupt("the baseline's digest does not match its contents")
        }
        var reader = LogReader(bytes, end: end)
        _ = try reader.readBytes(Self.magic.count)
        let device = try reader.readUUID()
        let version = try reader.readVarint()
        guard version >= 1, version <= UInt64(Int32.max) else {
            throw LogReader.corrupt("a model version of \(version)")
        }
        var coverage: [UUID: UInt64] = [:]
        for _ in 0..<(try reader.readCount(minimumSize: 24)) {
            let covered = try reader.readUUID()
            guard coverage.updateValue(try reader.readFixed(), forKey: covered) == nil else {
                throw LogReader.corrupt("a device covered twice")
            }
        }
        let names = try reader.readNames()
        func name(_ reader: inout LogReader) throws(RecordStoreError) -> String { try reader.readName(in: names) }
        func object(_ reader: inout LogReader) throws(RecordStoreError) -> ManagedObjectID {
            try reader.readObject(in: names)
        }
        func stamp(_ reader: inout LogReader) throws(RecordStoreError) -> Stamp {
            let time = try reader.readFixed()
            return Stamp(time: time, device: try reader.readUUID())
        }
        var state = ReplicaState()
        for _ in 0..<(try reader.readCount(minimumSize: 19)) {
            let id = try object(&reader)
            var record = ObjectRecord()
            switch try reader.readByte() {
            case 0: break
            case let kind where kind <= 2: record.existence = Register(kind == 1, stamp: try stamp(&reader))
            default: throw LogReader.corrupt("an existence that is neither inserted nor deleted")
            }
            for _ in 0..<(try reader.readCount(minimumSize: 26)) {
                let property = try name(&reader)
                let when = try stamp(&reader)
                let value = try reader.readValue(readObject: object)
                guard record.values.updateValue(Register(value, stamp: when), forKey: property) == nil else {
                    throw LogReader.corrupt("\(id) holds \(property) twice")
                }
            }
            guard state.objects.updateValue(record, forKey: id) == nil else {
                throw LogReader.corrupt("\(id) is in the baseline twice")
            }
        }
        for _ in 0..<(try reader.readCount(minimumSize: 60)) {
            let source = try object(&reader)
            let relationship = try name(&reader)
            let target = try object(&reader)
            let present = try reader.readByte()
            guard present <= 1 else { throw LogReader.corrupt("a link that is neither present nor removed") }
            let key = LinkKey(source: source, relationship: relationship, target: target)
            guard state.links.updateValue(Register(present == 1, stamp: try stamp(&reader)), forKey: key) == nil else {
                throw LogReader.corrupt("a link in the baseline twice")
            }
        }
        guard reader.isAtEnd else { throw LogReader.corrupt("bytes after the last link") }
        self.init(device: device, coverage: coverage, modelVersion: Int(version), state: state)
    }
}
