import Foundation
import RecordStore
import Synchronization
import Testing
import UbiquityTestSupport

/// Every import a coordinator posts, recorded as it comes.
final class ImportRecorder: Sendable {
    private let received: Box
    private let task: Task<Void, Never>

    private final class Box: Sendable {
        let changes = Mutex<[ObjectIDChanges]>([])
    }

    init(_ coordinator: PersistentStoreCoordinator) {
        let stream = coordinator.importedChanges()
        let received = Box()
        self.received = received
        task = Task { for await changes in stream { received.changes.withLock { $0.append(changes) } } }
    }

    deinit { task.cancel() }

    /// Waits (up to a minute) for an import that satisfies `condition`; fails without one.
    @discardableResult
    func next(where condition: @escaping @Sendable (ObjectIDChanges) -> Bool) async throws -> ObjectIDChanges {
        var found: ObjectIDChanges?
        let arrived = await eventually {
            found = received.changes.withLock { received in
                guard let index = received.firstIndex(where: condition) else { return nil }
                defer { received.removeSubrange(...index) }
                return received[index]
            }
            return found != nil
        }
        #expect(arrived, "no such import within a minute")
        return try #require(found)
    }
}
