import Foundation
import SyncEngine
import UbiquityKit
import UbiquityProtocol

/// `kit.keyvalue`: the key-value store's round trip between two devices, each an app with its engine embedded
/// (UbiquityKit's default), against the service on loopback: from `set(_:forKey:)` on A's
/// `UbiquitousKeyValueStore` to B's store telling of the change (its AsyncSequence, as the notification): p50 and p99
/// over 200 writes.
enum KeyValueBenchmark {
    static let name = "kit.keyvalue"
    static let warmup = 10
    static let runs = 200

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { bench in
            var devices: [Ubiquity] = []
            for device in ["A", "B"] {
                let (client, saving) = try await bench.signIn(device)
                devices.append(
                    Ubiquity(
                        configuration: UbiquityConfiguration(
                            root: bench.roots.appendingPathComponent(device, isDirectory: true),
                            containers: [bench.container],
                            profile: DeviceProfile(
                                server: bench.server.base, account: "bench", token: client.token ?? "",
                                device: saving),
                            engine: .embedded, pollInterval: .seconds(3600), logger: SyncBench.logger,
                            containerFolders: ContainerFolderRegister(
                                folder: bench.roots.appendingPathComponent("register", isDirectory: true)))))
            }
            do {
                try await measure(devices[0], devices[1])
            } catch {
                for device in devices { await device.shutdown() }
                throw error
            }
            for device in devices { await device.shutdown() }
        }
    }

    static func measure(_ a: Ubiquity, _ b: Ubiquity) async throws {
        for device in [a, b] { _ = try await device.containerURL(forIdentifier: nil) }
        let storeA = UbiquitousKeyValueStore(ubiquity: a)
        let storeB = UbiquitousKeyValueStore(ubiquity: b)
        var iterator = storeB.changes().makeAsyncIterator()
        var samples: [Duration] = []
        for run in 0..<(warmup + runs) {
            let key = "key \(run % 16)"
            let start = ContinuousClock.now
            storeA.set(Int64(run), forKey: key)
            var arrived = false
            while !arrived, let change = await iterator.next() {
                arrived = change.keys.contains(key) && storeB.longLong(forKey: key) == Int64(run)
            }
            guard arrived else { throw BenchError("the change of \(key) never reached B") }
            if run >= warmup { samples.append(.now - start) }
        }
        let label = "set on A to B's change, engines embedded, \(runs) writes"
        for (percent, fraction) in [(50, 0.5), (99, 0.99)] {
            BenchOutput.figure(
                bench: name, case: label, metric: "a_to_b_p\(percent)_ms",
                value: Measure.milliseconds(Measure.percentile(samples, fraction)))
        }
        BenchOutput.figure(bench: name, case: label, metric: "target_p50_ms", value: 50)
    }
}
