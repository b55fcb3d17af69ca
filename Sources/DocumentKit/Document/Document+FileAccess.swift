import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Document {
    /// Runs `block` on the document's background file-access queue, after every file operation asked for before it
    /// (open, save, close, revert, other blocks) has finished, and before any asked for after it.
    ///
    /// Use it to wait for pending file operations, or to do your own file work in step with the document's.
    nonisolated func enqueueFileAccess(_ block: @escaping @Sendable () -> Void) {
        let ticket = serializer.reserve()
        let queue = fileAccessQueue
        let serializer = serializer
        // The block runs later, in its turn; the caller does not wait, as with UIDocument.
        Task.detached {
            await serializer.wait(for: ticket)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async {
                    block()
                    continuation.resume()
                }
            }
            serializer.finish(ticket)
        }
    }

    /// Runs blocking file work on the file-access queue and returns its result to the caller's actor.
    ///
    /// It runs on the caller's actor (the main actor) until it hands `work` to the queue, and the result comes back
    /// straight to that actor: two thread handoffs, not four through the generic executor.
    func onFileAccessQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            fileAccessQueue.async {
                continuation.resume(with: Result { try work() })
            }
        }
    }

    /// Runs `body` in this document's file-access turn, taken now.
    func inFileAccessTurn<T>(_ body: @MainActor () async throws -> T) async rethrows -> T {
        try await inTurn(serializer.reserve(), body)
    }

    /// Runs `body` on the main actor in `turn`. The body is main-actor isolated, so running it costs no executor
    /// hop (a plain async closure would run on the generic executor and hop back and forth around every await).
    func inTurn<T>(_ turn: FileAccessSerializer.Ticket, _ body: @MainActor () async throws -> T) async rethrows -> T {
        await serializer.wait(for: turn)
        defer { serializer.finish(turn) }
        return try await body()
    }

    /// Calls a completion handler in its place among the document's answers (the order operations were asked for).
    func answering(_ ticket: FileAccessSerializer.Ticket, _ handler: @MainActor () -> Void) async {
        await answers.wait(for: ticket)
        defer { answers.finish(ticket) }
        handler()
    }
}
