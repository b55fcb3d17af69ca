import Foundation

/// The asynchronous forms: waiting happens on a thread of the coordinator's own, never on the caller's.
extension FileCoordinator {
    /// Waits for access to every item of `intents` on a background thread, then runs `accessor` on `queue` while
    /// holding it; access ends when `accessor` returns.
    ///
    /// `accessor` gets `nil` when access was granted, or the ``FileCoordinationError`` that prevented it (then the
    /// items must not be touched). Use each intent's `url` in the accessor.
    public func coordinate(
        with intents: [FileAccessIntent],
        queue: OperationQueue,
        byAccessor accessor: @escaping @Sendable ((any Error)?) -> Void
    ) {
        let thread = Thread { [self] in
            let access: CoordinatedAccess
            do {
                access = CoordinatedAccess(coordinator: self, items: try intents.map { try $0.item() })
                try access.acquire()
            } catch {
                queue.addOperation { accessor(error) }
                return
            }
            queue.addOperation { [self] in
                access.transfer()
                let mark = moveMark()
                accessor(nil)
                access.finish(moves: takeMoves(after: mark))
            }
        }
        thread.name = "DocumentKit.FileCoordinator"
        thread.start()
    }

    /// Waits for access to every item of `intents`, runs `accessor` while holding it, and returns what it returns.
    ///
    /// Waiting and `accessor` run on a thread of the coordinator's own, so the caller's executor is never blocked.
    /// Cancelling the task cancels a coordination that is still waiting.
    ///
    /// - Throws: ``FileCoordinationError`` when access cannot be had (then `accessor` does not run), or what
    ///   `accessor` throws.
    @discardableResult
    public func coordinate<T: Sendable>(
        with intents: [FileAccessIntent],
        byAccessor accessor: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let items = try intents.map { intent throws(FileCoordinationError) in try intent.item() }
        let access = CoordinatedAccess(coordinator: self, items: items)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let thread = Thread { [self] in
                    continuation.resume(
                        with: Result {
                            try access.acquire()
                            let mark = moveMark()
                            defer { access.finish(moves: takeMoves(after: mark)) }
                            return try accessor()
                        })
                }
                thread.name = "DocumentKit.FileCoordinator"
                thread.start()
            }
        } onCancel: {
            access.cancellation.cancel()
        }
    }
}
