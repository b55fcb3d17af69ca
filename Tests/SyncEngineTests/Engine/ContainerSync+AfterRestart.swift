import Foundation
import SyncEngine

extension ContainerSync {
    /// One sync round against a service that has just been started again in this process. Connections kept alive
    /// from before the stop are left open but never answered, so the first requests on them run into the client's
    /// deadline; the engine retries such a round later, and so does this, a few times, before giving up.
    func syncOnceAfterRestart(attempts: Int = 5) async throws {
        for attempt in 1... {
            do {
                return try await syncOnce()
            } catch  where attempt < attempts {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }
}
