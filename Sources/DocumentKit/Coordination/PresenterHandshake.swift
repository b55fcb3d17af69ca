import Foundation

/// The questions a coordination asks presenters before it takes its locks, and the wait for their answers.
///
/// Each presenter gets its steps (save, accommodate deletions, relinquish) one after another on its
/// `presentedItemOperationQueue`, each step sent when the previous one completed; different presenters are asked at
/// the same time. The wait ends when all have answered, one failed, the presenter timeout passed, or the
/// coordination was cancelled. A reacquirer handed back after the wait ended is run at once, so a presenter that
/// answers late is not left relinquished.
final class PresenterHandshake: @unchecked Sendable {
    // @unchecked Sendable: the mutable state below is only touched while `condition` is locked.

    /// One question for a presenter.
    enum Step: Sendable {
        case save
        case accommodateDeletion
        case accommodateSubitemDeletion(URL)
        case relinquishToReader
        case relinquishToWriter

        var name: String {
            switch self {
            case .save: "savePresentedItemChanges(completionHandler:)"
            case .accommodateDeletion: "accommodatePresentedItemDeletion(completionHandler:)"
            case .accommodateSubitemDeletion: "accommodatePresentedSubitemDeletion(at:completionHandler:)"
            case .relinquishToReader: "relinquishPresentedItem(toReader:)"
            case .relinquishToWriter: "relinquishPresentedItem(toWriter:)"
            }
        }
    }

    private struct Asked {
        var presenter: any FilePresenter
        var path: String
        var steps: [Step]
        var next = 0
        var finished = false
    }

    private let condition = NSCondition()
    private var asked: [Asked] = []
    private var failure: FileCoordinationError?
    private var isOver = false
    private var reacquirers: [(any FilePresenter, @Sendable () -> Void)] = []

    /// Sends the first step to every presenter.
    func start(_ requests: [(presenter: any FilePresenter, path: String, steps: [Step])]) {
        let count = condition.withLock {
            asked = requests.filter { !$0.steps.isEmpty }.map {
                Asked(presenter: $0.presenter, path: $0.path, steps: $0.steps)
            }
            return asked.count
        }
        for index in 0..<count { send(index) }
    }

    /// Waits for every answer until `deadline`; throws the first failure, a timeout or cancellation. On failure the
    /// reacquirers already handed back are run.
    func wait(until deadline: Date, timeout: TimeInterval, cancellation: CoordinationCancellation)
        throws(FileCoordinationError)
    {
        cancellation.onCancel { [self] in condition.withLock { condition.broadcast() } }
        condition.lock()
        var error: FileCoordinationError?
        while true {
            if let failure { error = failure; break }
            if asked.allSatisfy(\.finished) { break }
            if cancellation.isCancelled {
                error = FileCoordinationError(
                    .cancelled, "Coordinated access was cancelled while presenters were asked")
                break
            }
            if !condition.wait(until: deadline) && Date() >= deadline {
                let late = asked.first { !$0.finished }!
                error = FileCoordinationError(
                    .presenterTimedOut,
                    "Presenter \(type(of: late.presenter)) of \(late.path) did not complete "
                        + "\(late.steps[late.next].name) within \(timeout) s"
                )
                break
            }
        }
        if error != nil { isOver = true }
        condition.unlock()
        if let error {
            reacquire()
            throw error
        }
    }

    /// Runs the reacquirers presenters handed back, each on its presenter's queue, after the messages `before` holds
    /// for that presenter (presenters with messages and no reacquirer get their messages alone).
    func reacquire(after before: [ObjectIdentifier: (any FilePresenter, [@Sendable () -> Void])] = [:]) {
        let handed = condition.withLock {
            isOver = true
            defer { reacquirers = [] }
            return reacquirers
        }
        var remaining = before
        for (presenter, reacquirer) in handed {
            let first = remaining.removeValue(forKey: ObjectIdentifier(presenter))?.1 ?? []
            presenter.presentedItemOperationQueue.addOperation {
                for message in first { message() }
                reacquirer()
            }
        }
        for (presenter, messages) in remaining.values {
            presenter.presentedItemOperationQueue.addOperation { for message in messages { message() } }
        }
    }

    private func send(_ index: Int) {
        let (presenter, step, stepIndex) = condition.withLock {
            (asked[index].presenter, asked[index].steps[asked[index].next], asked[index].next)
        }
        let answered: @Sendable ((any Error)?, (@Sendable () -> Void)?) -> Void = { [self] error, reacquirer in
            answer(index, step: stepIndex, error: error, reacquirer: reacquirer)
        }
        presenter.presentedItemOperationQueue.addOperation {
            switch step {
            case .save: presenter.savePresentedItemChanges { answered($0, nil) }
            case .accommodateDeletion: presenter.accommodatePresentedItemDeletion { answered($0, nil) }
            case .accommodateSubitemDeletion(let url):
                presenter.accommodatePresentedSubitemDeletion(at: url) { answered($0, nil) }
            case .relinquishToReader: presenter.relinquishPresentedItem(toReader: { answered(nil, $0) })
            case .relinquishToWriter: presenter.relinquishPresentedItem(toWriter: { answered(nil, $0) })
            }
        }
    }

    private func answer(_ index: Int, step: Int, error: (any Error)?, reacquirer: (@Sendable () -> Void)?) {
        condition.lock()
        guard asked[index].next == step, !asked[index].finished else {
            condition.unlock()  // A second call of the same completion handler.
            return
        }
        let presenter = asked[index].presenter
        if isOver {
            condition.unlock()
            if let reacquirer { presenter.presentedItemOperationQueue.addOperation { reacquirer() } }
            return
        }
        if let reacquirer { reacquirers.append((presenter, reacquirer)) }
        if let error, failure == nil {
            failure = FileCoordinationError(
                .presenterFailed,
                "Presenter \(type(of: presenter)) of \(asked[index].path) failed "
                    + "\(asked[index].steps[step].name): \(error)"
            )
        }
        asked[index].next += 1
        let more = failure == nil && asked[index].next < asked[index].steps.count
        if !more { asked[index].finished = true }
        condition.broadcast()
        condition.unlock()
        if more { send(index) }
    }
}
