import Foundation
import Synchronization

/// Serialises a document's file access in the order it was asked for: a ticket lock whose tickets are taken
/// synchronously (so call order is queue order, whatever thread or actor asks) and awaited asynchronously.
final class FileAccessSerializer: Sendable {
    struct Ticket: Sendable, Hashable {
        fileprivate let number: UInt64
    }

    private struct State {
        var nextTicket: UInt64 = 0
        var serving: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    /// Takes the next place in the queue.
    func reserve() -> Ticket {
        state.withLock { state in
            defer { state.nextTicket += 1 }
            return Ticket(number: state.nextTicket)
        }
    }

    /// Waits until every earlier ticket is finished, on the caller's actor: a document's turns are taken on the main
    /// actor, and waiting must not hop off it and back (two thread handoffs on every save).
    func wait(for ticket: Ticket, isolation: isolated (any Actor)? = #isolation) async {
        // The usual case, nothing queued ahead: go on without suspending.
        if state.withLock({ $0.serving == ticket.number }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.serving == ticket.number { return true }
                state.waiters[ticket.number] = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Ends `ticket`'s turn and lets the next one in.
    func finish(_ ticket: Ticket) {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            precondition(state.serving == ticket.number, "file access finished out of turn")
            state.serving += 1
            return state.waiters.removeValue(forKey: state.serving)
        }
        next?.resume()
    }
}

/// Carries a value the sender hands off for good across an isolation boundary.
///
/// `@unchecked Sendable`: used only for document snapshots (`contents(forType:)` results) and loaded contents, which
/// the sending side never touches again once handed over, so no two threads use the value at once.
struct HandOff<Value>: @unchecked Sendable {
    let value: Value
}

/// A value delivered once and awaited any number of times.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }
    private let state = Mutex(State())

    /// Delivers `value` to every waiter, now and later. Only the first delivery counts.
    func fulfil(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// The value, once delivered.
    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Value? in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
